// The CPU kernels' passes over rows: accumulate (E-step statistics), score, accumulate_given.
#include "kernels/common/math.hpp"
#include "kernels/cpu/block.hpp"
#include "kernels/cpu/cpu_kernels.hpp"
#include "kernels/cpu/families/discrete.hpp"
#include "kernels/cpu/families/gaussian_diag.hpp"
#include "kernels/cpu/families/gaussian_full.hpp"
#include "kernels/cpu/families/positive.hpp"
#include "kernels/cpu/normalise.hpp"
#include "kernels/cpu/prune.hpp"

#include <omp.h>

#include <algorithm>
#include <iterator>
#include <span>
#include <cmath>
#include <limits>
#include <numeric>
#include <optional>
#include <vector>

namespace mixle::kernels {

void PassReport::merge(const PassReport& other) {
  impossible_rows += other.impossible_rows;
  nan_rows += other.nan_rows;
  evaluated_pairs += other.evaluated_pairs;
  pairs += other.pairs;
  for (int i = 0; i < other.num_listed && num_listed < kMaxListed; ++i) listed[num_listed++] = other.listed[i];
}

}  // namespace mixle::kernels

namespace mixle::kernels::cpu {
namespace {

enum class Mode { accumulate, score, given, normalised };

/// Whether a part's terms read log x (Block::log_column).
inline bool reads_log(PartKind kind) { return kind == PartKind::gamma || kind == PartKind::lognormal; }

/// The model's parts, for range-for (no index bound to get wrong).
template <class T>
std::span<const PartView<T>> parts_of(const ModelView<T>& model) {
  return {model.parts, static_cast<std::size_t>(model.num_parts)};
}

template <class T>
int scratch_size(const ModelView<T>& model) {
  int size = 0;
  for (const PartView<T>& part : parts_of(model))
    if (part.kind == PartKind::gaussian_full) size = std::max(size, (2 * part.dims + 1) * kBlockRows);
  return size;
}

/// Per-thread state: the block buffers and the compute-precision block sums. With component
/// workers, each worker has its own scratch and works on a disjoint component range.
template <class T>
struct Workspace {
  Block<T> block;
  std::vector<T> block_acc;  // stat_size values, compute precision (only active comps used)
  std::vector<int> active;   // components with any non-zero responsibility in the block
  std::vector<T*> acc_ptrs;
  std::vector<T> scratch;  // workers × scratch_size
  int scratch_stride = 0;
  int workers = 1;
  PassReport report;
  PruneScratch<T> prune;

