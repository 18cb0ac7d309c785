// Shifted moments in float32, and bit-identical results for a seed across runs and threads.
#include "engine_test_util.hpp"

#include <mixle/fit.hpp>

#include <gtest/gtest.h>

#include <cmath>
#include <random>

namespace mixle {
namespace {

using test::make_part;

TEST(EngineShift, Float32LargeMeanVarianceIsAccurate) {
  // float32 data with mean 1e4 and standard deviation 1: an unshifted float32 Σx² − (Σx)²/N
  // would lose every digit (x² ≈ 1e8 has an ulp of 8). The fitted variance must match the
  // float64 population variance of the same float values.
  const std::size_t N = 20000;
  std::vector<float> values(N);
  std::mt19937_64 rng(42);
  std::normal_distribution<double> normal(1e4, 1.0);
  for (auto& v : values) v = static_cast<float>(normal(rng));
  double mean = 0.0;
  for (float v : values) mean += v;
  mean /= static_cast<double>(N);
  double var = 0.0;
  for (float v : values) var += (v - mean) * (v - mean);
  var /= static_cast<double>(N);

  FitOptions o;
  o.components = 1;
  o.precision = "fp32";
  o.reg_covar = 0.0;
  o.max_iter = 5;
  o.tol = 0.0;
  const FitResult r = fit(Dataset::from_vector(std::move(values), N, 1), o);
  const double fitted = r.model.parts[0].var[0];
  // Each (x − shift)² is rounded to float32 (2⁻²⁴ relative) and summed over 128-row blocks in
  // float32 before float64; ~1e-6 relative in total, and the shift error (float32 mean,
  // ulp 2⁻¹⁰ at 1e4) enters only squared. 1e-4 is a wide margin that still fails on any
  // cancellation (which gives errors of order 1).
  constexpr double kVarRelTol = 1e-4;
  EXPECT_GT(fitted, 0.0);
  EXPECT_NEAR(fitted / var, 1.0, kVarRelTol) << "fitted " << fitted << " float64 " << var;
  // The float32 shift is within its ulp of the float64 mean.
  constexpr double kMeanTol = 2e-3;
  EXPECT_NEAR(r.model.parts[0].mean[0], mean, kMeanTol);
}

TEST(EngineShift, Float32LargeMeanFullCovarianceIsAccurate) {
  const std::size_t N = 20000;
  std::vector<float> values(2 * N);
  std::mt19937_64 rng(43);
  std::normal_distribution<double> normal(0.0, 1.0);
  for (std::size_t i = 0; i < N; ++i) {
    const double a = normal(rng), b = normal(rng);
    values[2 * i] = static_cast<float>(1e4 + a);
    values[2 * i + 1] = static_cast<float>(-2e4 + 0.5 * a + b);
  }
  double m[2] = {0, 0};
  for (std::size_t i = 0; i < N; ++i) m[0] += values[2 * i], m[1] += values[2 * i + 1];
  m[0] /= N, m[1] /= N;
  double c[4] = {0, 0, 0, 0};
  for (std::size_t i = 0; i < N; ++i) {
    const double x = values[2 * i] - m[0], y = values[2 * i + 1] - m[1];
    c[0] += x * x, c[1] += x * y, c[2] += y * x, c[3] += y * y;
  }
  for (double& v : c) v /= N;
  FitOptions o;
  o.components = 1;
  o.layout = "gaussian_full";
  o.precision = "fp32";
  o.reg_covar = 0.0;
  o.max_iter = 5;
  o.tol = 0.0;
  const FitResult r = fit(Dataset::from_vector(std::move(values), N, 2), o);
  // As above: float32 products of shifted values, ~1e-6 relative; 1e-4 of the entries' scale (≥ 1).
  constexpr double kCovTol = 1e-4;
  for (int i = 0; i < 4; ++i) EXPECT_NEAR(r.model.parts[0].cov[i], c[i], kCovTol * std::max(1.0, std::abs(c[i]))) << i;
}

Dataset blob_data(std::size_t N, std::size_t D, std::uint64_t seed) {
  Model truth;
  Part p = make_part(Family::gaussian_diag, 0, D);
  for (std::size_t k = 0; k < 4; ++k) {
    truth.weights.push_back(0.25);
    for (std::size_t d = 0; d < D; ++d) {
      p.mean.push_back(3.0 * static_cast<double>(k) + 0.5 * static_cast<double>(d));
      p.var.push_back(1.0 + 0.5 * static_cast<double>(k));
    }
  }
  truth.parts = {p};
  return sample(truth, N, seed);
}

Dataset mixed_data(std::size_t N, std::uint64_t seed) {
  Model truth;
  Part g = make_part(Family::gaussian_diag, 0, 2);
  Part c = make_part(Family::categorical, 2, 3, 3);
  Part po = make_part(Family::poisson, 3, 4);
  for (std::size_t k = 0; k < 3; ++k) {
    truth.weights.push_back(1.0 / 3.0);
    g.mean.push_back(2.0 * static_cast<double>(k));
    g.mean.push_back(-1.0 * static_cast<double>(k));
    g.var.push_back(1.0);
    g.var.push_back(2.0);
    for (std::size_t v = 0; v < 3; ++v) c.prob.push_back(v == k ? 0.6 : 0.2);
    po.rate.push_back(3.0 + 2.0 * static_cast<double>(k));
  }
  truth.parts = {g, c, po};
  return sample(truth, N, seed);
}

std::string fit_json(const Dataset& data, const std::string& layout, int threads, std::size_t K = 4) {
  FitOptions o;
  o.components = K;
  o.layout = layout;
  o.seed = 1234;
  o.max_iter = 15;
  o.tol = 0.0;  // run every iteration: more chances for an order-dependent sum to differ
  o.threads = threads;
  o.precision = "fp32";
  return model_to_json(fit(data, o).model);
}

// ≥ 20k rows: the CPU kernels cut rows into 2048-row tiles, so ~10 tiles share 2 threads.
constexpr std::size_t kDeterminismRows = 24000;

TEST(EngineDeterminism, GaussianDiagSameSeedSameBytesAcrossRunsAndThreads) {
  const Dataset data = blob_data(kDeterminismRows, 3, 77);
  const std::string a = fit_json(data, "gaussian_diag", 2);
  EXPECT_EQ(a, fit_json(data, "gaussian_diag", 2));
  EXPECT_EQ(a, fit_json(data, "gaussian_diag", 1));
}

TEST(EngineDeterminism, GaussianFullSameSeedSameBytesAcrossRunsAndThreads) {
  const Dataset data = blob_data(kDeterminismRows, 3, 78);
  const std::string a = fit_json(data, "gaussian_full", 2);
  EXPECT_EQ(a, fit_json(data, "gaussian_full", 2));
  EXPECT_EQ(a, fit_json(data, "gaussian_full", 1));
}

TEST(EngineDeterminism, MixedRecordSameSeedSameBytesAcrossRunsAndThreads) {
  const Dataset data = mixed_data(kDeterminismRows, 79);
  const std::string layout = "gaussian_diag:0-2,categorical:2-3:3,poisson:3-4";
  const std::string a = fit_json(data, layout, 2, 3);
  EXPECT_EQ(a, fit_json(data, layout, 2, 3));
  EXPECT_EQ(a, fit_json(data, layout, 1, 3));
}

TEST(EngineDeterminism, SelectInitSameSeedSameBytes) {
  const Dataset data = blob_data(kDeterminismRows, 2, 80);
  FitOptions o;
  o.components = 4;
  o.init = InitMethod::select;
  o.init_p = 0.2;
  o.seed = 5;
  o.max_iter = 10;
  o.threads = 2;
  const std::string a = model_to_json(fit(data, o).model);
  o.threads = 1;
  EXPECT_EQ(a, model_to_json(fit(data, o).model));
  // A different seed gives a different start (the test would be vacuous otherwise).
  o.seed = 6;
  o.max_iter = 1;
  const std::string c = model_to_json(fit(data, o).model);
  o.seed = 5;
  EXPECT_NE(c, model_to_json(fit(data, o).model));
}

}  // namespace
}  // namespace mixle
