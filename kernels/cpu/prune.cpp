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
  L_ = std::min(kListed, K_ - 1);
  index_.assign(static_cast<std::size_t>(K_) * L_, 0);
  radius_.assign(index_.size(), 0.0);
  unlisted_.assign(static_cast<std::size_t>(K_), kInf);

  // O(K²·D): worth threads only for large models (a team costs more than a small table).
  const bool threaded = static_cast<double>(K_) * K_ * dims > 4e6;
#pragma omp parallel if (threaded)
  {
    std::vector<double> radius(static_cast<std::size_t>(K_));
    std::vector<int> order(static_cast<std::size_t>(K_ - 1));
#pragma omp for schedule(dynamic, 8)
    for (int k = 0; k < K_; ++k) {
      for (int j = 0; j < K_; ++j) {
        if (j == k) continue;
        double d2 = 0.0, r2 = 0.0;
        for (const PartView<T>& part : parts_of(model)) {
          const T* mj = mean_of(part, j);
          const T* mk = mean_of(part, k);
          for (int d = 0; d < part.dims; ++d) {
            const double hj = mj[part.dims + d], hk = mk[part.dims + d];
            const double diff = static_cast<double>(mk[d]) - static_cast<double>(mj[d]);
            d2 += (-2.0 * hj) * (diff * diff);  // −2h = 1/var, exact
            r2 = std::max(r2, hj / hk);         // (σ_k/σ_j)²
          }
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
        index_[at(k) + i] = order[static_cast<std::size_t>(i)];
        radius_[at(k) + i] = radius[static_cast<std::size_t>(order[static_cast<std::size_t>(i)])];
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
                 std::int32_t* anchors_out, Block<T>& block, PruneScratch<T>& scratch, std::int64_t& evaluated) {
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
  // 2. Each row's other pairs that the bound does not prove zero: those of its anchor's list
  // whose radius is below the row's whitened distance to the anchor, bounded above through the
  // anchor's log-density itself (by (P1), ½(1 − γ)s² ≤ lc + γ|lc| − l).
  scratch.first.assign(static_cast<std::size_t>(rows) + 1, 0);
  for (int r = 0; r < rows; ++r) {
    const int anchor = comp[static_cast<std::size_t>(r)];
    const T l0 = logp[static_cast<std::size_t>(r)];
    if (!std::isfinite(l0)) return false;
    const double c = model.log_const[anchor], l = l0;
    const double v = ((c - l) + gamma * std::fabs(c)) * (1.0 + 4 * kU) + 4 * kU * (std::fabs(c) + std::fabs(l));
    const double s = std::sqrt(std::max(0.0, v) / (0.5 * (1.0 - gamma))) * (1.0 + 4 * kU);
    scratch.first[static_cast<std::size_t>(r)] = comp.size();
    if (!(s <= bounds.unlisted_radius(anchor))) {  // past what the list covers: every pair
      for (int k = 0; k < K; ++k)
        if (k != anchor) {
          comp.push_back(k);
          row.push_back(static_cast<std::uint8_t>(r));
        }
      continue;
    }
    const std::span<const double> radii = bounds.radii(anchor);
    const std::span<const int> listed = bounds.listed(anchor);
    for (std::size_t i = 0; i < radii.size() && !(s <= radii[i]); ++i) {
      comp.push_back(listed[i]);
      row.push_back(static_cast<std::uint8_t>(r));
    }
  }
  scratch.first[static_cast<std::size_t>(rows)] = comp.size();
  logp.resize(comp.size());
  evaluate_pairs(model, block, comp.data() + rows, row.data() + rows, comp.size() - rows, logp.data() + rows);
  // 3. Each row normalised exactly as normalise() does it: the maximum, then the exp sum in
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
template bool prune_block<float>(const ModelView<float>&, const PruneBounds<float>&, const std::int32_t*,
                                 std::int32_t*, Block<float>&, PruneScratch<float>&, std::int64_t&);
template bool prune_block<double>(const ModelView<double>&, const PruneBounds<double>&, const std::int32_t*,
                                  std::int32_t*, Block<double>&, PruneScratch<double>&, std::int64_t&);

}  // namespace mixle::kernels::cpu
