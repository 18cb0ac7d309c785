// The CPU kernels' passes over rows: accumulate (E-step statistics), score, accumulate_given.
#include "kernels/common/math.hpp"
#include "kernels/cpu/block.hpp"
#include "kernels/cpu/cpu_kernels.hpp"
#include "kernels/cpu/families/discrete.hpp"
#include "kernels/cpu/families/gaussian_diag.hpp"
#include "kernels/cpu/families/gaussian_full.hpp"
#include "kernels/cpu/families/positive.hpp"

#include <omp.h>

#include <algorithm>
#include <iterator>
#include <span>
#include <cmath>
#include <limits>
#include <numeric>
#include <vector>

namespace mixle::kernels {

void PassReport::merge(const PassReport& other) {
  impossible_rows += other.impossible_rows;
  nan_rows += other.nan_rows;
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

template <class T, class X>
void load_block(const ModelView<T>& model, const X* x, std::size_t ld, int n, Block<T>& block) {
  block.rows = n;
  const int C = model.columns;
  for (int b = 0; b < kBlockRows; ++b) {
    const X* row = x + static_cast<std::size_t>(b < n ? b : 0) * ld;
    T* xr = block.xr.data() + static_cast<std::size_t>(b) * C;
    for (int c = 0; c < C; ++c) {
      const T v = static_cast<T>(row[c]);
      xr[c] = v;
      block.xt[static_cast<std::size_t>(c) * kBlockRows + b] = v;
    }
  }
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

/// Turns log-densities into responsibilities row by row (log-sum-exp) and records each row's
/// log-likelihood. Rows that are −inf everywhere (impossible) or NaN get zero responsibility
/// and are reported; +inf ties share the row equally (the reference layer's rule, docs/design.md §6).
template <class T>
void normalise(int K, std::int64_t first_row, Block<T>& block, PassReport& report) {
  constexpr T kNegInf = -std::numeric_limits<T>::infinity();
  T mx[kBlockRows], sum[kBlockRows] = {};
  std::fill(std::begin(mx), std::end(mx), kNegInf);
  T nan_seen[kBlockRows] = {};  // non-zero where some component's log-density is NaN
  for (int k = 0; k < K; ++k) {
    const T* l = block.logp(k);
#pragma omp simd
    for (int b = 0; b < kBlockRows; ++b) {
      mx[b] = l[b] > mx[b] ? l[b] : mx[b];  // skips NaN, which nan_seen records instead
      nan_seen[b] = l[b] != l[b] ? T(1) : nan_seen[b];
    }
  }
  for (int k = 0; k < K; ++k) {
    T* l = block.logp(k);
#pragma omp simd
    for (int b = 0; b < kBlockRows; ++b) {
      const T e = exp_nonpositive(l[b] - mx[b]);
      l[b] = e;
      sum[b] += e;
    }
  }
  T inv[kBlockRows];
  bool special = false;
  for (int b = 0; b < kBlockRows; ++b) {
    const bool ok = b < block.rows && std::isfinite(mx[b]) && std::isfinite(sum[b]);
    inv[b] = ok ? T(1) / sum[b] : T(0);
    block.loglik[b] = ok ? static_cast<double>(mx[b]) + std::log(static_cast<double>(sum[b])) : 0.0;
    special |= !ok && b < block.rows;
  }
  for (int k = 0; k < K; ++k) {
    T* l = block.logp(k);
    // inv > 0 exactly for the normal rows (sum ≥ 1); the others — past block.rows, impossible,
    // NaN — get 0, not NaN · 0: a NaN row must fold nothing.
#pragma omp simd
    for (int b = 0; b < kBlockRows; ++b) l[b] = inv[b] > T(0) ? l[b] * inv[b] : T(0);
  }
  if (!special) return;
  for (int b = 0; b < block.rows; ++b) {
    const T m = mx[b];
    if (std::isfinite(m) && std::isfinite(sum[b])) continue;
    // Scores report impossible rows as −inf and NaN rows as NaN (component sharding combines a
    // row that is impossible under one shard with the others); sums skip both.
    block.loglik[b] = std::numeric_limits<double>::quiet_NaN();
    if (nan_seen[b] != T(0)) {
      ++report.nan_rows;
      if (report.num_listed < PassReport::kMaxListed) report.listed[report.num_listed++] = first_row + b;
      continue;
    }
    if (m == std::numeric_limits<T>::infinity()) {
      // +inf ties: the log-densities were overwritten; tie_rows re-derives which components
      // tie. Only reachable with degenerate parameters; the row's log-likelihood is +inf.
      block.loglik[b] = std::numeric_limits<double>::infinity();
      continue;
    }
    if (m == kNegInf) {
      block.loglik[b] = -std::numeric_limits<double>::infinity();
      ++report.impossible_rows;
    } else {
      ++report.nan_rows;
    }
    if (report.num_listed < PassReport::kMaxListed) report.listed[report.num_listed++] = first_row + b;
  }
}

/// Each row's log-likelihood (log-sum-exp of its log-densities) without touching the
/// log-densities: the same arithmetic as normalise(), so the same bits; impossible rows get −inf,
/// NaN rows NaN, rows with a +inf log-density +inf, and the first two are reported.
template <class T>
void row_logliks(int K, std::int64_t first_row, Block<T>& block, PassReport& report) {
  constexpr T kNegInf = -std::numeric_limits<T>::infinity();
  T mx[kBlockRows], sum[kBlockRows] = {}, nan_seen[kBlockRows] = {};
  std::fill(std::begin(mx), std::end(mx), kNegInf);
  for (int k = 0; k < K; ++k) {
    const T* l = block.logp(k);
#pragma omp simd
    for (int b = 0; b < kBlockRows; ++b) {
      mx[b] = l[b] > mx[b] ? l[b] : mx[b];
      nan_seen[b] = l[b] != l[b] ? T(1) : nan_seen[b];
    }
  }
  for (int k = 0; k < K; ++k) {
    const T* l = block.logp(k);
#pragma omp simd
    for (int b = 0; b < kBlockRows; ++b) sum[b] += exp_nonpositive(l[b] - mx[b]);
  }
  for (int b = 0; b < block.rows; ++b) {
    if (std::isfinite(mx[b]) && std::isfinite(sum[b])) {
      block.loglik[b] = static_cast<double>(mx[b]) + std::log(static_cast<double>(sum[b]));
      continue;
    }
    const bool nan = nan_seen[b] != T(0) || (mx[b] != kNegInf && mx[b] != -kNegInf);
    if (!nan && mx[b] == -kNegInf) {
      block.loglik[b] = std::numeric_limits<double>::infinity();
      continue;
    }
    block.loglik[b] = nan ? std::numeric_limits<double>::quiet_NaN() : -std::numeric_limits<double>::infinity();
    (nan ? report.nan_rows : report.impossible_rows) += 1;
    if (report.num_listed < PassReport::kMaxListed) report.listed[report.num_listed++] = first_row + b;
  }
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
          load_block(model, x + static_cast<std::size_t>(row0) * ld, ld, n, ws.block);
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
          if (!(cache && mode == Mode::normalised)) log_densities(model, ws);
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
          normalise(K, row0, ws.block, ws.report);
          tie_rows(model, ws);
          if (mode == Mode::score) {
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
