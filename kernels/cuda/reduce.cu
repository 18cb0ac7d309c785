// Block reduction of statistics on CUDA: each slot's header (Σ log-likelihood, rows, masses),
// and the fixed-order fold of the slots into the float64 statistics. A thread owns one
// statistic and adds the chunk's slots one by one onto the running total, so over a pass the
// statistic is ((s₀ + p₀) + p₁) + … in row order whatever the chunking (no atomics); the loads
// that feed it are staged a tile at a time by the whole block.
#include "kernels/cuda/device.cuh"

namespace mixle::kernels::cuda {
namespace {

constexpr int kHeaderThreads = 128;

/// Slot header: [0] Σ log-likelihood of the valid rows (float64, row order), [1] rows folded in
/// (accumulate: all but impossible/NaN rows; given: all; normalised: 0 and 0 — the caller owns
/// both, and the per-row status/log-likelihood are not written in that mode), [2 + k] Σ r_k
/// (in T per kSubBlockRows rows, then float64). With sample weights, [0] is Σ w·log-likelihood
/// over the valid rows of weight > 0 and [1] their Σ w (the CPU kernels' rule).
constexpr int kHeaderAccumulate = 0, kHeaderGiven = 1, kHeaderNormalised = 2;

template <class T>
__global__ void header_kernel(int header_mode, const T* __restrict__ resp, const double* __restrict__ loglik,
                              const int* __restrict__ status, const double* __restrict__ weights, int K,
                              std::int64_t rows, std::int64_t rows_per_slot, double* __restrict__ partials,
                              std::int64_t stat_size) {
  const std::int64_t slot = blockIdx.x;
  const std::int64_t begin = slot * rows_per_slot;
  const std::int64_t end = begin + rows_per_slot < rows ? begin + rows_per_slot : rows;
  double* out = partials + slot * stat_size;
  for (int k = threadIdx.x; k < K; k += blockDim.x) {
    double total = 0.0;
    for (std::int64_t b0 = begin; b0 < end; b0 += kSubBlockRows) {
      const std::int64_t b1 = b0 + kSubBlockRows < end ? b0 + kSubBlockRows : end;
      T mass = T(0);
      // gpu-model: header-mass fp=1 per (row, component)
      for (std::int64_t n = b0; n < b1; ++n) mass += resp[n * K + k];
      total += static_cast<double>(mass);
    }
    out[kStatHeader + k] = total;
  }
  if (threadIdx.x == 0) {
    if (header_mode == kHeaderGiven) {
      double total = static_cast<double>(end - begin);
      if (weights) {
        total = 0.0;
        for (std::int64_t n = begin; n < end; ++n) total += weights[n];
      }
      out[0] = 0.0;
      out[1] = total;
      return;
    }
    if (header_mode == kHeaderNormalised) {
      out[0] = 0.0;
      out[1] = 0.0;
      return;
    }
    double ll = 0.0, valid = 0.0;
    for (std::int64_t n = begin; n < end; ++n) {
      const int st = status[n];
      if (st != kRowOk && st != kRowTie) continue;
      if (!weights) {
        ll += loglik[n], valid += 1.0;
      } else if (weights[n] != 0.0) {  // a weight-0 row adds nothing (not 0 · inf)
        ll += weights[n] * loglik[n], valid += weights[n];
      }
    }
    out[0] = ll;
    out[1] = valid;
  }
}

/// The fold: one block per kFoldEntries statistics. Its warps stage a tile of kFoldTile slots into
/// shared memory together (kFoldTile / kFoldWarps independent loads in flight per thread, so the
/// fold moves at memory speed rather than at one load latency per slot), then the first warp adds
/// the tile onto its running totals, one thread per statistic, slot after slot. The order of the
/// additions is therefore the sequential one, ((s + p₀) + p₁) + …, bit for bit.
constexpr int kFoldEntries = 32;                         // statistics per block: one per lane
constexpr int kFoldWarps = 8;                            // warps that stage a tile
constexpr int kFoldTile = 128;                           // slots per tile (32 KiB of float64)
constexpr int kFoldThreads = kFoldEntries * kFoldWarps;  // 256
constexpr std::size_t kFoldSharedBytes = sizeof(double) * kFoldTile * kFoldEntries;
static_assert(kFoldTile % kFoldWarps == 0, "each warp stages the same number of a tile's slots");

__global__ void reduce_slots_kernel(const double* __restrict__ partials, std::int64_t slots, std::int64_t stat_size,
                                    double* __restrict__ stats) {
  MIXLE_DYNAMIC_SHARED(double, tile);  // kFoldTile × kFoldEntries, slot-major
  const int lane = static_cast<int>(threadIdx.x) % kFoldEntries;
  const int warp = static_cast<int>(threadIdx.x) / kFoldEntries;
  const std::int64_t j = static_cast<std::int64_t>(blockIdx.x) * kFoldEntries + lane;
  const bool owned = j < stat_size;
  const bool adder = warp == 0 && owned;
  double total = adder ? stats[j] : 0.0;
  for (std::int64_t s0 = 0; s0 < slots; s0 += kFoldTile) {
    const int n = slots - s0 < kFoldTile ? static_cast<int>(slots - s0) : kFoldTile;
#pragma unroll
    for (int i = 0; i < kFoldTile / kFoldWarps; ++i) {
      const int t = warp + i * kFoldWarps;
      if (owned && t < n) tile[t * kFoldEntries + lane] = partials[(s0 + t) * stat_size + j];
    }
    __syncthreads();
    if (adder) {
      // gpu-model: slot-fold fp64=1 per (slot, entry)
      for (int t = 0; t < n; ++t) total += tile[t * kFoldEntries + lane];
    }
    __syncthreads();  // the tile is consumed before the next one overwrites it
  }
  if (adder) stats[j] = total;
}

}  // namespace

template <class T>
void launch_header_partials(PassMode mode, const ChunkArgs<T>& c, const SlotPlan& plan, cudaStream_t s) {
  if (c.rows == 0) return;
  const int header_mode = mode == PassMode::given        ? kHeaderGiven
                          : mode == PassMode::normalised ? kHeaderNormalised
                                                         : kHeaderAccumulate;
  launch_kernel<header_kernel<T>>(static_cast<unsigned>(plan.slots), kHeaderThreads, 0, s, header_mode, c.resp,
                                  c.loglik, c.status, c.weights, c.components, c.rows, plan.rows_per_slot,
                                  plan.partials, plan.stat_size);
  MIXLE_CUDA_CHECK_LAUNCH();
}

void launch_reduce_slots(const SlotPlan& plan, double* stats, cudaStream_t s) {
  if (plan.stat_size == 0) return;
  launch_kernel<reduce_slots_kernel>(ceil_div(plan.stat_size, kFoldEntries), kFoldThreads, kFoldSharedBytes, s,
                                     plan.partials, plan.slots, plan.stat_size, stats);
  MIXLE_CUDA_CHECK_LAUNCH();
}

template void launch_header_partials<float>(PassMode, const ChunkArgs<float>&, const SlotPlan&, cudaStream_t);
template void launch_header_partials<double>(PassMode, const ChunkArgs<double>&, const SlotPlan&, cudaStream_t);

}  // namespace mixle::kernels::cuda
