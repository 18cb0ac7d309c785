// The E-step + M-step of every family together, K = 3, against a naive float64 reference
// built from predict_proba: the kernels' accumulate pass (tiles, blocks, active components,
// shifts) must give the responsibility-weighted moments of the scoring pass.
#include "engine_test_util.hpp"

#include <mixle/fit.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

namespace mixle {
namespace {

using test::make_part;

Model mixed_truth() {
  Model m;
  m.weights = {0.2, 0.3, 0.5};
  Part g = make_part(Family::gaussian_diag, 0, 2);
  g.mean = {0, 0, 2, 1, -1, 3};
  g.var = {1, 2, 0.5, 1, 2, 1};
  Part f = make_part(Family::gaussian_full, 2, 4);
  f.mean = {5, 5, 6, 4, 4, 6};
  f.cov = {2, 1, 1, 2, 1, -0.5, -0.5, 1, 3, 0, 0, 0.5};
  Part c = make_part(Family::categorical, 4, 6, 3);
  c.prob = {0.6, 0.3, 0.1, 0.2, 0.2, 0.6, 0.1, 0.8, 0.1, 0.3, 0.4, 0.3, 0.3, 0.3, 0.4, 0.7, 0.2, 0.1};
  Part po = make_part(Family::poisson, 6, 7);
  po.rate = {1.0, 4.0, 9.0};
  Part e = make_part(Family::exponential, 7, 8);
  e.rate = {0.5, 1.0, 3.0};
  Part b = make_part(Family::bernoulli, 8, 10);
  b.prob = {0.1, 0.9, 0.5, 0.5, 0.8, 0.3};
  m.parts = {g, f, c, po, e, b};
  return m;
}

void check_against_reference(const std::string& precision, int threads, double rel_tol) {
  SCOPED_TRACE(precision + " threads " + std::to_string(threads));
  const Model truth = mixed_truth();
  const std::size_t N = 5003, K = 3, C = 10;  // not a multiple of the 128-row block or 2048-row tile
  const Dataset data = sample(truth, N, 17);
  // Start from a perturbed model so the shifts (previous means) differ from the new means.
  Model init = truth;
  for (double& v : init.parts[0].mean) v += 0.5;
  for (double& v : init.parts[1].mean) v -= 0.25;
  constexpr double kReg = 1e-3, kPseudo = 0.25, kFloor = 1e-6;
  FitOptions o;
  o.init = InitMethod::model;
  o.init_model = init;
  o.max_iter = 1;
  o.precision = precision;
  o.threads = threads;
  o.reg_covar = kReg;
  o.pseudo_count = kPseudo;
  o.rate_floor = kFloor;
  const Model got = fit(data, o).model;

  const auto resp = predict_proba(init, data, "cpu", 1, "fp64");
  std::vector<double> mass(K, 0.0);
  for (std::size_t i = 0; i < N; ++i)
    for (std::size_t k = 0; k < K; ++k) mass[k] += resp[i * K + k];
  auto near = [&](double got_v, double want, const char* what, std::size_t k, std::size_t j) {
    EXPECT_NEAR(got_v, want, rel_tol * std::max(1.0, std::abs(want))) << what << " k=" << k << " j=" << j;
  };
  auto weighted_mean = [&](std::size_t k, auto f) {
    double s = 0.0;
    for (std::size_t i = 0; i < N; ++i) s += resp[i * K + k] * f(i);
    return s / mass[k];
  };
  for (std::size_t k = 0; k < K; ++k) {
    near(got.weights[k], mass[k] / static_cast<double>(N), "weight", k, 0);
    // gaussian_diag
    for (std::size_t d = 0; d < 2; ++d) {
      const double m = weighted_mean(k, [&](std::size_t i) { return data.at(i, d); });
      const double v = weighted_mean(k, [&](std::size_t i) { return (data.at(i, d) - m) * (data.at(i, d) - m); });
      near(got.parts[0].mean[k * 2 + d], m, "diag mean", k, d);
      near(got.parts[0].var[k * 2 + d], v + kReg, "diag var", k, d);
    }
    // gaussian_full
    double m[2];
    for (std::size_t d = 0; d < 2; ++d) {
      m[d] = weighted_mean(k, [&](std::size_t i) { return data.at(i, 2 + d); });
      near(got.parts[1].mean[k * 2 + d], m[d], "full mean", k, d);
    }
    for (std::size_t a = 0; a < 2; ++a)
      for (std::size_t b = 0; b < 2; ++b) {
        const double cv =
            weighted_mean(k, [&](std::size_t i) { return (data.at(i, 2 + a) - m[a]) * (data.at(i, 2 + b) - m[b]); });
        near(got.parts[1].cov[k * 4 + a * 2 + b], cv + (a == b ? kReg : 0.0), "full cov", k, a * 2 + b);
      }
    // categorical
    for (std::size_t d = 0; d < 2; ++d)
      for (std::size_t v = 0; v < 3; ++v) {
        const double count = mass[k] * weighted_mean(k, [&](std::size_t i) {
                               return data.at(i, 4 + d) == static_cast<double>(v) ? 1.0 : 0.0;
                             });
        near(got.parts[2].prob[(k * 2 + d) * 3 + v], (count + kPseudo) / (mass[k] + 3 * kPseudo), "categorical", k,
             d * 3 + v);
      }
    // poisson, exponential, bernoulli
    near(got.parts[3].rate[k], std::max(weighted_mean(k, [&](std::size_t i) { return data.at(i, 6); }), kFloor),
         "poisson", k, 0);
    near(got.parts[4].rate[k], 1.0 / std::max(weighted_mean(k, [&](std::size_t i) { return data.at(i, 7); }), kFloor),
         "exponential", k, 0);
    for (std::size_t d = 0; d < 2; ++d) {
      const double ones = mass[k] * weighted_mean(k, [&](std::size_t i) { return data.at(i, 8 + d); });
      near(got.parts[5].prob[k * 2 + d], (ones + kPseudo) / (mass[k] + 2 * kPseudo), "bernoulli", k, d);
    }
  }
}

// fp64: the same sums in another order (blocks, tiles) over 5003 rows: ~1e-13 relative.
constexpr double kFp64RelTol = 1e-10;
// fp32: log-densities and responsibilities in float32 (relative error ~1e-6 per row,
// exp of log-densities of magnitude ~20 amplifies it to ~1e-5) and float32 block sums.
constexpr double kFp32RelTol = 2e-4;

TEST(EngineHand, MixedMStepMatchesNaiveReferenceFp64) {
  check_against_reference("fp64", 1, kFp64RelTol);
  check_against_reference("fp64", 2, kFp64RelTol);
}

TEST(EngineHand, MixedMStepMatchesNaiveReferenceFp32) { check_against_reference("fp32", 2, kFp32RelTol); }

// gaussian_diag wide enough for the vectorised statistics loops — lane groups of 8 doubles or
// 16 floats, four groups per pass over the rows — to make several passes and leave a tail:
// D = 83 (fp64: passes at columns 0, 32, 64; fp32: 0, 64; 3 tail columns), K = 4, against the
// same naive reference.
void check_wide_diag(const std::string& precision, double rel_tol) {
  SCOPED_TRACE(precision);
  constexpr std::size_t N = 3001, K = 4, D = 83;
  Model truth;
  truth.weights = {0.1, 0.2, 0.3, 0.4};
  Part g = make_part(Family::gaussian_diag, 0, D);
  g.mean.resize(K * D);
  g.var.resize(K * D);
  for (std::size_t k = 0; k < K; ++k)
    for (std::size_t d = 0; d < D; ++d) {
      g.mean[k * D + d] = 3.0 * static_cast<double>(k) + 0.1 * static_cast<double>(d % 5) - 4.0;
      g.var[k * D + d] = 0.5 + 0.05 * static_cast<double>((k + d) % 7);
    }
  truth.parts = {g};
  const Dataset data = sample(truth, N, 29);
  Model init = truth;
  for (std::size_t j = 0; j < K * D; ++j) init.parts[0].mean[j] += 0.3 * ((j % 3) == 0 ? 1.0 : -1.0);
  constexpr double kReg = 1e-4;
  FitOptions o;
  o.init = InitMethod::model;
  o.init_model = init;
  o.max_iter = 1;
  o.precision = precision;
  o.threads = 2;
  o.reg_covar = kReg;
  const Model got = fit(data, o).model;

  const auto resp = predict_proba(init, data, "cpu", 1, "fp64");
  for (std::size_t k = 0; k < K; ++k) {
    double mass = 0.0;
    for (std::size_t i = 0; i < N; ++i) mass += resp[i * K + k];
    for (std::size_t d = 0; d < D; ++d) {
      double m = 0.0;
      for (std::size_t i = 0; i < N; ++i) m += resp[i * K + k] * data.at(i, d);
      m /= mass;
      double v = 0.0;
      for (std::size_t i = 0; i < N; ++i) v += resp[i * K + k] * (data.at(i, d) - m) * (data.at(i, d) - m);
      v = v / mass + kReg;
      EXPECT_NEAR(got.parts[0].mean[k * D + d], m, rel_tol * std::max(1.0, std::abs(m))) << "k=" << k << " d=" << d;
      EXPECT_NEAR(got.parts[0].var[k * D + d], v, rel_tol * std::max(1.0, v)) << "k=" << k << " d=" << d;
    }
  }
}

TEST(EngineHand, WideDiagMStepMatchesNaiveReference) {
  check_wide_diag("fp64", kFp64RelTol);
  check_wide_diag("fp32", kFp32RelTol);
}

// gaussian_full wide enough for the statistics' 4×4 register tiles of (i, j ≤ i) to come whole
// and partial: D = 11 (tiles at 0, 4, 8; the last row and column of tiles partial), K = 3,
// correlated columns, against the naive reference.
void check_wide_full(const std::string& precision, double rel_tol) {
  SCOPED_TRACE(precision);
  constexpr std::size_t N = 2003, K = 3, D = 11;
  Model truth;
  truth.weights = {0.3, 0.3, 0.4};
  Part f = make_part(Family::gaussian_full, 0, D);
  f.mean.resize(K * D);
  f.cov.assign(K * D * D, 0.0);
  for (std::size_t k = 0; k < K; ++k)
    for (std::size_t i = 0; i < D; ++i) {
      f.mean[k * D + i] = 4.0 * static_cast<double>(k) + 0.2 * static_cast<double>(i % 4);
      for (std::size_t j = 0; j < D; ++j)  // 0.3 everywhere plus a diagonal ≥ 0.5: positive definite
        f.cov[(k * D + i) * D + j] = 0.3 + (i == j ? 0.5 + 0.1 * static_cast<double>((i + k) % 5) : 0.0);
    }
  truth.parts = {f};
  const Dataset data = sample(truth, N, 31);
  Model init = truth;
  for (std::size_t j = 0; j < K * D; ++j) init.parts[0].mean[j] += 0.2 * ((j % 2) == 0 ? 1.0 : -1.0);
  constexpr double kReg = 1e-4;
  FitOptions o;
  o.init = InitMethod::model;
  o.init_model = init;
  o.max_iter = 1;
  o.precision = precision;
  o.threads = 2;
  o.reg_covar = kReg;
  const Model got = fit(data, o).model;

  const auto resp = predict_proba(init, data, "cpu", 1, "fp64");
  for (std::size_t k = 0; k < K; ++k) {
    double mass = 0.0;
    for (std::size_t r = 0; r < N; ++r) mass += resp[r * K + k];
    std::vector<double> m(D, 0.0);
    for (std::size_t i = 0; i < D; ++i) {
      for (std::size_t r = 0; r < N; ++r) m[i] += resp[r * K + k] * data.at(r, i);
      m[i] /= mass;
      EXPECT_NEAR(got.parts[0].mean[k * D + i], m[i], rel_tol * std::max(1.0, std::abs(m[i])))
          << "k=" << k << " i=" << i;
    }
    for (std::size_t i = 0; i < D; ++i)
      for (std::size_t j = 0; j < D; ++j) {
        double c = 0.0;
        for (std::size_t r = 0; r < N; ++r) c += resp[r * K + k] * (data.at(r, i) - m[i]) * (data.at(r, j) - m[j]);
        c = c / mass + (i == j ? kReg : 0.0);
        EXPECT_NEAR(got.parts[0].cov[(k * D + i) * D + j], c, rel_tol * std::max(1.0, std::abs(c)))
            << "k=" << k << " i=" << i << " j=" << j;
      }
  }
}

TEST(EngineHand, WideFullMStepMatchesNaiveReference) {
  check_wide_full("fp64", kFp64RelTol);
  check_wide_full("fp32", kFp32RelTol);
}

// A rate component whose rows are all zero: the Poisson rate stops at the floor, the exponential
// rate at 1/floor (the mean of zeros is 0; neither rate may be 0, NaN or infinite).
TEST(EngineHand, AllZeroRowsHitTheRateFloors) {
  for (const std::string precision : {"fp64", "fp32"}) {
    SCOPED_TRACE(precision);
    constexpr std::size_t N = 700, K = 2;
    std::vector<double> zeros(N * 2, 0.0);
    const Dataset data = Dataset::view(zeros.data(), N, 2);
    Model init;
    init.weights = {0.5, 0.5};
    Part po = make_part(Family::poisson, 0, 1);
    po.rate = {1.0, 3.0};
    Part e = make_part(Family::exponential, 1, 2);
    e.rate = {0.5, 2.0};
    init.parts = {po, e};
    constexpr double kFloor = 1e-3;
    FitOptions o;
    o.init = InitMethod::model;
    o.init_model = init;
    o.max_iter = 1;
    o.precision = precision;
    o.rate_floor = kFloor;
    const Model got = fit(data, o).model;
    for (std::size_t k = 0; k < K; ++k) {
      EXPECT_EQ(got.parts[0].rate[k], kFloor) << k;
      EXPECT_DOUBLE_EQ(got.parts[1].rate[k], 1.0 / kFloor) << k;
    }
  }
}

// All-zero rows for the other families: each component's M-step falls back to its floor or
// prior, in both precisions — gaussian variances to reg_covar (diag, and the full covariance's
// diagonal, its off-diagonal to 0), bernoulli and categorical probabilities to the pseudo-count
// estimate (s + α)/(mass + Vα) with s = 0 except categorical code 0. Every row is identical, so
// every row has the same responsibilities and component k's mass is N·r_k.
TEST(EngineHand, AllZeroRowsGiveEveryFamilyItsFloorOrPrior) {
  for (const std::string precision : {"fp64", "fp32"}) {
    SCOPED_TRACE(precision);
    constexpr std::size_t N = 600, K = 2, V = 3;
    std::vector<double> zeros(N * 7, 0.0);
    const Dataset data = Dataset::view(zeros.data(), N, 7);
    Model init;
    init.weights = {0.3, 0.7};
    Part diag = make_part(Family::gaussian_diag, 0, 2);
    diag.mean = {0.0, 0.0, 0.5, -0.5};
    diag.var = {1.0, 1.0, 2.0, 2.0};
    Part full = make_part(Family::gaussian_full, 2, 4);
    full.mean = {0.25, 0.0, -0.5, 0.5};
    full.cov = {1.0, 0.0, 0.0, 1.0, 2.0, 0.5, 0.5, 1.0};
    Part bern = make_part(Family::bernoulli, 4, 6);
    bern.prob = {0.2, 0.4, 0.6, 0.8};
    Part cat = make_part(Family::categorical, 6, 7, V);
    cat.prob = {0.5, 0.25, 0.25, 0.2, 0.4, 0.4};
    init.parts = {diag, full, bern, cat};
    FitOptions o;
    o.init = InitMethod::model;
    o.init_model = init;
    o.max_iter = 1;
    o.precision = precision;
    o.reg_covar = 1e-2;
    o.pseudo_count = 0.5;
    const Model got = fit(data, o).model;
    const std::vector<double> resp = predict_proba(init, data, "cpu", 1, precision);
    // fp32: responsibilities and their sums carry float rounding (~1e-7 relative).
    const double tol = precision == "fp64" ? 1e-12 : 2e-6;
    for (std::size_t k = 0; k < K; ++k) {
      SCOPED_TRACE("component " + std::to_string(k));
      const double mass = static_cast<double>(N) * resp[k];
      for (std::size_t d = 0; d < 2; ++d) {
        EXPECT_NEAR(got.parts[0].mean[k * 2 + d], 0.0, tol);
        EXPECT_NEAR(got.parts[0].var[k * 2 + d], o.reg_covar, tol);
        EXPECT_NEAR(got.parts[1].mean[k * 2 + d], 0.0, tol);
        for (std::size_t e = 0; e < 2; ++e)
          EXPECT_NEAR(got.parts[1].cov[k * 4 + d * 2 + e], d == e ? o.reg_covar : 0.0, tol) << d << "," << e;
        EXPECT_NEAR(got.parts[2].prob[k * 2 + d], o.pseudo_count / (mass + 2.0 * o.pseudo_count), tol);
      }
      const double denom = mass + static_cast<double>(V) * o.pseudo_count;
      EXPECT_NEAR(got.parts[3].prob[k * V + 0], (mass + o.pseudo_count) / denom, tol);
      EXPECT_NEAR(got.parts[3].prob[k * V + 1], o.pseudo_count / denom, tol);
      EXPECT_NEAR(got.parts[3].prob[k * V + 2], o.pseudo_count / denom, tol);
    }
  }
}

TEST(EngineHand, InformationCriteria) {
  // BIC = −2 Σ log p + p ln N, AIC = −2 Σ log p + 2p with p = K−1 + K·(params per component).
  const Model m = mixed_truth();
  const Dataset data = sample(m, 1000, 5);
  double ll = 0.0;
  for (double v : score_samples(m, data)) ll += v;
  // Per component: diag 2·2, full 2 + 3, categorical 2·(3−1), poisson 1, exponential 1, bernoulli 2.
  const std::size_t p = 2 + 3 * (4 + 5 + 4 + 1 + 1 + 2);
  EXPECT_EQ(m.free_parameters(), p);
  constexpr double kTol = 1e-9;  // the same fp64 sum, recomputed
  EXPECT_NEAR(bic(m, data), -2.0 * ll + static_cast<double>(p) * std::log(1000.0), kTol * std::abs(ll));
  EXPECT_NEAR(aic(m, data), -2.0 * ll + 2.0 * static_cast<double>(p), kTol * std::abs(ll));
}

}  // namespace
}  // namespace mixle
