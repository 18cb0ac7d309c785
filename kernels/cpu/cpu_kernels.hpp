// The CPU kernels (always built; the oracle the CUDA kernels are tested against).
//
// A pass walks the rows in blocks of kBlockRows: each block is transposed into the compute
// precision T, the K log-densities of all its rows are computed at once (stacked over
// components), normalised row-wise by log-sum-exp into responsibilities, and folded into
// statistics. Blocks are grouped into tiles; OpenMP threads take tiles, and tile results are
// added to the caller's float64 buffer in tile order, so the result is bit-identical for any
// thread count. Within a block, sums are in T; across blocks, in float64.
//
// Alignment: two passes over the same rows agree bit-for-bit only when their blocks cover the
// same rows, i.e. when every pass starts at a multiple of kBlockRows of the global row index
// (distributed row splits are aligned to it for that reason).
#pragma once

#include "kernels/model_view.hpp"

#include <cstddef>
#include <cstdint>

namespace mixle::kernels::cpu {

constexpr int kBlockRows = 128;
/// Blocks per tile, and the rows of a tile: passes over consecutive row ranges that each start at
/// a multiple of kTileRows add the same tile sums in the same order as one pass over all of them,
/// so their statistics are bit-identical (a fit streaming its rows in chunks relies on it).
constexpr int kBlocksPerTile = 16;
constexpr int kTileRows = kBlockRows * kBlocksPerTile;

struct Options {
  int threads = 0;  // row-tile threads; 0: OpenMP's default
  /// > 1: thread the work of each block across this many contiguous component ranges instead
  /// of across row tiles (the reference's component-parallel fold); results are bit-identical
  /// to serial either way.
  int component_workers = 1;
  /// Per-row sample weights (rows values, aligned with x) or null (all 1): the accumulating
  /// passes fold each row's responsibilities, log-likelihood and row count times its weight, so
  /// stats[1] is the rows' total weight. score() ignores them (its outputs are per row).
  const double* weights = nullptr;
  /// Exact pruning (docs/numerics.md §8), accumulate passes only: each row's anchor — the
  /// component that held its largest responsibility in an earlier pass (rows values, aligned
  /// with x), or null for none. When set, a pass writes every row's new anchor there; when also
  /// `prune`, it reads them first and evaluates only the pairs its bound cannot prove zero. An
  /// anchor steers the speed only: any values, stale or out of range, give the same bits.
  std::int32_t* anchors = nullptr;
  bool prune = false;
  /// With `prune`: take the pruned path in every block where it is valid, even where its rows keep
  /// so many pairs that the dense one would be faster (tests of its results).
  bool prune_every_block = false;
};

/// Tiles whose float64 sums a pass keeps at once before it adds them in tile order: up to 64,
/// fewer when the statistics are large (≤ 512 MiB of tile buffers), at least one. Depends only
/// on the problem's `stat_size` (float64 values), never on the thread count, so the summation
/// order is fixed.
std::int64_t tiles_per_round(std::int64_t stat_size);

/// E-step: adds the statistics of rows [0, rows) of `x` (host, row-major, leading dimension
/// `ld` ≥ model.columns elements) to `stats` (host, model.stat_size float64 values).
/// Rows that are impossible (−inf under every component) or NaN are skipped and reported.
template <class T, class X>
PassReport accumulate(const ModelView<T>& model, const X* x, std::size_t rows, std::size_t ld, double* stats,
                      const Options& options);

/// Scores rows: per-row log-likelihood (`loglik`, rows values, may be null; −inf for a row
/// impossible under every component, NaN for a NaN row — both also in the report) and
/// responsibilities (`resp`, rows × K row-major, may be null; 0 for those rows), host float64.
template <class T, class X>
PassReport score(const ModelView<T>& model, const X* x, std::size_t rows, std::size_t ld, double* loglik, double* resp,
                 const Options& options);

/// Folds given responsibilities `resp` (host, rows × K row-major, float64) into `stats`
/// without computing log-densities (used by initialisation). stats[0] is left unchanged.
template <class T, class X>
void accumulate_given(const ModelView<T>& model, const X* x, std::size_t rows, std::size_t ld, const double* resp,
                      double* stats, const Options& options);

/// accumulate_given for one-hot responsibilities: row i wholly in component labels[i] (< K). The
/// same statistics, bit for bit, read from the labels instead of a rows × K matrix.
template <class T, class X>
void accumulate_labelled(const ModelView<T>& model, const X* x, std::size_t rows, std::size_t ld,
                         const std::size_t* labels, double* stats, const Options& options);

/// Folds the responsibilities r_k = exp(log w_k + log p(x|k) − log_norm[i]) of this model's
/// components into `stats`, with a per-row normaliser `log_norm` (host, rows float64 values)
/// computed elsewhere — component sharding passes the log-likelihood under the whole mixture.
/// Rows with a non-finite normaliser contribute nothing; stats[0] and stats[1] are unchanged.
template <class T, class X>
void accumulate_normalised(const ModelView<T>& model, const X* x, std::size_t rows, std::size_t ld,
                           const double* log_norm, double* stats, const Options& options);

/// Values a log-density cache for `rows` rows of a K-component model holds: whole blocks.
inline std::size_t log_density_cache_size(std::size_t rows, int K) {
  return (rows + kBlockRows - 1) / kBlockRows * kBlockRows * static_cast<std::size_t>(K);
}

/// score() of per-row log-likelihoods that also keeps every row's K log-densities (compute
/// precision, log_density_cache_size values, the kernels' block layout) in `log_densities`.
template <class T, class X>
PassReport score_keeping(const ModelView<T>& model, const X* x, std::size_t rows, std::size_t ld, double* loglik,
                         T* log_densities, const Options& options);

/// accumulate_normalised() from log-densities kept by score_keeping() over the same rows and
/// model (bit-identical to recomputing them, without the cost). Consumes them: each block's
/// log-densities become its responsibilities in place, so a second fold needs a new score_keeping().
template <class T, class X>
void accumulate_normalised_kept(const ModelView<T>& model, const X* x, std::size_t rows, std::size_t ld,
                                T* log_densities, const double* log_norm, double* stats, const Options& options);

}  // namespace mixle::kernels::cpu