  Workspace(const ModelView<T>& model, int component_workers) : workers(component_workers) {
    block.reserve(model.columns, model.components);
    for (const PartView<T>& part : parts_of(model))
      if (reads_log(part.kind)) block.lx.assign(block.xt.size(), T(0));
    block_acc.assign(static_cast<std::size_t>(model.stat_size), T(0));
    active.reserve(model.components);
    acc_ptrs.resize(model.components);
    scratch_stride = scratch_size(model);  // 0 (no scratch) unless a part is gaussian_full
    scratch.assign(static_cast<std::size_t>(scratch_stride) * workers, T(0));
  }
  T* worker_scratch(int w) { return scratch.data() + static_cast<std::size_t>(w) * scratch_stride; }
};

/// Components [begin, end) of worker w of W: contiguous, fixed ranges.
inline std::pair<int, int> component_range(int K, int w, int W) {
  return {static_cast<int>(static_cast<std::int64_t>(K) * w / W),
          static_cast<int>(static_cast<std::int64_t>(K) * (w + 1) / W)};
}

/// Runs fn(worker, k_begin, k_end) for each component range: on `workers` threads when > 1.
/// Each component's arithmetic is the same whoever runs it, so results are bit-identical to
/// serial (the reference's component_parallel_fold contract).
template <class Fn>
void for_component_ranges(int K, int workers, Fn&& fn) {
  if (workers <= 1) {
    fn(0, 0, K);
    return;
  }
#pragma omp parallel for num_threads(workers) schedule(static, 1)
  for (int w = 0; w < workers; ++w) {
    const auto [k0, k1] = component_range(K, w, workers);
    fn(w, k0, k1);
  }
}

/// The block's transposed copy (Block::xt) from its row-major one.
template <class T>
void transpose_block(int columns, Block<T>& block) {
  for (int b = 0; b < kBlockRows; ++b) {
    const T* xr = block.xr.data() + static_cast<std::size_t>(b) * columns;
    for (int c = 0; c < columns; ++c) block.xt[static_cast<std::size_t>(c) * kBlockRows + b] = xr[c];
  }
}

/// Loads n rows into the block: row-major, and transposed unless `rows_only` (the pruned pass
/// reads rows; transpose_block makes the transposed copy when a block falls back to the dense one).
template <class T, class X>
void load_block(const ModelView<T>& model, const X* x, std::size_t ld, int n, Block<T>& block, bool rows_only = false) {
  block.rows = n;
  const int C = model.columns;
  for (int b = 0; b < kBlockRows; ++b) {
    const X* row = x + static_cast<std::size_t>(b < n ? b : 0) * ld;
    T* xr = block.xr.data() + static_cast<std::size_t>(b) * C;
    for (int c = 0; c < C; ++c) xr[c] = static_cast<T>(row[c]);
  }
  if (!rows_only) transpose_block(C, block);
  for (const PartView<T>& part : parts_of(model)) {
    if (!reads_log(part.kind)) continue;
    for (int c = part.col_begin; c < part.col_begin + part.dims; ++c) {
      const T* v = block.column(c);
      T* lv = block.lx.data() + static_cast<std::size_t>(c) * kBlockRows;
      std::transform(v, v + kBlockRows, lv, [](T x) { return log_of(x); });
    }
  }
}

template <class T>
void log_densities(const ModelView<T>& model, Workspace<T>& ws) {
  Block<T>& block = ws.block;
  const int K = model.components;
  if (model.row_offset) {
    std::fill(block.row_offset.begin(), block.row_offset.end(), T(0));
    for (const PartView<T>& part : parts_of(model))
      if (part.kind == PartKind::poisson)
        poisson_row_offset(part, block);
      else if (part.kind == PartKind::lognormal)
        lognormal_row_offset(part, block);
  }
  for_component_ranges(K, ws.workers, [&](int w, int k0, int k1) {
    for (int k = k0; k < k1; ++k) {
      T* l = block.logp(k);
      const T c = model.log_const[k];
      if (model.row_offset) {
        for (int b = 0; b < kBlockRows; ++b) l[b] = c + block.row_offset[b];
      } else {
        for (int b = 0; b < kBlockRows; ++b) l[b] = c;
      }
    }
    T* scratch = ws.worker_scratch(w);
    for (const PartView<T>& part : parts_of(model)) {
      switch (part.kind) {
        case PartKind::gaussian_diag: gaussian_diag_log_density(part, k0, k1, block, scratch); break;
        case PartKind::gaussian_full: gaussian_full_log_density(part, k0, k1, block, scratch); break;
        case PartKind::categorical: categorical_log_density(part, k0, k1, block, scratch); break;
        case PartKind::poisson:
        case PartKind::exponential:
        case PartKind::bernoulli: linear_log_density(part, k0, k1, block, scratch); break;
        case PartKind::gamma: gamma_log_density(part, k0, k1, block, scratch); break;
        case PartKind::lognormal: lognormal_log_density(part, k0, k1, block, scratch); break;
      }
    }
  });
}

/// Turns log-densities into responsibilities against a normaliser computed elsewhere (one
/// per row, float64): r = exp(l − L). L is the log-likelihood under a larger mixture than this
/// model (component sharding), so l ≤ L up to rounding; the clamp keeps r ≤ 1. Rows whose L is
/// not finite, and lanes past the block's rows, get r = 0.
template <class T>
void normalise_external(int K, const double* log_norm, int n, Block<T>& block) {
  T norm[kBlockRows], keep[kBlockRows];
  for (int b = 0; b < kBlockRows; ++b) {
    const bool ok = b < n && std::isfinite(log_norm[b]);
    norm[b] = ok ? static_cast<T>(log_norm[b]) : T(0);
    keep[b] = ok ? T(1) : T(0);
  }
  for (int k = 0; k < K; ++k) {
    T* l = block.logp(k);
#pragma omp simd
    for (int b = 0; b < kBlockRows; ++b) {
      const T d = l[b] - norm[b];
      const T c = d < T(0) ? d : T(0);
      // A NaN difference comes from a NaN log-density, a row whose normaliser is NaN too: its
      // caller rejects it (component sharding raises before it folds such a chunk). It gets no
      // responsibility here, though a NaN value would reach the statistics through 0·x anyway.
      l[b] = d == d ? exp_nonpositive(c) * keep[b] : T(0);
    }
  }
}

/// Each of the block's rows' anchor for the next pass: the first component of its largest
/// responsibility (0 for a row with none).
template <class T>
void record_anchors(int K, const Block<T>& block, std::int32_t* anchors) {
  // The index is carried in T (exact below 2²⁴ components) so that the loop is one SIMD select.
  T best[kBlockRows], index[kBlockRows] = {};
  std::copy_n(block.resp(0), kBlockRows, best);
  for (int k = 1; k < K; ++k) {
    const T* r = block.resp(k);
    const T kt = static_cast<T>(k);
#pragma omp simd
    for (int b = 0; b < kBlockRows; ++b) {
      index[b] = r[b] > best[b] ? kt : index[b];
      best[b] = r[b] > best[b] ? r[b] : best[b];
    }
  }
  std::transform(index, index + block.rows, anchors, [](T k) { return static_cast<std::int32_t>(k); });
}

/// Multiplies each of the block's n rows' responsibilities by its sample weight `w` (rows past
/// n hold 0 already). Returns the block's total weight.
template <class T>
double weigh_block(int K, const double* w, int n, Block<T>& block) {
  T wt[kBlockRows] = {};  // rows past n weigh 0
  std::transform(w, w + n, wt, [](double v) { return static_cast<T>(v); });
  const double total = std::accumulate(w, w + n, 0.0);
  for (int k = 0; k < K; ++k) {
    T* l = block.logp(k);
#pragma omp simd
    for (int b = 0; b < kBlockRows; ++b) l[b] *= wt[b];
  }
  return total;
}

/// +inf exactly: a row at the edge of a family's support (x = −inf under an exponential).
template <class T>
bool at_plus_infinity(T v) {
  return v == std::numeric_limits<T>::infinity();
}

/// Re-evaluates +inf rows: responsibilities split equally among the components at +inf.
template <class T>
void tie_rows(const ModelView<T>& model, Workspace<T>& ws) {
  Block<T>& block = ws.block;
  const auto loglik = block.loglik.begin();
  if (std::none_of(loglik, loglik + block.rows, at_plus_infinity<double>)) return;
  std::vector<T> saved(block.lp);
  log_densities(model, ws);
  std::swap(saved, block.lp);  // saved = fresh log-densities, block.lp = responsibilities
  const int K = model.components;
  for (int b = 0; b < block.rows; ++b) {
    if (!at_plus_infinity(block.loglik[b])) continue;
    int ties = 0;
    for (int k = 0; k < K; ++k) ties += at_plus_infinity(saved.at(static_cast<std::size_t>(k * kBlockRows + b)));
    for (int k = 0; k < K; ++k) {
      const T v = saved[k * kBlockRows + b];
      block.logp(k)[b] = at_plus_infinity(v) ? T(1) / static_cast<T>(ties) : T(0);
    }
  }
}

/// Folds the block's responsibilities into `tile` (float64, stat_size values): block sums in
/// the compute precision, added to the tile in float64.
template <class T>
void fold_block(const ModelView<T>& model, Workspace<T>& ws, double* tile) {
  Block<T>& block = ws.block;
  const int K = model.components;
  ws.active.clear();
  for (int k = 0; k < K; ++k) {
    const T* r = block.resp(k);
    T mass = T(0);
#pragma omp simd reduction(+ : mass)
    for (int b = 0; b < kBlockRows; ++b) mass += r[b];
    if (mass != T(0)) {
      ws.active.push_back(k);
      tile[kStatHeader + k] += static_cast<double>(mass);
    }
  }
  const int num_active = static_cast<int>(ws.active.size());
  for_component_ranges(K, ws.workers, [&](int w, int k0, int k1) {
    // This worker's slice of the (sorted) active list.
    const int a0 = static_cast<int>(std::lower_bound(ws.active.begin(), ws.active.end(), k0) - ws.active.begin());
    const int a1 = static_cast<int>(std::lower_bound(ws.active.begin(), ws.active.end(), k1) - ws.active.begin());
    const int* act = ws.active.data() + a0;
    const int n = a1 - a0;
    T* scratch = ws.worker_scratch(w);
    for (const PartView<T>& part : parts_of(model)) {
      T** ptrs = ws.acc_ptrs.data() + a0;
      for (int a = 0; a < n; ++a) {
        T* acc = ws.block_acc.data() + part.stat_offset + static_cast<std::int64_t>(act[a]) * part.stat_stride;
        std::fill(acc, acc + part.stat_stride, T(0));
        ptrs[a] = acc;
      }
      switch (part.kind) {
        case PartKind::gaussian_diag: gaussian_diag_accumulate(part, act, n, block, ptrs, scratch); break;
        case PartKind::gaussian_full: gaussian_full_accumulate(part, act, n, block, ptrs, scratch); break;
        case PartKind::categorical: categorical_accumulate(part, act, n, block, ptrs, scratch); break;
        case PartKind::poisson:
        case PartKind::exponential:
        case PartKind::bernoulli: linear_accumulate(part, act, n, block, ptrs, scratch); break;
        case PartKind::gamma: gamma_accumulate(part, act, n, block, ptrs, scratch); break;
        case PartKind::lognormal: lognormal_accumulate(part, act, n, block, ptrs, scratch); break;
      }
      for (int a = 0; a < n; ++a) {
        const std::int64_t off = part.stat_offset + static_cast<std::int64_t>(act[a]) * part.stat_stride;
        const T* acc = ws.block_acc.data() + off;
        double* t = tile + off;
        for (int i = 0; i < part.stat_stride; ++i) t[i] += static_cast<double>(acc[i]);
      }
    }
  });
  (void)num_active;
}

template <class T, class X>
PassReport run_pass(Mode mode, const ModelView<T>& model, const X* x, std::size_t rows, std::size_t ld, double* stats,
                    double* loglik, double* resp, const double* given, const Options& options, T* cache = nullptr,
                    const std::size_t* labels = nullptr) {
  const double* weights = mode == Mode::score ? nullptr : options.weights;
  const std::int64_t tile_rows = kTileRows;
  const std::int64_t tiles = (static_cast<std::int64_t>(rows) + tile_rows - 1) / tile_rows;
  const int K = model.components;
  const int workers = std::max(1, std::min(options.component_workers, K));
  int threads = options.threads > 0 ? options.threads : omp_get_max_threads();
  threads = static_cast<int>(std::max<std::int64_t>(1, std::min<std::int64_t>(threads, tiles)));
  if (workers > 1) threads = 1;  // component workers replace row-tile threads
  const std::int64_t round = tiles_per_round(model.stat_size);
  const std::size_t S = static_cast<std::size_t>(model.stat_size);
  const std::size_t slots = static_cast<std::size_t>(std::min(round, tiles));  // none for no rows
  std::vector<double> tile_sums(mode == Mode::score ? 0 : slots * S);
  std::vector<PassReport> reports(slots);
  PassReport total;
  // Exact pruning needs anchors, which the first pass over the rows writes (densely).
  std::optional<PruneBounds<T>> bounds;
  if (mode == Mode::accumulate && options.prune && options.anchors) bounds.emplace(model);
  if (bounds && !bounds->eligible()) bounds.reset();
  const bool fold_reads_columns = std::any_of(model.parts, model.parts + model.num_parts,
                                              [](const PartView<T>& p) { return p.dims % Simd<T>::lanes != 0; });

#pragma omp parallel num_threads(threads) if (threads > 1)
  {
    Workspace<T> ws(model, workers);
    for (std::int64_t first = 0; first < tiles; first += round) {
      const std::int64_t count = std::min(round, tiles - first);
#pragma omp for schedule(dynamic, 1)
      for (std::int64_t i = 0; i < count; ++i) {
        const std::int64_t t = first + i;
        double* tile = mode == Mode::score ? nullptr : tile_sums.data() + static_cast<std::size_t>(i) * S;
        if (tile) std::fill(tile, tile + S, 0.0);
        ws.report = PassReport{};
        const std::int64_t tile_end = std::min<std::int64_t>(static_cast<std::int64_t>(rows), (t + 1) * tile_rows);
        for (std::int64_t row0 = t * tile_rows; row0 < tile_end; row0 += kBlockRows) {
          const int n = static_cast<int>(std::min<std::int64_t>(kBlockRows, tile_end - row0));
          load_block(model, x + static_cast<std::size_t>(row0) * ld, ld, n, ws.block, bounds.has_value());
          if (mode == Mode::given) {
            if (labels) {  // one-hot rows: the values given[…] would hold, 0 but a 1 a row
              for (int k = 0; k < K; ++k) std::fill_n(ws.block.logp(k), kBlockRows, T(0));
              for (int b = 0; b < n; ++b) ws.block.logp(static_cast<int>(labels[row0 + b]))[b] = T(1);
            } else {
              for (int k = 0; k < K; ++k)
                for (int b = 0; b < kBlockRows; ++b)
                  ws.block.lane(k, b) = b < n ? static_cast<T>(given[(row0 + b) * K + k]) : T(0);
            }
            tile[1] += weights ? weigh_block(K, weights + row0, n, ws.block) : n;
            fold_block(model, ws, tile);
            continue;
          }
          // The cache holds each block's log-densities in the block's own [K][kBlockRows]
          // layout, in place: a score pass writes them there and leaves them, a normalised
          // pass turns them into responsibilities there instead of recomputing them. Every
          // block of a cached pass sets lp_at here, and a pass's workspace ends with the pass.
          ws.block.lp_at = cache ? cache + static_cast<std::size_t>(row0 / kBlockRows) * K * kBlockRows : nullptr;
          ws.block.sparse = false;
          if (mode == Mode::accumulate) {
            std::int32_t* anchors = options.anchors ? options.anchors + row0 : nullptr;
            ws.report.pairs += static_cast<std::int64_t>(n) * K;
            // Pruned, the block's responsibilities and log-likelihoods are the dense pass's bits.
            const bool pruned = bounds && prune_block(model, *bounds, anchors, anchors, ws.block, ws.prune,
                                                      ws.report.evaluated_pairs, options.prune_every_block);
            // The fold reads the transposed copy for the dimensions past whole SIMD vectors.
            if (bounds && (!pruned || fold_reads_columns)) transpose_block(model.columns, ws.block);
            if (!pruned) {
              log_densities(model, ws);
              normalise(K, row0, ws.block, ws.report);
              tie_rows(model, ws);
              ws.report.evaluated_pairs += static_cast<std::int64_t>(n) * K;
              if (anchors) record_anchors(K, ws.block, anchors);
            }
          }
          if (!(cache && mode == Mode::normalised) && mode != Mode::accumulate) log_densities(model, ws);
          if (mode == Mode::score && !resp) {  // log-likelihoods only: the log-densities stay
            row_logliks(K, row0, ws.block, ws.report);
            if (loglik)
              for (int b = 0; b < n; ++b) loglik[row0 + b] = ws.block.loglik[b];
            continue;
          }
          if (mode == Mode::normalised) {  // statistics only: the caller owns stats[0] and stats[1]
            normalise_external(K, given + row0, n, ws.block);
            if (weights) weigh_block(K, weights + row0, n, ws.block);
            fold_block(model, ws, tile);
            continue;
          }
          if (mode == Mode::score) {
            normalise(K, row0, ws.block, ws.report);
            tie_rows(model, ws);
            for (int b = 0; b < n; ++b) {
              if (loglik) loglik[row0 + b] = ws.block.loglik[b];
              if (resp)
                for (int k = 0; k < K; ++k) resp[(row0 + b) * K + k] = ws.block.resp(k)[b];
            }
            continue;
          }
          double block_loglik = 0.0;  // impossible (−inf) and NaN rows are excluded here and below
          if (weights) {
            double block_weight = 0.0;  // of the rows counted; a weight-0 row adds nothing (not 0 · inf)
            for (int b = 0; b < n; ++b) {
              const double ll = ws.block.loglik[b], w = weights[row0 + b];
              if (std::isnan(ll) || ll == -std::numeric_limits<double>::infinity() || w == 0.0) continue;
              block_loglik += w * ll;
              block_weight += w;
            }
            weigh_block(K, weights + row0, n, ws.block);
            tile[1] += block_weight;
          } else {
            for (int b = 0; b < n; ++b) {
              const double ll = ws.block.loglik[b];
              if (!std::isnan(ll) && ll != -std::numeric_limits<double>::infinity()) block_loglik += ll;
            }
            tile[1] += static_cast<double>(n);
          }
          tile[0] += block_loglik;
          fold_block(model, ws, tile);
        }
        reports[static_cast<std::size_t>(i)] = ws.report;
      }
      // The implicit barrier above ends the round; one thread adds its tiles in tile order.
#pragma omp single
      {
        for (std::int64_t i = 0; i < count; ++i) {
          if (mode != Mode::score) {
            const double* tile = tile_sums.data() + static_cast<std::size_t>(i) * S;
            for (std::size_t j = 0; j < S; ++j) stats[j] += tile[j];
          }
          total.merge(reports[static_cast<std::size_t>(i)]);
        }
      }
    }
  }
  // Unweighted, every row was counted above and the bad ones come off here (weighted, only the
  // good rows' weights were added).
  if (mode == Mode::accumulate && !weights) stats[1] -= static_cast<double>(total.impossible_rows + total.nan_rows);
  // The listed rows are ascending as they stand: rounds, their tiles and each tile's blocks are
  // merged in row order.
  return total;
}

}  // namespace

std::int64_t tiles_per_round(std::int64_t stat_size) {
  const std::int64_t budget = (std::int64_t{512} << 20) / (8 * std::max<std::int64_t>(stat_size, 1));
  return std::clamp<std::int64_t>(budget, 1, 64);
}

template <class T, class X>
PassReport accumulate(const ModelView<T>& model, const X* x, std::size_t rows, std::size_t ld, double* stats,
                      const Options& options) {
  return run_pass<T, X>(Mode::accumulate, model, x, rows, ld, stats, nullptr, nullptr, nullptr, options);
}

template <class T, class X>
PassReport score(const ModelView<T>& model, const X* x, std::size_t rows, std::size_t ld, double* loglik, double* resp,
                 const Options& options) {
  return run_pass<T, X>(Mode::score, model, x, rows, ld, nullptr, loglik, resp, nullptr, options);
}

template <class T, class X>
void accumulate_given(const ModelView<T>& model, const X* x, std::size_t rows, std::size_t ld, const double* resp,
                      double* stats, const Options& options) {
  run_pass<T, X>(Mode::given, model, x, rows, ld, stats, nullptr, nullptr, resp, options);
}

template <class T, class X>
void accumulate_labelled(const ModelView<T>& model, const X* x, std::size_t rows, std::size_t ld,
                         const std::size_t* labels, double* stats, const Options& options) {
  run_pass<T, X>(Mode::given, model, x, rows, ld, stats, nullptr, nullptr, nullptr, options, nullptr, labels);
}

template <class T, class X>
void accumulate_normalised(const ModelView<T>& model, const X* x, std::size_t rows, std::size_t ld,
                           const double* log_norm, double* stats, const Options& options) {
  run_pass<T, X>(Mode::normalised, model, x, rows, ld, stats, nullptr, nullptr, log_norm, options);
}

template <class T, class X>
PassReport score_keeping(const ModelView<T>& model, const X* x, std::size_t rows, std::size_t ld, double* loglik,
                         T* log_densities, const Options& options) {
  return run_pass<T, X>(Mode::score, model, x, rows, ld, nullptr, loglik, nullptr, nullptr, options, log_densities);
}

template <class T, class X>
void accumulate_normalised_kept(const ModelView<T>& model, const X* x, std::size_t rows, std::size_t ld,
                                T* log_densities, const double* log_norm, double* stats, const Options& options) {
  // The normalised pass turns each cached block into its responsibilities in place.
  run_pass<T, X>(Mode::normalised, model, x, rows, ld, stats, nullptr, nullptr, log_norm, options, log_densities);
}

#define MIXLE_INSTANTIATE(T, X)                                                                                        \
  template PassReport accumulate<T, X>(const ModelView<T>&, const X*, std::size_t, std::size_t, double*,               \
                                       const Options&);                                                                \
  template PassReport score<T, X>(const ModelView<T>&, const X*, std::size_t, std::size_t, double*, double*,           \
                                  const Options&);                                                                     \
  template void accumulate_given<T, X>(const ModelView<T>&, const X*, std::size_t, std::size_t, const double*,         \
                                       double*, const Options&);                                                       \
  template void accumulate_labelled<T, X>(const ModelView<T>&, const X*, std::size_t, std::size_t, const std::size_t*, \
                                          double*, const Options&);                                                    \
  template void accumulate_normalised<T, X>(const ModelView<T>&, const X*, std::size_t, std::size_t, const double*,    \
                                            double*, const Options&);                                                  \
  template PassReport score_keeping<T, X>(const ModelView<T>&, const X*, std::size_t, std::size_t, double*, T*,        \
                                          const Options&);                                                             \
  template void accumulate_normalised_kept<T, X>(const ModelView<T>&, const X*, std::size_t, std::size_t, T*,          \
                                                 const double*, double*, const Options&);
MIXLE_INSTANTIATE(float, float)
MIXLE_INSTANTIATE(float, double)
MIXLE_INSTANTIATE(double, float)
MIXLE_INSTANTIATE(double, double)
#undef MIXLE_INSTANTIATE

}  // namespace mixle::kernels::cpu
