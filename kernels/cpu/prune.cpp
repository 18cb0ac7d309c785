// Exact pruning of the CPU E-step (kernels/cpu/prune.hpp; the bound is derived in
// docs/numerics.md §8). Compiled without reassociation (kernels/CMakeLists.txt).
#include "kernels/cpu/prune.hpp"

#include "kernels/common/math.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

namespace mixle::kernels::cpu {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kU = 0x1p-53;  // float64's unit roundoff

/// How far below the row's anchor a pair must provably lie for the dense pass to flush it:
/// fl(l_j − max) < kFlushLogRatio holds for every l_j < l_anchor − kFlushGap, since
/// kFlushLogRatio − 2⁻¹⁶ is representable in both precisions (docs/numerics.md §8).
constexpr double kFlushGap = -static_cast<double>(kFlushLogRatio) + 0x1p-16;
/// The threshold's own rounding, relative to the anchor's log-density.
constexpr double kThresholdRounding = 0x1p-40;
/// What the pruned pass costs a row, in the dense pass's work per pair (its SIMD log-density,
/// normalisation and fold, measured on the bench's case): the anchor and the row's distances
/// about kRowCost, each candidate of the list the per-block test takes about kCandidateCost.
/// A block whose rows would cost more than K of them takes the dense pass.
constexpr std::size_t kRowCost = 8, kCandidateCost = 4;

template <class T>
std::span<const PartView<T>> parts_of(const ModelView<T>& model) {
  return {model.parts, static_cast<std::size_t>(model.num_parts)};
}

template <class T>
const T* mean_of(const PartView<T>& part, int k) {
  return part.coef + static_cast<std::size_t>(k) * part.coef_stride;
}

/// What the radius of one pair (j, anchor k) is solved from, all in float64: C, an upper bound
/// on lc_j + γ|lc_j|; Δ, a lower bound on ‖μ_k − μ_j‖ whitened by σ_j; ρ, an upper bound on
/// max_d σ_kd/σ_jd; c' = lc_k + γ|lc_k|, |lc_k|, and a = (1 − γ)/2.
struct PairBound {
  double C, delta, rho, c_anchor, abs_anchor, a;

  /// g(s) = U_j(s) − thr(s) for a row at whitened distance s from the anchor (docs/numerics.md
  /// §8): negative means the pair is flushed. Increasing in s. `margin` adds what covers this
  /// float64 evaluation's rounding, so that the value returned bounds the exact g from above.
  double g(double s, bool margin) const {
    const double gap = std::max(0.0, delta - rho * s);
    const double A = C - c_anchor + kFlushGap + 2 * kThresholdRounding * abs_anchor;
    const double v = A - a * (gap * gap) + (a + kThresholdRounding) * (s * s);
    if (!margin) return v;
    const double size = std::fabs(C) + std::fabs(c_anchor) + kFlushGap + (delta + rho * s) * (delta + rho * s) + s * s;
    return v + 64 * kU * (size + 1.0);
  }

