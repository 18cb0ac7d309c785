// Normalisation against an external per-row normaliser on CUDA (PassMode::normalised; the CPU
// kernels' normalise_external in kernels/cpu/pass.cpp). The chunk's log-densities L[n,k]
// (log weight + log p(x|k), the stacked kernels of the accumulate pass) become
//
//   r[n,k] = exp_nonpositive(min(L[n,k] − N_n, 0)),   N_n = (T) log_norm[n]
//
// where log_norm is the per-row log-likelihood under a larger mixture (component sharding:
// the whole model while this one holds one shard), so L ≤ N up to rounding and the clamp keeps
// r ≤ 1. The normaliser stays float64 on the device and is cast to the compute precision T in
// the kernel, then the difference is taken in T — the CPU's exact arithmetic (cast, subtract,
// clamp, exp_nonpositive), so both kernel sets see the same r up to the log-densities' own
// differences. Rows whose float64 normaliser is not finite (±inf, NaN), and NaN differences,
// get r = 0 for every component: they fold nothing. No reduction across components is needed,
// so one thread per (row, component) element, on the log-density kernels' grid; nothing is
// counted or listed (the caller owns bad-row reporting) and no atomics are used.
#include "kernels/cuda/device.cuh"

namespace mixle::kernels::cuda {
namespace {

template <class T>
__global__ void normalise_external_kernel(T* __restrict__ resp, const double* __restrict__ log_norm, int K,
                                          std::int64_t rows) {
  const int k = static_cast<int>(blockIdx.y) * kTileComponents + threadIdx.x;
  const std::int64_t n = static_cast<std::int64_t>(blockIdx.x) * kTileRows + threadIdx.y;
  if (k >= K || n >= rows) return;
  const double norm64 = log_norm[n];
  const bool ok = isfinite(norm64);
  const T norm = ok ? static_cast<T>(norm64) : T(0);
  T* l = resp + n * K + k;
  const T d = *l - norm;
  const T c = d < T(0) ? d : T(0);
  // A NaN difference only arises from a row the caller's normaliser already rejected; it folds
  // nothing rather than poisoning the statistics (d == d is false for NaN; no fast-math here).
  *l = (ok && d == d) ? exp_nonpositive(c) : T(0);
}

}  // namespace

template <class T>
void launch_normalise_external(const ChunkArgs<T>& c, const double* log_norm, cudaStream_t s) {
  if (c.rows == 0 || c.components == 0) return;
  launch_kernel<normalise_external_kernel<T>>(log_density_grid(c.rows, c.components), log_density_block(), 0, s, c.resp,
                                              log_norm, c.components, c.rows);
  MIXLE_CUDA_CHECK_LAUNCH();
}

template void launch_normalise_external<float>(const ChunkArgs<float>&, const double*, cudaStream_t);
template void launch_normalise_external<double>(const ChunkArgs<double>&, const double*, cudaStream_t);

}  // namespace mixle::kernels::cuda
