// Fused E-step for the benchmark shape — a model that is one gaussian_diag part, float32,
// K ≤ 256, D ≤ 64, K·D ≤ 2048: log-densities, normalisation and statistics in one kernel, so the
// rows × K block never leaves shared memory (materialising it in device memory costs ≈ 2× at
// best). A block owns one statistics slot; per tile of 32 rows it stages x, computes the
// tile's K log-densities into shared memory (CPU order: log_const, then dim by dim), normalises
// each row with one warp (normalise_row_warp, the unfused kernel's code), then folds r·(x − s)
// and r·(x − s)² into per-thread registers (8 (component, dim) pairs each) and the masses.
// Every quantity is formed by the same operations in the same order as the unfused path
// (init + log-density + normalise + header + tiled statistics), so the two agree to FMA
// contraction; MIXLE_CUDA_FUSED=0 selects the unfused path for comparison.
#include "kernels/cuda/device.cuh"
#include "kernels/cuda/row_normalise.cuh"

#include <cstdlib>
#include <cstring>

namespace mixle::kernels::cuda {
namespace {

constexpr int kFusedThreads = 256;
constexpr int kFusedWarps = kFusedThreads / 32;
constexpr int kFusedRows = 32;
constexpr int kFusedMaxK = 256;
constexpr int kFusedMaxD = 64;
constexpr int kFusedPairsPerThread = 8;

__global__ void __launch_bounds__(kFusedThreads)
    diag_fused_kernel(PartView<float> part, const float* __restrict__ log_const, const float* __restrict__ x, int ld,
                      int K, std::int64_t rows, std::int64_t rows_per_slot, double* __restrict__ loglik,
                      int* __restrict__ status, DeviceReport* report, double* __restrict__ partials,
                      std::int64_t stat_size) {
  __shared__ float xs[kFusedRows][kFusedMaxD];
  __shared__ float ls[kFusedRows][kFusedMaxK];
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int D = part.dims, pairs = K * D;
  const std::int64_t slot = blockIdx.x;
  const std::int64_t begin = slot * rows_per_slot;
  const std::int64_t end = begin + rows_per_slot < rows ? begin + rows_per_slot : rows;

  int kl[kFusedPairsPerThread], dl[kFusedPairsPerThread];
  float shift[kFusedPairsPerThread], acc1[kFusedPairsPerThread], acc2[kFusedPairsPerThread];
  double tot1[kFusedPairsPerThread], tot2[kFusedPairsPerThread];
#pragma unroll
  for (int i = 0; i < kFusedPairsPerThread; ++i) {
    const int p = tid + i * kFusedThreads;
    kl[i] = p < pairs ? p / D : 0;
    dl[i] = p < pairs ? p % D : 0;
    shift[i] = p < pairs ? part.shift[static_cast<std::int64_t>(kl[i]) * D + dl[i]] : 0.0f;
    tot1[i] = 0.0, tot2[i] = 0.0;
  }
  float mass = 0.0f;
  double mass_total = 0.0;

  for (std::int64_t b0 = begin; b0 < end; b0 += kSubBlockRows) {
    const std::int64_t b1 = b0 + kSubBlockRows < end ? b0 + kSubBlockRows : end;
#pragma unroll
    for (int i = 0; i < kFusedPairsPerThread; ++i) acc1[i] = 0.0f, acc2[i] = 0.0f;
    mass = 0.0f;
    for (std::int64_t r0 = b0; r0 < b1; r0 += kFusedRows) {
      const int nrow = static_cast<int>(b1 - r0 < kFusedRows ? b1 - r0 : kFusedRows);
      __syncthreads();  // the previous tile has been consumed
      for (int e = tid; e < nrow * D; e += kFusedThreads)
        xs[e / D][e % D] = x[(r0 + e / D) * ld + part.col_begin + e % D];
      __syncthreads();
      for (int e = tid; e < nrow * K; e += kFusedThreads) {
        const int row = e / K, k = e % K;
        const float* mean = part.coef + static_cast<std::int64_t>(k) * part.coef_stride;
        const float* neg_half_prec = mean + D;
        float l = log_const[k];
        for (int d = 0; d < D; ++d) {
          const float t = xs[row][d] - mean[d];
          l += neg_half_prec[d] * t * t;
        }
        ls[row][k] = l;
      }
      __syncthreads();
      for (int row = warp; row < nrow; row += kFusedWarps)
        normalise_row_warp(&ls[row][0], K, lane, loglik + r0 + row, status + r0 + row, report);
      __syncthreads();
      for (int row = 0; row < nrow; ++row) {
#pragma unroll
        for (int i = 0; i < kFusedPairsPerThread; ++i) {
          if (tid + i * kFusedThreads >= pairs) continue;
          const float r = ls[row][kl[i]];
          if (r == 0.0f) continue;
          const float t = xs[row][dl[i]] - shift[i];
          const float rt = r * t;
          acc1[i] += rt;
          acc2[i] += rt * t;
        }
      }
      if (tid < K)
        for (int row = 0; row < nrow; ++row) mass += ls[row][tid];
    }
#pragma unroll
    for (int i = 0; i < kFusedPairsPerThread; ++i)
      tot1[i] += static_cast<double>(acc1[i]), tot2[i] += static_cast<double>(acc2[i]);
    mass_total += static_cast<double>(mass);
  }

  double* out = partials + slot * stat_size;
#pragma unroll
  for (int i = 0; i < kFusedPairsPerThread; ++i) {
    if (tid + i * kFusedThreads >= pairs) continue;
    double* entry = out + part.stat_offset + static_cast<std::int64_t>(kl[i]) * part.stat_stride + dl[i];
    entry[0] = tot1[i];
    entry[D] = tot2[i];
  }
  if (tid < K) out[kStatHeader + tid] = mass_total;
  __syncthreads();  // the rows' log-likelihoods and statuses written above are visible block-wide
  if (tid == 0) {
    double ll = 0.0, valid = 0.0;
    for (std::int64_t n = begin; n < end; ++n)
      if (status[n] == kRowOk || status[n] == kRowTie) ll += loglik[n], valid += 1.0;
    out[0] = ll;
    out[1] = valid;
  }
}

}  // namespace

bool gaussian_diag_fused_eligible(const ModelView<float>& model) {
  const char* v = std::getenv("MIXLE_CUDA_FUSED");
  if (v && std::strcmp(v, "0") == 0) return false;
  if (model.num_parts != 1 || model.row_offset) return false;
  const PartView<float>& part = model.parts[0];
  const int K = model.components, D = part.dims;
  return part.kind == PartKind::gaussian_diag && D >= 1 && D <= kFusedMaxD && K <= kFusedMaxK &&
         K * D <= kFusedThreads * kFusedPairsPerThread;
}

void launch_gaussian_diag_fused(const ModelView<float>& model, const ChunkArgs<float>& c, const SlotPlan& plan,
                                DeviceReport* report, cudaStream_t s) {
  if (c.rows == 0) return;
  launch_kernel<diag_fused_kernel>(static_cast<unsigned>(plan.slots), kFusedThreads, 0, s, model.parts[0],
                                   model.log_const, c.x, c.ld, c.components, c.rows, plan.rows_per_slot, c.loglik,
                                   c.status, report, plan.partials, plan.stat_size);
  MIXLE_CUDA_CHECK_LAUNCH();
}

}  // namespace mixle::kernels::cuda
