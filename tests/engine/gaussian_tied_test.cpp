// gaussian_tied: one covariance shared by every component. Its M-step equals the pooled
// scatter Σ_k Σ_n r_nk (x_n − μ_k)(x_n − μ_k)ᵀ / N + reg_covar·I computed here by hand from the
// fitted responsibilities; a fit keeps every component's matrix identical, scores as
// gaussian_full with that matrix, counts D(D+1)/2 covariance parameters once, refuses unequal
// matrices in a model file and refuses component sharding.
#include "engine_test_util.hpp"

#include <mixle/data.hpp>
#include <mixle/fit.hpp>
#include <mixle/model.hpp>

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

namespace mixle {
namespace {

using test::expect_invalid_input;

constexpr std::size_t K = 3, D = 3;

/// 1800 rows: three clusters of different spreads and orientations (a tied fit must pool them).
Dataset clusters() {
  std::mt19937_64 rng(4);
  std::normal_distribution<double> z(0.0, 1.0);
  std::vector<double> v;
  for (int r = 0; r < 1800; ++r) {
    const int c = r % 3;
    const double a = z(rng), b = z(rng), e = z(rng);
    v.push_back(5.0 * c + (1.0 + c) * a);
    v.push_back(-3.0 * c + 0.5 * a + b);
    v.push_back(2.0 * c + 0.3 * e * (1 + c));
  }
  return Dataset::from_vector(v, 1800, D);
}

FitOptions tied_options() {
  FitOptions o;
  o.components = K;
  o.layout = "gaussian_tied";
  o.precision = "fp64";
  o.seed = 3;
  o.max_iter = 40;
  o.tol = 1e-10;
  o.threads = 1;
  return o;
}

TEST(GaussianTied, MStepIsThePooledScatterAndEveryComponentSharesIt) {
  const Dataset data = clusters();
  const FitOptions o = tied_options();
  const FitResult r = fit(data, o);
  const Part& p = r.model.parts.at(0);
  ASSERT_EQ(p.family, Family::gaussian_tied);
  for (std::size_t k = 1; k < K; ++k)
    for (std::size_t i = 0; i < D * D; ++i) EXPECT_EQ(p.cov[k * D * D + i], p.cov[i]) << "component " << k;
  // One more M-step by hand from the model's responsibilities: means, then the pooled scatter.
  const std::vector<double> resp = predict_proba(r.model, data, "cpu", 1, "fp64");
  std::vector<double> nk(K, 0.0), mean(K * D, 0.0), pooled(D * D, 0.0);
  for (std::size_t n = 0; n < data.rows(); ++n)
    for (std::size_t k = 0; k < K; ++k) {
      nk[k] += resp[n * K + k];
      for (std::size_t d = 0; d < D; ++d) mean[k * D + d] += resp[n * K + k] * data.at(n, d);
    }
  for (std::size_t k = 0; k < K; ++k)
    for (std::size_t d = 0; d < D; ++d) mean[k * D + d] /= nk[k];
  for (std::size_t n = 0; n < data.rows(); ++n)
    for (std::size_t k = 0; k < K; ++k)
      for (std::size_t i = 0; i < D; ++i)
        for (std::size_t j = 0; j < D; ++j)
          pooled[i * D + j] += resp[n * K + k] * (data.at(n, i) - mean[k * D + i]) * (data.at(n, j) - mean[k * D + j]);
  FitOptions step = o;
  step.init = InitMethod::model;
  step.init_model = r.model;
  step.max_iter = 1;
  const FitResult stepped = fit(data, step);
  const Part& next = stepped.model.parts.at(0);
  for (std::size_t i = 0; i < D; ++i)
    for (std::size_t j = 0; j < D; ++j) {
      const double want = pooled[i * D + j] / static_cast<double>(data.rows()) + (i == j ? o.reg_covar : 0.0);
      for (std::size_t k = 0; k < K; ++k)
        EXPECT_NEAR(next.cov[k * D * D + i * D + j], want, 1e-9 * (1.0 + std::abs(want)))
            << "component " << k << " (" << i << ", " << j << ")";
    }
  // The full fit's matrices differ by component: the tie is not a property of these data.
  FitOptions full = o;
  full.layout = "gaussian_full";
  const FitResult full_fit = fit(data, full);
  const Part& untied = full_fit.model.parts.at(0);
  EXPECT_GT(std::abs(untied.cov[0] - untied.cov[D * D]), 0.1);
}

TEST(GaussianTied, ScoresAsFullCountsTheSharedMatrixOnceAndRefusesSharding) {
  const Dataset data = clusters();
  FitOptions o = tied_options();
  o.max_iter = 5;
  const Model tied = fit(data, o).model;
  Model as_full = tied;
  as_full.parts[0].family = Family::gaussian_full;
  const auto a = score_samples(tied, data, "cpu", 1, "fp64"), b = score_samples(as_full, data, "cpu", 1, "fp64");
  for (std::size_t n = 0; n < data.rows(); ++n) EXPECT_EQ(a[n], b[n]) << "row " << n;
  EXPECT_EQ(tied.free_parameters(), (K - 1) + K * D + D * (D + 1) / 2);
  EXPECT_EQ(as_full.free_parameters(), (K - 1) + K * (D + D * (D + 1) / 2));
  FitOptions sharded = o;
  sharded.backend = "component_sharded";
  sharded.num_workers = 3;
  expect_invalid_input([&] { (void)fit(data, sharded); }, {"gaussian_tied", "share", "data parallel"});
  // A model file whose matrices differ is refused by name.
  Model unequal = tied;
  unequal.parts[0].cov[D * D + 4] *= 1.5;
  expect_invalid_input([&] { validate_model(unequal); }, {"cov[1] differs from cov[0]", "entry 4", "same matrix"});
  // The model file round trip keeps the family.
  EXPECT_EQ(model_from_json(model_to_json(tied)).parts[0].family, Family::gaussian_tied);
}

}  // namespace
}  // namespace mixle