  /// The largest s whose g(s) is verified negative (−1 for none; +inf for a weight-0 j).
  double radius() const {
    if (C == -kInf) return kInf;
    const double A = C - c_anchor + kFlushGap + 2 * kThresholdRounding * abs_anchor;
    const double g0 = A - a * delta * delta;
    if (!(g0 < 0.0)) return -1.0;
    double r;
    const double knee = rho > 0.0 ? delta / rho : kInf;  // past it the separation term is 0
    const double far = A < 0.0 ? std::sqrt(-A / (a + kThresholdRounding)) : -1.0;
    if (far >= knee || !std::isfinite(knee)) {
      r = far;
    } else {  // g(s) = g0 + β s + α s² on [0, knee], g0 < 0 < g(knee)
      const double alpha = a * (1.0 - rho * rho) + kThresholdRounding, beta = 2 * a * delta * rho;
      r = 2.0 * -g0 / (beta + std::sqrt(std::max(0.0, beta * beta - 4 * alpha * g0)));
    }
    for (int tries = 0; tries < 40 && r >= 0.0; ++tries) {
      if (g(r, true) < 0.0) return r;
      r = r * (1.0 - 0x1p-20) - 0x1p-30;
    }
    return -1.0;
  }
};

/// A lower bound on the exact Q = lc − L of a pair from its blocks' Δ, ρ and the row's distances
/// s to the anchor: ½ Σ_b max(0, Δ_b − ρ_b s_b)², every rounding taken downwards.
inline double separation(const double* delta, const double* rho, const double* s, std::size_t B) {
  double q = 0.0;
  for (std::size_t b = 0; b < B; ++b) {
    const double rs = rho[b] * s[b];
    double g = delta[b] - rs;
    g -= 2 * kU * (rs + std::fabs(g));  // both roundings above, and the product's
    // Without a branch (its outcome is data): max(g, 0)² — a NaN (ρ = inf, s = 0) stays NaN,
    // and a NaN bound proves nothing, so the pair is kept.
    g = g < 0.0 ? 0.0 : g;
    q += g * g;
  }
  return 0.5 * q * (1.0 - (static_cast<double>(B) + 2) * 2 * kU);
}

/// An upper bound on the computed log-density of a pair whose constant bound is C and whose
/// separation bound is q: C − (1 − γ)q, plus this float64 arithmetic's own rounding.
inline double upper_log_density(double C, double q, double gamma) {
  if (C == -kInf || q == kInf) return -kInf;
  return C - (1.0 - gamma) * q + 4 * kU * (std::fabs(C) + q);
}

}  // namespace

template <class T>
T diag_pair_log_density(const ModelView<T>& model, int k, const T* x) {
  T acc = model.log_const[k];
  for (const PartView<T>& part : parts_of(model)) {
    const T* mean = mean_of(part, k);
    const T* neg_half_prec = mean + part.dims;
    const T* xp = x + part.col_begin;
    for (int d = 0; d < part.dims; ++d) {
      const T t = xp[d] - mean[d];
      acc = std::fma(neg_half_prec[d], t * t, acc);
    }
  }
  return acc;
}

