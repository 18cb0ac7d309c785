// gaussian_full on CUDA: −½‖P (x − mean)‖² added to L (P lower triangular, P = C⁻¹ where
// cov = C Cᵀ), and the shifted moments Σ r (x − s), Σ r (x − s)(x − s)ᵀ. Same operation order
// as kernels/cpu/families/gaussian_full.hpp.
#include "kernels/cuda/device.cuh"

namespace mixle::kernels::cuda {
namespace {

constexpr int kFullRows = 128;

/// One thread per row, one component per blockIdx.y: the warp shares P_k (broadcast reads),
/// which is the larger operand (D² against D). (x − mean) is recomputed per use rather than
/// kept in D registers, as D reaches 256.
template <class T>
__global__ void full_log_density_kernel(PartView<T> part, const T* __restrict__ x, int ld,
                                        T* __restrict__ logp, int K, std::int64_t rows) {
  const std::int64_t n = static_cast<std::int64_t>(blockIdx.x) * kFullRows + threadIdx.x;
  const int k = static_cast<int>(blockIdx.y);
  if (n >= rows) return;
  const int D = part.dims;
  const T* xr = x + n * ld + part.col_begin;
  const T* mean = part.coef + static_cast<std::int64_t>(k) * part.coef_stride;
  const T* P = mean + D;
  T l = logp[n * K + k];
  for (int i = 0; i < D; ++i) {
    const T* Pi = P + static_cast<std::int64_t>(i) * D;
    T y = T(0);
    for (int j = 0; j <= i; ++j) y += Pi[j] * (xr[j] - mean[j]);
    l -= T(0.5) * y * y;
  }
  logp[n * K + k] = l;
}

/// Entry j < D: Σ r t_j; entry D + i·D + j: Σ r t_i t_j, t = x − s.
template <class T>
struct FullMoment {
  int i, j;
  bool second;
  T si, sj;
  __device__ FullMoment(const PartView<T>& part, int k, int e) {
    const int D = part.dims;
    second = e >= D;
    const int idx = second ? e - D : e;
    i = second ? idx / D : idx;
    j = second ? idx % D : idx;
    const T* s = part.shift + static_cast<std::int64_t>(k) * D;
    si = s[i];
    sj = s[j];
  }
  __device__ T operator()(const T* x, T r) const {
    if (!second) return r * (x[i] - si);
    return (r * (x[i] - si)) * (x[j] - sj);
  }
};

}  // namespace

template <class T>
void launch_gaussian_full_log_density(const PartView<T>& part, const ChunkArgs<T>& c, cudaStream_t s) {
  if (c.rows == 0) return;
  const dim3 grid(ceil_div(c.rows, kFullRows), static_cast<unsigned>(c.components));
  full_log_density_kernel<T><<<grid, kFullRows, 0, s>>>(part, c.x, c.ld, c.resp, c.components, c.rows);
  MIXLE_CUDA_CHECK_LAUNCH();
}

template <class T>
void launch_gaussian_full_accumulate(const PartView<T>& part, const ChunkArgs<T>& c,
                                     const SlotPlan& plan, cudaStream_t s) {
  launch_accumulate<T, FullMoment<T>>(part, c, plan, s);
}

template void launch_gaussian_full_log_density<float>(const PartView<float>&, const ChunkArgs<float>&, cudaStream_t);
template void launch_gaussian_full_log_density<double>(const PartView<double>&, const ChunkArgs<double>&, cudaStream_t);
template void launch_gaussian_full_accumulate<float>(const PartView<float>&, const ChunkArgs<float>&, const SlotPlan&, cudaStream_t);
template void launch_gaussian_full_accumulate<double>(const PartView<double>&, const ChunkArgs<double>&, const SlotPlan&, cudaStream_t);

}  // namespace mixle::kernels::cuda
