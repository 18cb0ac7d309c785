// gamma and lognormal on CUDA: families of positive reals whose terms read log x. Same operation
// order as kernels/cpu/families/positive.hpp; log x is taken where it is read (one SFU-backed
// logarithm per (row, component, dim) in the log-density, per (row, entry) in the statistics).
//   gamma      adds (α−1)·log x − β·x; statistics Σ r x [D], Σ r log x [D]
//   lognormal  gaussian_diag's term and shifted moments of log x (device.cuh's NormalTerm and
//              ShiftedMoment with LogFeature); −Σ log x per row, computed once into row_offset
#include "kernels/cuda/device.cuh"

namespace mixle::kernels::cuda {
namespace {

template <class T>
struct GammaTerm {
  __device__ T operator()(const PartView<T>& part, int k, const T* x, T l) const {
    const int D = part.dims;
    const T* c = part.coef + static_cast<std::int64_t>(k) * part.coef_stride;
    for (int d = 0; d < D; ++d) l = l + c[d] * log_of(x[d]) - c[D + d] * x[d];
    return l;
  }
};

/// Entry j < D: Σ r x_j; entry D + d: Σ r log x_d.
template <class T>
struct GammaMoment {
  int d;
  bool log_moment;
  __device__ GammaMoment(const PartView<T>& part, int, int j)
      : d(j < part.dims ? j : j - part.dims), log_moment(j >= part.dims) {}
  __device__ T operator()(const T* x, T r) const { return r * (log_moment ? log_of(x[d]) : x[d]); }
};

template <class T>
__global__ void lognormal_row_offset_kernel(PartView<T> part, const T* __restrict__ x, int ld,
                                            T* __restrict__ row_offset, std::int64_t rows) {
  const std::int64_t n = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (n >= rows) return;
  const T* xr = x + n * ld + part.col_begin;
  T off = row_offset[n];
  for (int d = 0; d < part.dims; ++d) off -= log_of(xr[d]);
  row_offset[n] = off;
}

}  // namespace

template <class T>
void launch_gamma_log_density(const PartView<T>& part, const ChunkArgs<T>& c, cudaStream_t s) {
  launch_log_density(part, c, GammaTerm<T>{}, s);
}

template <class T>
void launch_gamma_accumulate(const PartView<T>& part, const ChunkArgs<T>& c, const SlotPlan& plan, cudaStream_t s) {
  launch_accumulate<T, GammaMoment<T>>(part, c, plan, s);
}

template <class T>
void launch_lognormal_log_density(const PartView<T>& part, const ChunkArgs<T>& c, cudaStream_t s) {
  launch_log_density(part, c, NormalTerm<T, LogFeature>{}, s);
}

template <class T>
void launch_lognormal_accumulate(const PartView<T>& part, const ChunkArgs<T>& c, const SlotPlan& plan, cudaStream_t s) {
  launch_accumulate<T, ShiftedMoment<T, LogFeature>>(part, c, plan, s);
}

template <class T>
void launch_lognormal_row_offset(const PartView<T>& part, const ChunkArgs<T>& c, cudaStream_t s) {
  if (c.rows == 0) return;
  launch_kernel<lognormal_row_offset_kernel<T>>(ceil_div(c.rows, 256), 256, 0, s, part, c.x, c.ld, c.row_offset,
                                                c.rows);
  MIXLE_CUDA_CHECK_LAUNCH();
}

#define MIXLE_INSTANTIATE(T)                                                                                        \
  template void launch_gamma_log_density<T>(const PartView<T>&, const ChunkArgs<T>&, cudaStream_t);                 \
  template void launch_gamma_accumulate<T>(const PartView<T>&, const ChunkArgs<T>&, const SlotPlan&, cudaStream_t); \
  template void launch_lognormal_log_density<T>(const PartView<T>&, const ChunkArgs<T>&, cudaStream_t);             \
  template void launch_lognormal_accumulate<T>(const PartView<T>&, const ChunkArgs<T>&, const SlotPlan&,            \
                                               cudaStream_t);                                                       \
  template void launch_lognormal_row_offset<T>(const PartView<T>&, const ChunkArgs<T>&, cudaStream_t);
MIXLE_INSTANTIATE(float)
MIXLE_INSTANTIATE(double)
#undef MIXLE_INSTANTIATE

}  // namespace mixle::kernels::cuda