template <class T>
PruneBounds<T>::PruneBounds(const ModelView<T>& model) {
  K_ = model.components;
  if (K_ < 2 || model.row_offset || model.num_parts < 1) return;
  int dims = 0;
  for (const PartView<T>& part : parts_of(model)) {
    if (part.kind != PartKind::gaussian_diag) return;
    for (int k = 0; k < K_; ++k) {
      const T* m = mean_of(part, k);
      for (int d = 0; d < part.dims; ++d)
        if (!std::isfinite(m[d]) || !std::isfinite(m[part.dims + d]) || !(m[part.dims + d] < T(0))) return;
    }
    dims += part.dims;
  }
  for (int k = 0; k < K_; ++k)
    if (std::isnan(model.log_const[k]) || model.log_const[k] == std::numeric_limits<T>::infinity()) return;
  // γ_n = n·u/(1 − n·u), n = dims + 3 roundings a term (docs/numerics.md §8), rounded up.
  const double u = std::numeric_limits<T>::epsilon() / 2;
  const double n = dims + 3.0;
  if (n * u >= 0.25) return;
  gamma_ = n * u / (1.0 - n * u) * (1.0 + 16 * kU);
  std::vector<double> upper(static_cast<std::size_t>(K_)), anchor(upper.size());
  for (int k = 0; k < K_; ++k) {
    const double c = model.log_const[k];
    upper[static_cast<std::size_t>(k)] = c == -kInf ? -kInf : c + (gamma_ + 4 * kU) * std::fabs(c);
    anchor[static_cast<std::size_t>(k)] = c + gamma_ * std::fabs(c);
  }
  for (int p = 0; p < model.num_parts; ++p) {
    const int D = model.parts[p].dims;
    const int nb = std::min(kBlocksPerPart, D);
    for (int b = 0; b < nb; ++b) blocks_.push_back({p, D * b / nb, D * (b + 1) / nb});
  }
  const std::size_t B = blocks_.size();
  L_ = std::min(kListed, K_ - 1);
  R_ = std::min(kRefined, L_);
  refined_const_.assign(static_cast<std::size_t>(K_) * R_, 0.0);
  refined_delta_.assign(refined_const_.size() * B, 0.0);
  refined_rho_.assign(refined_delta_.size(), 0.0);
  index_.assign(static_cast<std::size_t>(K_) * L_, 0);
  radius_.assign(index_.size(), 0.0);
  unlisted_.assign(static_cast<std::size_t>(K_), kInf);

  // O(K²·D): worth threads only for large models (a team costs more than a small table).
  const bool threaded = static_cast<double>(K_) * K_ * dims > 4e6;
#pragma omp parallel if (threaded)
  {
    std::vector<double> radius(static_cast<std::size_t>(K_));
    std::vector<double> block_delta(static_cast<std::size_t>(K_) * B), block_rho(block_delta.size());
    std::vector<int> order(static_cast<std::size_t>(K_ - 1));
#pragma omp for schedule(dynamic, 8)
    for (int k = 0; k < K_; ++k) {
      for (int j = 0; j < K_; ++j) {
        if (j == k) continue;
        double d2 = 0.0, r2 = 0.0;
        for (std::size_t b = 0; b < B; ++b) {
          const DimBlock& blk = blocks_[b];
          const PartView<T>& part = model.parts[blk.part];
          const T* mj = mean_of(part, j);
          const T* mk = mean_of(part, k);
          double bd2 = 0.0, br2 = 0.0;
          for (int d = blk.d0; d < blk.d1; ++d) {
            const double hj = mj[part.dims + d], hk = mk[part.dims + d];
            const double diff = static_cast<double>(mk[d]) - static_cast<double>(mj[d]);
            bd2 += (-2.0 * hj) * (diff * diff);  // −2h = 1/var, exact
            br2 = std::max(br2, hj / hk);        // (σ_k/σ_j)²
          }
          const double bdl = std::sqrt(bd2) * (1.0 - (blk.d1 - blk.d0 + 6) * 2 * kU);
          const double brh = std::sqrt(br2) * (1.0 + 6 * 2 * kU);
          block_delta[static_cast<std::size_t>(j) * B + b] = std::isnan(bdl) ? 0.0 : bdl;
          block_rho[static_cast<std::size_t>(j) * B + b] = std::isnan(brh) ? kInf : brh;
          d2 += bd2;
          r2 = std::max(r2, br2);
        }
        const double delta = std::sqrt(d2) * (1.0 - (dims + 6) * 2 * kU);
        const double rho = std::sqrt(r2) * (1.0 + 6 * 2 * kU);
        const PairBound pair{upper[static_cast<std::size_t>(j)],
                             std::isnan(delta) ? 0.0 : delta,
                             std::isnan(rho) ? kInf : rho,
                             anchor[static_cast<std::size_t>(k)],
                             std::fabs(static_cast<double>(model.log_const[k])),
                             0.5 * (1.0 - gamma_)};
        radius[static_cast<std::size_t>(j)] = pair.radius();
      }
      std::iota(order.begin(), order.begin() + k, 0);
      std::iota(order.begin() + k, order.end(), k + 1);
      const auto by_radius = [&](int a, int b) {
        const double ra = radius[static_cast<std::size_t>(a)], rb = radius[static_cast<std::size_t>(b)];
        return ra < rb || (ra == rb && a < b);
      };
      if (L_ < K_ - 1) std::nth_element(order.begin(), order.begin() + L_, order.end(), by_radius);
      std::sort(order.begin(), order.begin() + L_, by_radius);
      for (int i = 0; i < L_; ++i) {
        const int j = order[static_cast<std::size_t>(i)];
        index_[at(k) + i] = j;
        radius_[at(k) + i] = radius[static_cast<std::size_t>(j)];
        if (i >= R_) continue;
        refined_const_[static_cast<std::size_t>(k) * R_ + i] = upper[static_cast<std::size_t>(j)];
        std::copy_n(&block_delta[static_cast<std::size_t>(j) * B], B, &refined_delta_[refined_at(k, i)]);
        std::copy_n(&block_rho[static_cast<std::size_t>(j) * B], B, &refined_rho_[refined_at(k, i)]);
      }
      for (std::size_t i = static_cast<std::size_t>(L_); i < order.size(); ++i)
        unlisted_[static_cast<std::size_t>(k)] =
            std::min(unlisted_[static_cast<std::size_t>(k)], radius[static_cast<std::size_t>(order[i])]);
    }
  }
  eligible_ = true;
}

