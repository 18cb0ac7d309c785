// How the CUDA kernels cut a pass into chunks and whether the rows stay on the device: plain
// host arithmetic with no CUDA header, so every build (and its tests) has it.
//
// A pass may plan with kDeviceMemoryShare of the device memory available to it, less the
// partials' budget: available = what cudaMemGetInfo calls free plus what this Compute already
// holds and will reuse — a cached copy of these very rows, workspaces, staging buffers. Counting
// the held memory matters: the free memory of the second pass over resident rows no longer
// includes them, and judged by it alone, data between ~0.4× and ~0.7× of the device would be
// streamed again every pass while its cached copy stayed allocated.
#pragma once

#include "kernels/model_view.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>

namespace mixle::kernels::cuda {

/// Rows summed in the compute precision before a float64 add (the CPU kernels' kBlockRows, so
/// both kernel sets round the same partial sums when chunks start at multiples of it).
constexpr int kSubBlockRows = 128;
/// Most bytes the per-slot statistics partials of one chunk may take.
constexpr std::size_t kPartialBudgetBytes = std::size_t(256) << 20;
/// Most rows one chunk computes at once: the device working set is O(kMaxChunkRows·(D + K)).
constexpr std::int64_t kMaxChunkRows = std::int64_t{1} << 20;
/// Share of the available device memory one pass plans with.
constexpr double kDeviceMemoryShare = 0.7;

/// Rows per statistics slot R for a model of `stat_size` statistics: a multiple of
/// kSubBlockRows chosen so a chunk of kMaxChunkRows rows keeps its partials within
/// kPartialBudgetBytes (one slot per chunk at most kMaxChunkRows rows when even that is over).
/// Depends on the model only, so the slot boundaries do not move with memory or chunking.
inline std::int64_t slot_rows(std::int64_t stat_size) {
  const double chunk_bytes = static_cast<double>(kMaxChunkRows) *
                             static_cast<double>(std::max<std::int64_t>(stat_size, 1)) * sizeof(double) /
                             kSubBlockRows;  // partials of a full chunk at one sub-block per slot
  const std::int64_t sub_blocks_per_slot = std::clamp<std::int64_t>(
      static_cast<std::int64_t>(std::ceil(chunk_bytes / static_cast<double>(kPartialBudgetBytes))), 1,
      kMaxChunkRows / kSubBlockRows);
  return sub_blocks_per_slot * kSubBlockRows;
}

/// Device bytes per row of a chunk's workspace: log-densities/responsibilities (K), the row
/// offset, the float64 log-likelihood and the int status.
template <class T>
constexpr std::size_t workspace_bytes_per_row(int components) {
  return sizeof(T) * (static_cast<std::size_t>(components) + 1) + sizeof(double) + sizeof(int);
}

/// Device bytes a pass allocates per row of a chunk besides the rows themselves: the workspace,
/// staged per-row inputs (given responsibilities, external normalisers, sample weights: two
/// buffers each) and, on the TF32 path, the GEMM's scratch (rows × 2D floats of the widest
/// gaussian_diag part).
template <class T>
std::size_t work_bytes_per_row(const ModelView<T>& model, bool given, bool log_norm, bool tf32, bool weights = false) {
  const std::size_t K = static_cast<std::size_t>(model.components);
  std::size_t bytes = workspace_bytes_per_row<T>(model.components);
  if (given) bytes += 2 * sizeof(T) * K;
  if (log_norm) bytes += 2 * sizeof(double);
  if (weights) bytes += 2 * sizeof(double);
  if (tf32) {
    std::size_t widest = 0;
    for (int p = 0; p < model.num_parts; ++p)
      if (model.parts[p].kind == PartKind::gaussian_diag)
        widest = std::max(widest, static_cast<std::size_t>(model.parts[p].dims));
    bytes += 2 * widest * sizeof(float);
  }
  return bytes;
}

/// What one pass needs and what the device offers.
struct ChunkRequest {
  std::int64_t rows = 0;
  std::size_t row_bytes = 0;            // one row of data in the compute precision
  std::size_t work_bytes_per_row = 0;   // all else a chunk allocates per row: workspace, staged
                                        // per-row inputs, TF32 scratch
  std::int64_t unit = kSubBlockRows;    // chunks start at multiples of it (slot_rows)
  std::int64_t forced_stream_rows = 0;  // MIXLE_CUDA_STREAM_ROWS, a multiple of unit, or 0
  std::int64_t max_chunk_rows = 0;      // MIXLE_CUDA_CHUNK_ROWS, a multiple of unit, or 0
  std::size_t free_bytes = 0;           // cudaMemGetInfo
  std::size_t held_bytes = 0;           // device memory the Compute holds and reuses for this pass
};

struct ChunkPlan {
  bool resident = false;   // upload all rows once and keep them
  std::int64_t chunk = 0;  // rows per chunk; 0: not even one unit fits
  double budget_bytes = 0.0;
  double streamed_bytes_per_row = 0.0;  // two staged copies of a row plus its working memory
};

inline ChunkPlan plan_chunks(const ChunkRequest& r) {
  ChunkPlan p;
  const std::int64_t unit = std::max<std::int64_t>(r.unit, 1);
  p.budget_bytes = kDeviceMemoryShare * (static_cast<double>(r.free_bytes) + static_cast<double>(r.held_bytes)) -
                   static_cast<double>(kPartialBudgetBytes);
  std::int64_t cap = std::max(unit, kMaxChunkRows / unit * unit);
  if (r.max_chunk_rows > 0) cap = std::min(cap, std::max(unit, r.max_chunk_rows));
  const std::int64_t forced = r.forced_stream_rows > 0 ? std::min(r.forced_stream_rows, cap) : 0;
  p.chunk = std::min(forced > 0 ? forced : cap, r.rows);  // one chunk when everything fits in one
  const double resident_bytes = static_cast<double>(r.rows) * static_cast<double>(r.row_bytes) +
                                static_cast<double>(p.chunk) * static_cast<double>(r.work_bytes_per_row);
  p.resident = forced == 0 && resident_bytes <= p.budget_bytes;
  p.streamed_bytes_per_row = 2.0 * static_cast<double>(r.row_bytes) + static_cast<double>(r.work_bytes_per_row);
  if (!p.resident && forced == 0) {
    const std::int64_t limit = static_cast<std::int64_t>(std::max(0.0, p.budget_bytes) / p.streamed_bytes_per_row);
    if (limit < p.chunk) p.chunk = limit / unit * unit;
  }
  return p;
}

}  // namespace mixle::kernels::cuda
