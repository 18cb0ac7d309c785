// Sample weights on CUDA: after normalisation, each row's K responsibilities are multiplied by
// the row's weight (cast to T, as the CPU kernels do), so every statistic — masses, moments —
// folds the row that many times. The log-likelihood and row-count headers weigh rows in
// reduce.cu. One thread per (row, component), the log-density tiles' grid.
#include "kernels/cuda/device.cuh"

namespace mixle::kernels::cuda {
namespace {

template <class T>
__global__ void weigh_rows_kernel(T* __restrict__ resp, const double* __restrict__ weights, int K, std::int64_t rows) {
  const int k = static_cast<int>(blockIdx.y) * kTileComponents + threadIdx.x;
  const std::int64_t n = static_cast<std::int64_t>(blockIdx.x) * kTileRows + threadIdx.y;
  if (k >= K || n >= rows) return;
  resp[n * K + k] *= static_cast<T>(weights[n]);
}

}  // namespace

template <class T>
void launch_weigh_rows(const ChunkArgs<T>& c, cudaStream_t s) {
  if (c.rows == 0 || c.components == 0 || !c.weights) return;
  launch_kernel<weigh_rows_kernel<T>>(log_density_grid(c.rows, c.components), log_density_block(), 0, s, c.resp,
                                      c.weights, c.components, c.rows);
  MIXLE_CUDA_CHECK_LAUNCH();
}

template void launch_weigh_rows<float>(const ChunkArgs<float>&, cudaStream_t);
template void launch_weigh_rows<double>(const ChunkArgs<double>&, cudaStream_t);

}  // namespace mixle::kernels::cuda