/// diag_pair_log_density for four pairs at once (component k[i] at row x[i]): four independent
/// chains of the same operations, so a core overlaps their latencies.
template <class T>
void diag_pair_log_densities4(const ModelView<T>& model, const int* k, const T* const* x, T* out) {
  T acc[4];
  for (int i = 0; i < 4; ++i) acc[i] = model.log_const[k[i]];
  for (const PartView<T>& part : parts_of(model)) {
    const T* mean[4];
    for (int i = 0; i < 4; ++i) mean[i] = mean_of(part, k[i]);
    for (int d = 0; d < part.dims; ++d)
      for (int i = 0; i < 4; ++i) {
        const T t = x[i][part.col_begin + d] - mean[i][d];
        acc[i] = std::fma(mean[i][part.dims + d], t * t, acc[i]);
      }
  }
  for (int i = 0; i < 4; ++i) out[i] = acc[i];
}

/// Evaluates the pairs (comp[i], row[i]) of the block into logp[i], four at a time.
template <class T>
void evaluate_pairs(const ModelView<T>& model, const Block<T>& block, const int* comp, const std::uint8_t* row,
                    std::size_t n, T* logp) {
  std::size_t i = 0;
  for (; i + 4 <= n; i += 4) {
    const T* x[4] = {block.row(row[i]), block.row(row[i + 1]), block.row(row[i + 2]), block.row(row[i + 3])};
    diag_pair_log_densities4(model, comp + i, x, logp + i);
  }
  for (; i < n; ++i) logp[i] = diag_pair_log_density(model, comp[i], block.row(row[i]));
}

