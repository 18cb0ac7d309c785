#include "engine/nearest_centres.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

namespace mixle::engine {

// Centres go eight at a time, their distances held in registers while the
// coordinates stream past; built for AVX2 too where the CPU has it (no FMA: the same bits).
MIXLE_WITH_AVX2_CLONE
std::size_t nearest_centre(const double* x, const double* centres_t, std::size_t K, std::size_t C) {
  constexpr std::size_t kLanes = 8;
  std::size_t arg = 0;
  double best = std::numeric_limits<double>::infinity();
  std::size_t k0 = 0;
  for (; k0 + kLanes <= K; k0 += kLanes) {
    double d2[kLanes] = {};
    for (std::size_t c = 0; c < C; ++c) {
      const double xc = x[c];
      const double* centre_c = centres_t + c * K + k0;
#pragma omp simd
      for (std::size_t j = 0; j < kLanes; ++j) d2[j] += (xc - centre_c[j]) * (xc - centre_c[j]);
    }
    for (std::size_t j = 0; j < kLanes; ++j)
      if (d2[j] < best) best = d2[j], arg = k0 + j;
  }
  for (std::size_t k = k0; k < K; ++k) {
    double d2 = 0.0;
    for (std::size_t c = 0; c < C; ++c) d2 += (x[c] - centres_t[c * K + k]) * (x[c] - centres_t[c * K + k]);
    if (d2 < best) best = d2, arg = k;
  }
  return arg;
}

namespace {

/// Points per screen block and centres per lane group (two 8-float vectors): 4 × 16 float32
/// accumulators live in eight vector registers while the coordinates stream past.
constexpr std::size_t kRows = 4;
constexpr std::size_t kGroup = 16;
/// Largest ‖x‖ or ‖c‖ the screen takes: its products and sums stay far inside float32's range.
constexpr double kScreenableNorm = 1e17;

using Lanes = float __attribute__((vector_size(32)));

/// e[r·P + k] = ‖ĉ_k‖² − 2 x̂_r·ĉ_k for the kRows points x (kRows × C, float32) and the P
/// centres by coordinate (C × P, P a multiple of kGroup), accumulated in float32. The four
/// points' accumulators are named one by one so that they stay in registers.
MIXLE_WITH_FMA_CLONE
void screen(const float* x, const float* centres_t, const float* norm2, std::size_t P, std::size_t C, float* e) {
  static_assert(kRows == 4 && kGroup == 16);
  const float *x0 = x, *x1 = x + C, *x2 = x + 2 * C, *x3 = x + 3 * C;
  for (std::size_t k0 = 0; k0 < P; k0 += kGroup) {
    Lanes a0 = {}, b0 = {}, a1 = {}, b1 = {}, a2 = {}, b2 = {}, a3 = {}, b3 = {};
    for (std::size_t c = 0; c < C; ++c) {
      Lanes lo, hi;
      std::memcpy(&lo, centres_t + c * P + k0, sizeof lo);
      std::memcpy(&hi, centres_t + c * P + k0 + 8, sizeof hi);
      a0 += x0[c] * lo, b0 += x0[c] * hi;
      a1 += x1[c] * lo, b1 += x1[c] * hi;
      a2 += x2[c] * lo, b2 += x2[c] * hi;
      a3 += x3[c] * lo, b3 += x3[c] * hi;
    }
    Lanes n_lo, n_hi;
    std::memcpy(&n_lo, norm2 + k0, sizeof n_lo);
    std::memcpy(&n_hi, norm2 + k0 + 8, sizeof n_hi);
    const Lanes out[kRows][2] = {{n_lo - 2.0f * a0, n_hi - 2.0f * b0},
                                 {n_lo - 2.0f * a1, n_hi - 2.0f * b1},
                                 {n_lo - 2.0f * a2, n_hi - 2.0f * b2},
                                 {n_lo - 2.0f * a3, n_hi - 2.0f * b3}};
    for (std::size_t r = 0; r < kRows; ++r) std::memcpy(e + r * P + k0, out[r], sizeof out[r]);
  }
}

/// x (kRows × C, float32) and each point's ‖x‖ (float64) from the kRows points of `points`.
MIXLE_WITH_FMA_CLONE
void load_points(const double* points, std::size_t C, float* x, double* norm) {
  for (std::size_t r = 0; r < kRows; ++r) {
    double n2 = 0.0;
    const double* p = points + r * C;
    float* xr = x + r * C;
#pragma omp simd reduction(+ : n2)
    for (std::size_t c = 0; c < C; ++c) {
      xr[c] = static_cast<float>(p[c]);
      n2 += p[c] * p[c];
    }
    norm[r] = std::sqrt(n2);
  }
}

/// The one centre whose screened value e[k] is within 2·slack of the least of e[0 … K), or K
/// when several are.
MIXLE_WITH_FMA_CLONE
std::size_t alone_near_least(const float* e, std::size_t K, double slack) {
  // The least in eight independent lanes (min is exact, so any order gives it): one running
  // minimum was a chain of K dependent instructions, the larger part of labelling a point.
  constexpr std::size_t kLanes = 8;
  constexpr float kInf = std::numeric_limits<float>::infinity();
  float lane[kLanes] = {kInf, kInf, kInf, kInf, kInf, kInf, kInf, kInf};
  std::size_t k0 = 0;
  for (; k0 + kLanes <= K; k0 += kLanes)
    for (std::size_t j = 0; j < kLanes; ++j) lane[j] = e[k0 + j] < lane[j] ? e[k0 + j] : lane[j];
  for (std::size_t j = 0; k0 + j < K; ++j) lane[j] = e[k0 + j] < lane[j] ? e[k0 + j] : lane[j];
  float least = kInf;
  for (const float v : lane) least = v < least ? v : least;
  const float reach = next_float_up(static_cast<float>(static_cast<double>(least) + 2.0 * slack));
  int within = 0, first = std::numeric_limits<int>::max();
#pragma omp simd reduction(+ : within) reduction(min : first)
  for (std::size_t k = 0; k < K; ++k) {
    const bool near = e[k] <= reach;
    within += static_cast<int>(near);
    first = std::min(first, near ? static_cast<int>(k) : std::numeric_limits<int>::max());
  }
  return within == 1 ? static_cast<std::size_t>(first) : K;
}

}  // namespace

float next_float_up(float v) {
  if (!(v < std::numeric_limits<float>::infinity())) return v;  // +inf (and NaN) stay
  if (v == 0.0f) return std::numeric_limits<float>::denorm_min();
  std::uint32_t bits;
  std::memcpy(&bits, &v, sizeof bits);
  bits = v > 0.0f ? bits + 1 : bits - 1;  // away from zero above it, towards zero below
  std::memcpy(&v, &bits, sizeof v);
  return v;
}

CentreSet::CentreSet(const std::vector<double>& centres, std::size_t K, std::size_t C)
    : K_(K),
      C_(C),
      padded_((K + kGroup - 1) / kGroup * kGroup),
      by_coord_(K * C),
      screen_t_(C * padded_, 0.0f),
      norm2_(padded_, std::numeric_limits<float>::infinity()),
      norm_(K) {
  for (std::size_t k = 0; k < K; ++k) {
    double n2 = 0.0, screened = 0.0;
    for (std::size_t c = 0; c < C; ++c) {
      const double v = centres[k * C + c];
      by_coord_[c * K + k] = v;
      screen_t_[c * padded_ + k] = static_cast<float>(v);
      n2 += v * v;
      const double f = static_cast<float>(v);
      screened += f * f;
    }
    norm_[k] = std::sqrt(n2);
    widest_norm_ = std::max(widest_norm_, norm_[k]);
    norm2_[k] = static_cast<float>(screened);
    if (!(norm_[k] <= kScreenableNorm)) screenable_ = false;  // also NaN
  }
  if (K > static_cast<std::size_t>(std::numeric_limits<int>::max())) screenable_ = false;  // int lane indices
}

std::size_t CentreSet::nearest(const double* points, std::size_t m, std::size_t* label) const {
  const std::size_t K = K_, C = C_, P = padded_;
  if (!screenable_ || K == 1) {
    for (std::size_t i = 0; i < m; ++i) label[i] = nearest_centre(points + i * C, by_coord_.data(), K, C);
    return K == 1 ? 0 : m;
  }
  const double beta = 2.0 * static_cast<double>(C + 6) * 0x1p-24;
  std::vector<float> x(kRows * C), e(kRows * P);
  std::vector<double> block(kRows * C);
  std::vector<double> bound(K), candidates_t;
  std::vector<std::size_t> candidates;
  std::size_t measured = 0;
  for (std::size_t i0 = 0; i0 < m; i0 += kRows) {
    const std::size_t n = std::min(kRows, m - i0);
    double norm[kRows];
    // Through a kRows-row copy, so that the last, partial block reads nothing past the points
    // (its rows past n hold zeros or earlier points, whose screened values are never read).
    std::copy(points + i0 * C, points + (i0 + n) * C, block.begin());
    load_points(block.data(), C, x.data(), norm);
    screen(x.data(), screen_t_.data(), norm2_.data(), P, C, e.data());
    for (std::size_t r = 0; r < n; ++r) {
      const double* point = points + (i0 + r) * C;
      const float* er = &e[r * P];
      std::size_t& out = label[i0 + r];
      candidates.clear();
      if (norm[r] <= kScreenableNorm) {  // not NaN or infinite either
        // First with one bound for every centre (the largest): usually one centre is within
        // twice that bound of the least screened value, and it is the nearest.
        const double widest = beta * (norm[r] + widest_norm_) * (norm[r] + widest_norm_);
        const std::size_t alone = alone_near_least(er, K, widest);
        if (alone < K) {
          out = alone;
          continue;
        }
        // Then with each centre's own bound.
        double reach = std::numeric_limits<double>::infinity();  // least screened value + its bound
        for (std::size_t k = 0; k < K; ++k) {
          bound[k] = beta * (norm[r] + norm_[k]) * (norm[r] + norm_[k]);
          reach = std::min(reach, static_cast<double>(er[k]) + bound[k]);
        }
        for (std::size_t k = 0; k < K; ++k)
          if (static_cast<double>(er[k]) - bound[k] <= reach) candidates.push_back(k);
      }
      if (candidates.size() == 1) {
        out = candidates[0];
        continue;
      }
      ++measured;
      if (candidates.empty()) {  // a value the screen cannot order: the rule over every centre
        out = nearest_centre(point, by_coord_.data(), K, C);
        continue;
      }
      const std::size_t nc = candidates.size();
      candidates_t.resize(nc * C);
      for (std::size_t c = 0; c < C; ++c)
        for (std::size_t j = 0; j < nc; ++j) candidates_t[c * nc + j] = by_coord_[c * K + candidates[j]];
      out = candidates[nearest_centre(point, candidates_t.data(), nc, C)];
    }
  }
  return measured;
}

}  // namespace mixle::engine
