// poisson (x·log rate), exponential (−rate·x) and bernoulli (x ? log p : log(1−p)) on CUDA:
// terms linear in one coefficient per (component, dim), statistics Σ r x. Poisson's −log x!
// is per row and component-independent: computed once per row into row_offset.
// Same operation order as kernels/cpu/families/discrete.hpp.
#include "kernels/cuda/device.cuh"

namespace mixle::kernels::cuda {
namespace {

template <class T>
struct RateTerm {
  __device__ T operator()(const PartView<T>& part, int k, const T* x, T l) const {
    const int D = part.dims;
    const T* c = part.coef + static_cast<std::int64_t>(k) * part.coef_stride;
    for (int d = 0; d < D; ++d) {
      if (part.kind == PartKind::bernoulli) {
        l += x[d] > T(0.5) ? c[d] : c[D + d];
      } else {
        const T coef = part.kind == PartKind::exponential ? -c[d] : c[d];
        l += coef * x[d];
      }
    }
    return l;
  }
};

template <class T>
struct RateMoment {
  int d;
  __device__ RateMoment(const PartView<T>&, int, int j) : d(j) {}
  __device__ T operator()(const T* x, T r) const { return r * x[d]; }
};

template <class T>
__global__ void poisson_row_offset_kernel(PartView<T> part, const T* __restrict__ x, int ld, T* __restrict__ row_offset,
                                          std::int64_t rows) {
  const std::int64_t n = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (n >= rows) return;
  const T* xr = x + n * ld + part.col_begin;
  T off = row_offset[n];
  for (int d = 0; d < part.dims; ++d) off += static_cast<T>(neg_log_factorial(static_cast<double>(xr[d])));
  row_offset[n] = off;
}

}  // namespace

template <class T>
void launch_rate_log_density(const PartView<T>& part, const ChunkArgs<T>& c, cudaStream_t s) {
  launch_log_density(part, c, RateTerm<T>{}, s);
}

template <class T>
void launch_rate_accumulate(const PartView<T>& part, const ChunkArgs<T>& c, const SlotPlan& plan, cudaStream_t s) {
  launch_accumulate<T, RateMoment<T>>(part, c, plan, s);
}

template <class T>
void launch_poisson_row_offset(const PartView<T>& part, const ChunkArgs<T>& c, cudaStream_t s) {
  if (c.rows == 0) return;
  launch_kernel<poisson_row_offset_kernel<T>>(ceil_div(c.rows, 256), 256, 0, s, part, c.x, c.ld, c.row_offset, c.rows);
  MIXLE_CUDA_CHECK_LAUNCH();
}

#define MIXLE_INSTANTIATE(T)                                                                                       \
  template void launch_rate_log_density<T>(const PartView<T>&, const ChunkArgs<T>&, cudaStream_t);                 \
  template void launch_rate_accumulate<T>(const PartView<T>&, const ChunkArgs<T>&, const SlotPlan&, cudaStream_t); \
  template void launch_poisson_row_offset<T>(const PartView<T>&, const ChunkArgs<T>&, cudaStream_t);
MIXLE_INSTANTIATE(float)
MIXLE_INSTANTIATE(double)
#undef MIXLE_INSTANTIATE

}  // namespace mixle::kernels::cuda