template <class T>
bool prune_block(const ModelView<T>& model, const PruneBounds<T>& bounds, const std::int32_t* anchors_in,
                 std::int32_t* anchors_out, Block<T>& block, PruneScratch<T>& scratch, std::int64_t& evaluated,
                 bool every_block) {
  const int K = bounds.components();
  const int rows = block.rows;
  const double gamma = bounds.gamma();
  // 1. Every row's anchor, evaluated exactly.
  auto& comp = scratch.comp;
  auto& row = scratch.row;
  auto& logp = scratch.logp;
  comp.clear();
  row.clear();
  for (int r = 0; r < rows; ++r) {
    const int anchor = anchors_in[r];
    if (anchor < 0 || anchor >= K) return false;
    comp.push_back(anchor);
    row.push_back(static_cast<std::uint8_t>(r));
  }
  logp.resize(comp.size());
  evaluate_pairs(model, block, comp.data(), row.data(), comp.size(), logp.data());
  // 2. Each row's whitened distance to its anchor, bounded above through the anchor's
  // log-density itself: by (P1), ½(1 − γ)s² ≤ lc + γ|lc| − l. No branch: the rows' distances
  // are ready before the list walks below test them.
  scratch.dist.resize(static_cast<std::size_t>(rows));
  for (int r = 0; r < rows; ++r) {
    const double c = model.log_const[comp[static_cast<std::size_t>(r)]], l = logp[static_cast<std::size_t>(r)];
    const double v = ((c - l) + gamma * std::fabs(c)) * (1.0 + 4 * kU) + 4 * kU * (std::fabs(c) + std::fabs(l));
    scratch.dist[static_cast<std::size_t>(r)] = std::sqrt(std::max(0.0, v) / (0.5 * (1.0 - gamma))) * (1.0 + 4 * kU);
  }
  // 3. Each row's prefix of its anchor's list: the components whose radii lie below the row's
  // distance (all K − 1 past the list's reach). A block whose rows keep many is cheaper dense.
  scratch.prefix.resize(static_cast<std::size_t>(rows));
  std::size_t candidates = 0;
  for (int r = 0; r < rows; ++r) {
    const int anchor = comp[static_cast<std::size_t>(r)];
    const double s = scratch.dist[static_cast<std::size_t>(r)];
    std::size_t prefix = static_cast<std::size_t>(K - 1);
    if (s <= bounds.unlisted_radius(anchor)) {
      const std::span<const double> radii = bounds.radii(anchor);
      prefix = 0;
      while (prefix < radii.size() && !(s <= radii[prefix])) ++prefix;
    }
    scratch.prefix[static_cast<std::size_t>(r)] = prefix;
    candidates += prefix;
  }
  if (!every_block && kRowCost * static_cast<std::size_t>(rows) + kCandidateCost * candidates >
                          static_cast<std::size_t>(rows) * static_cast<std::size_t>(K))
    return false;
  // 4. Of each prefix, the pairs the per-block bound does not prove zero either.
  const std::span<const typename PruneBounds<T>::DimBlock> dims = bounds.blocks();
  scratch.block_dist.resize(dims.size());
  std::size_t total_dims = 0;
  for (const PartView<T>& part : parts_of(model)) total_dims += static_cast<std::size_t>(part.dims);
  scratch.terms.resize(total_dims);
  scratch.first.assign(static_cast<std::size_t>(rows) + 1, 0);
  for (int r = 0; r < rows; ++r) {
    const int anchor = comp[static_cast<std::size_t>(r)];
    const T l0 = logp[static_cast<std::size_t>(r)];
    if (!std::isfinite(l0)) return false;
    const double s = scratch.dist[static_cast<std::size_t>(r)];
    scratch.first[static_cast<std::size_t>(r)] = comp.size();
    if (!(s <= bounds.unlisted_radius(anchor))) {  // past what the list covers: every pair
      for (int k = 0; k < K; ++k)
        if (k != anchor) {
          comp.push_back(k);
          row.push_back(static_cast<std::uint8_t>(r));
        }
      continue;
    }
    const std::span<const int> listed = bounds.listed(anchor);
    const std::size_t prefix = scratch.prefix[static_cast<std::size_t>(r)];
    if (prefix == 0) continue;
    // The row's distance to its anchor block by block (float64, rounded up), and the threshold
    // of (P3) from the anchor's computed log-density.
    // Each dimension's term first (elementwise, so it vectorises), then each block's sum in four
    // interleaved chains: the terms are ≥ 0, so any order rounds within the same bound.
    const T* x = block.row(r);
    double* term = scratch.terms.data();
    for (const PartView<T>& part : parts_of(model)) {
      const T* m = mean_of(part, anchor);
      const T* xp = x + part.col_begin;
      for (int d = 0; d < part.dims; ++d) {
        const double t = static_cast<double>(xp[d]) - static_cast<double>(m[d]);
        term[d] = (-2.0 * static_cast<double>(m[part.dims + d])) * (t * t);
      }
      term += part.dims;
    }
    std::size_t first_dim = 0;
    for (std::size_t b = 0; b < dims.size(); ++b) {
      const double* t = scratch.terms.data() + first_dim + static_cast<std::size_t>(dims[b].d0);
      const int width = dims[b].d1 - dims[b].d0;
      double a[4] = {0.0, 0.0, 0.0, 0.0};
      int d = 0;
      for (; d + 4 <= width; d += 4)
        for (int i = 0; i < 4; ++i) a[i] += t[d + i];
      for (; d < width; ++d) a[0] += t[d];
      scratch.block_dist[b] = std::sqrt((a[0] + a[1]) + (a[2] + a[3])) * (1.0 + (width + 6) * 2 * kU);
      if (b + 1 == dims.size() || dims[b + 1].part != dims[b].part)
        first_dim += static_cast<std::size_t>(model.parts[dims[b].part].dims);
    }
    const double thr = static_cast<double>(l0) - kFlushGap - kThresholdRounding * std::fabs(static_cast<double>(l0));
    const std::size_t refined = std::min(prefix, static_cast<std::size_t>(bounds.refined()));
    for (std::size_t i = 0; i < prefix; ++i) {
      if (i < refined) {
        const int at = static_cast<int>(i);
        const double q = separation(bounds.refined_delta(anchor, at), bounds.refined_rho(anchor, at),
                                    scratch.block_dist.data(), dims.size());
        if (upper_log_density(bounds.refined_const(anchor, at), q, gamma) < thr) continue;
      }
      comp.push_back(listed[i]);
      row.push_back(static_cast<std::uint8_t>(r));
    }
  }
  scratch.first[static_cast<std::size_t>(rows)] = comp.size();
  logp.resize(comp.size());
  evaluate_pairs(model, block, comp.data() + rows, row.data() + rows, comp.size() - rows, logp.data() + rows);
  // 5. Each row normalised exactly as normalise() does it: the maximum, then the exp sum in
  // component order (a pruned pair would add +0), one reciprocal.
  for (int k = 0; k < K; ++k) std::fill_n(block.logp(k), kBlockRows, T(0));
  block.nonzero_rows.resize(static_cast<std::size_t>(K) * kBlockRows);
  block.nonzero_count.assign(static_cast<std::size_t>(K), 0);
  auto& order = scratch.order;
  const T one = exp_nonpositive(T(0));
  for (int r = 0; r < rows; ++r) {
    order.clear();
    order.push_back(static_cast<std::size_t>(r));
    for (std::size_t i = scratch.first[static_cast<std::size_t>(r)]; i < scratch.first[static_cast<std::size_t>(r) + 1];
         ++i)
      order.push_back(i);
    std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return comp[a] < comp[b]; });
    T mx = -std::numeric_limits<T>::infinity();
    int best = comp[static_cast<std::size_t>(r)];  // the first component of the largest log-density
    for (const std::size_t i : order) {
      if (!std::isfinite(logp[i])) return false;
      if (logp[i] > mx) {
        mx = logp[i];
        best = comp[i];
      }
    }
    T sum = T(0);
    for (const std::size_t i : order) {
      // exp_nonpositive's own values where it is cheapest to know them: +0 past the flush, and
      // exp_nonpositive(0) at the maximum.
      const T d = logp[i] - mx;
      logp[i] = d < static_cast<T>(kFlushLogRatio) ? T(0) : d == T(0) ? one : exp_nonpositive(d);
      sum += logp[i];
    }
    const T inv = T(1) / sum;
    for (const std::size_t i : order) {
      const T resp = logp[i] * inv;
      if (resp == T(0)) continue;
      const std::size_t k = static_cast<std::size_t>(comp[i]);
      block.lane(comp[i], r) = resp;
      block.nonzero_rows[k * kBlockRows + static_cast<std::size_t>(block.nonzero_count[k]++)] =
          static_cast<std::uint8_t>(r);
    }
    // log(1) is +0 exactly: the row with one non-zero pair needs no logarithm.
    block.loglik[static_cast<std::size_t>(r)] =
        static_cast<double>(mx) + (sum == T(1) ? 0.0 : std::log(static_cast<double>(sum)));
    anchors_out[r] = best;
  }
  block.sparse = true;
  evaluated += static_cast<std::int64_t>(comp.size());
  return true;
}

template class PruneBounds<float>;
template class PruneBounds<double>;
template float diag_pair_log_density<float>(const ModelView<float>&, int, const float*);
template double diag_pair_log_density<double>(const ModelView<double>&, int, const double*);
template bool prune_block<float>(const ModelView<float>&, const PruneBounds<float>&, const std::int32_t*, std::int32_t*,
                                 Block<float>&, PruneScratch<float>&, std::int64_t&, bool);
template bool prune_block<double>(const ModelView<double>&, const PruneBounds<double>&, const std::int32_t*,
                                  std::int32_t*, Block<double>&, PruneScratch<double>&, std::int64_t&, bool);

}  // namespace mixle::kernels::cpu
