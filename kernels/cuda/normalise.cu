// Row-wise normalisation on CUDA: L[n,k] = log_const[k] (+ row offset) to start, then one warp
// per row turns log-densities into responsibilities (log-sum-exp), the per-row log-likelihood
// and a row status, with the CPU kernels' rules (kernels/cpu/pass.cpp normalise):
//   · max over k ignores NaN (comparisons with NaN are false), as on the CPU; a row with any NaN
//     log-density is a NaN row, whatever its other values (an all-NaN row is not impossible);
//   · m = +inf: the components at +inf share the row equally, log-likelihood +inf;
//   · responsibilities below exp(kFlushLogRatio)·max are exactly 0 (exp_nonpositive);
//   · a row whose max or sum is not finite (m = −inf: impossible; else NaN) gets zero
//     responsibility and log-likelihood 0, is counted and listed.
// Warp sums use a fixed butterfly and lane 0's result is broadcast, so every lane scales by the
// same value and the result does not depend on scheduling.
#include "kernels/cuda/device.cuh"
#include "kernels/cuda/row_normalise.cuh"

namespace mixle::kernels::cuda {
namespace {

constexpr int kNormaliseThreads = 256;  // 8 rows (warps) per block
constexpr int kListThreads = 256;

template <class T>
__global__ void init_kernel(const T* __restrict__ log_const, const T* __restrict__ row_offset, T* __restrict__ logp,
                            int K, std::int64_t rows) {
  const int k = static_cast<int>(blockIdx.y) * kTileComponents + threadIdx.x;
  const std::int64_t n = static_cast<std::int64_t>(blockIdx.x) * kTileRows + threadIdx.y;
  if (k >= K || n >= rows) return;
  logp[n * K + k] = row_offset ? log_const[k] + row_offset[n] : log_const[k];
}

template <class T>
__global__ void normalise_kernel(T* __restrict__ resp, double* __restrict__ loglik, int* __restrict__ status, int K,
                                 std::int64_t rows, DeviceReport* report) {
  const std::int64_t n = static_cast<std::int64_t>(blockIdx.x) * (kNormaliseThreads / 32) + (threadIdx.x >> 5);
  if (n >= rows) return;  // whole warps leave together: n is uniform across the warp
  normalise_row_warp(resp + n * K, K, threadIdx.x & 31, loglik + n, status + n, report);
}

/// One block scans the chunk's statuses in row order and appends the first bad rows to the
/// pass's list until it holds kMaxListed; it returns at once when the chunk had none.
__global__ void list_bad_rows_kernel(const int* __restrict__ status, std::int64_t rows, std::int64_t first_row,
                                     DeviceReport* report) {
  if (report->chunk_bad == 0 || report->num_listed >= PassReport::kMaxListed) return;
  __shared__ int warp_counts[kListThreads / 32];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  int listed = report->num_listed;
  for (std::int64_t base = 0; base < rows && listed < PassReport::kMaxListed; base += kListThreads) {
    const std::int64_t n = base + threadIdx.x;
    const bool bad = n < rows && (status[n] == kRowImpossible || status[n] == kRowNan);
    const unsigned ballot = __ballot_sync(0xffffffffu, bad);
    if (lane == 0) warp_counts[warp] = __popc(ballot);
    __syncthreads();
    int before = 0, total = 0;
    for (int w = 0; w < kListThreads / 32; ++w) {
      before += w < warp ? warp_counts[w] : 0;
      total += warp_counts[w];
    }
    const int pos = listed + before + __popc(ballot & ((1u << lane) - 1u));
    if (bad && pos < PassReport::kMaxListed) report->listed[pos] = first_row + n;
    listed += total;
    __syncthreads();  // warp_counts is rewritten by the next round
  }
  if (threadIdx.x == 0) report->num_listed = listed < PassReport::kMaxListed ? listed : PassReport::kMaxListed;
}

}  // namespace

template <class T>
void launch_init_log_density(const ModelView<T>& model, const ChunkArgs<T>& c, cudaStream_t s) {
  if (c.rows == 0) return;
  launch_kernel<init_kernel<T>>(log_density_grid(c.rows, c.components), log_density_block(), 0, s, model.log_const,
                                model.row_offset ? c.row_offset : nullptr, c.resp, c.components, c.rows);
  MIXLE_CUDA_CHECK_LAUNCH();
}

template <class T>
void launch_normalise(const ChunkArgs<T>& c, DeviceReport* report, cudaStream_t s) {
  if (c.rows == 0) return;
  launch_kernel<normalise_kernel<T>>(ceil_div(c.rows, kNormaliseThreads / 32), kNormaliseThreads, 0, s, c.resp,
                                     c.loglik, c.status, c.components, c.rows, report);
  MIXLE_CUDA_CHECK_LAUNCH();
}

template <class T>
void launch_list_bad_rows(const ChunkArgs<T>& c, std::int64_t first_row, DeviceReport* report, cudaStream_t s) {
  if (c.rows == 0) return;
  launch_kernel<list_bad_rows_kernel>(1, kListThreads, 0, s, c.status, c.rows, first_row, report);
  MIXLE_CUDA_CHECK_LAUNCH();
}

#define MIXLE_INSTANTIATE(T)                                                                        \
  template void launch_init_log_density<T>(const ModelView<T>&, const ChunkArgs<T>&, cudaStream_t); \
  template void launch_normalise<T>(const ChunkArgs<T>&, DeviceReport*, cudaStream_t);              \
  template void launch_list_bad_rows<T>(const ChunkArgs<T>&, std::int64_t, DeviceReport*, cudaStream_t);
MIXLE_INSTANTIATE(float)
MIXLE_INSTANTIATE(double)
#undef MIXLE_INSTANTIATE

}  // namespace mixle::kernels::cuda
