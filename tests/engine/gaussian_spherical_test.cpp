// gaussian_spherical, checked against what it must equal: gaussian_diag with every column's
// variance equal, hand values, one EM step computed by hand from the responsibilities, recovery
// of a known mixture, the model file (one variance per component) and sampling.
#include "engine_test_util.hpp"

#include <mixle/error.hpp>
#include <mixle/fit.hpp>
#include <mixle/model.hpp>

#include <gtest/gtest.h>

#include <cmath>
#include <numbers>

namespace mixle {
namespace {

using test::make_part;

/// A spherical model of K = 2 components over 3 columns and its gaussian_diag equivalent.
Model spherical_model() {
  Model m{{0.35, 0.65}, {make_part(Family::gaussian_spherical, 0, 3)}};
  m.parts[0].mean = {-1.0, 0.5, 2.0, 3.0, -2.0, 0.25};
  m.parts[0].var = {0.7, 2.5};
  return m;
}

Model as_diag(const Model& spherical) {
  Model diag = spherical;
  Part& p = diag.parts[0];
  const std::size_t D = p.dims();
  p.family = Family::gaussian_diag;
  p.var.clear();
  for (double v : spherical.parts[0].var) p.var.insert(p.var.end(), D, v);
  return diag;
}

Dataset rows_of(const std::vector<double>& values, std::size_t cols) {
  return Dataset::from_vector(values, values.size() / cols, cols);
}

const std::vector<double> kRows = {0.0, 0.0, 0.0, -1.0, 0.5, 2.0, 3.5, -1.0, 1.0, 10.0, -10.0, 4.0, 2.0, 2.0, 2.0};

TEST(GaussianSpherical, IsGaussianDiagWithOneVariancePerComponent) {
  const Model s = spherical_model();
  const Dataset x = rows_of(kRows, 3);
  const auto a = score_samples(s, x);
  const auto b = score_samples(as_diag(s), x);
  for (std::size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], b[i], 1e-12 * (1 + std::abs(b[i]))) << i;
  const auto pa = predict_proba(s, x);
  const auto pb = predict_proba(as_diag(s), x);
  for (std::size_t i = 0; i < pa.size(); ++i) EXPECT_NEAR(pa[i], pb[i], 1e-12) << i;
  // Hand value: one component, var 2 over two columns at its mean: −(2/2)·log(2π·2).
  Model one{{1.0}, {make_part(Family::gaussian_spherical, 0, 2)}};
  one.parts[0].mean = {1.0, -1.0};
  one.parts[0].var = {2.0};
  EXPECT_NEAR(score_samples(one, rows_of({1.0, -1.0}, 2))[0], -std::log(4.0 * std::numbers::pi), 1e-14);
  EXPECT_EQ(one.free_parameters(), 3u);  // two means and one variance
  // Sampling too: the same seed draws the same rows and labels from both.
  std::vector<std::int64_t> labels_s, labels_d;
  const Dataset drawn_s = sample(s, 64, 11, &labels_s), drawn_d = sample(as_diag(s), 64, 11, &labels_d);
  EXPECT_EQ(labels_s, labels_d);
  for (std::size_t i = 0; i < 64 * 3; ++i) EXPECT_EQ(drawn_s.as<double>()[i], drawn_d.as<double>()[i]) << i;
}

// One EM iteration from a given model, by hand: responsibilities from the model, then each
// component's weighted means and its variance pooled over the columns, plus reg_covar.
TEST(GaussianSpherical, OneEmStepIsThePooledWeightedMoments) {
  const Model start = spherical_model();
  const Dataset x = rows_of(kRows, 3);
  const std::size_t N = x.rows(), D = 3, K = 2;
  const auto r = predict_proba(start, x);
  FitOptions o;
  o.init = InitMethod::model;
  o.init_model = start;
  o.layout = "gaussian_spherical";
  o.max_iter = 1;
  o.tol = 0.0;
  o.reg_covar = 1e-3;
  o.precision = "fp64";
  o.threads = 1;
  const Model got = fit(x, o).model;
  for (std::size_t k = 0; k < K; ++k) {
    double mass = 0.0;
    std::vector<double> mean(D, 0.0);
    for (std::size_t n = 0; n < N; ++n) {
      mass += r[n * K + k];
      for (std::size_t d = 0; d < D; ++d) mean[d] += r[n * K + k] * x.at(n, d);
    }
    double pooled = 0.0;
    for (std::size_t d = 0; d < D; ++d) {
      mean[d] /= mass;
      EXPECT_NEAR(got.parts[0].mean[k * D + d], mean[d], 1e-12) << k << "," << d;
      for (std::size_t n = 0; n < N; ++n) pooled += r[n * K + k] * (x.at(n, d) - mean[d]) * (x.at(n, d) - mean[d]);
    }
    EXPECT_NEAR(got.parts[0].var[k], pooled / (mass * D) + 1e-3, 1e-12) << k;
    EXPECT_NEAR(got.weights[k], mass / N, 1e-14) << k;
  }
}

TEST(GaussianSpherical, RecoversAKnownMixture) {
  Model truth{{0.3, 0.7}, {make_part(Family::gaussian_spherical, 0, 4)}};
  truth.parts[0].mean = {0, 0, 0, 0, 6, 6, -6, 6};
  truth.parts[0].var = {0.5, 3.0};
  const Dataset data = sample(truth, 20000, 9);
  FitOptions o;
  o.components = 2;
  o.layout = "gaussian_spherical";
  o.seed = 9;
  o.max_iter = 300;
  o.tol = 1e-8;
  o.precision = "fp64";
  const FitResult r = fit(data, o);
  EXPECT_TRUE(r.converged);
  test::expect_monotone(r.mean_loglik, 1e-9);
  const std::size_t j = r.model.parts[0].mean[0] < 3 ? 0 : 1;  // the component at the origin
  EXPECT_NEAR(r.model.weights[j], 0.3, 0.01);
  // 6000 rows × 4 columns pooled: the variance's relative standard error is √(2/24000) ≈ 1%.
  EXPECT_NEAR(r.model.parts[0].var[j] / 0.5, 1.0, 0.04);
  EXPECT_NEAR(r.model.parts[0].var[1 - j] / 3.0, 1.0, 0.04);
  for (std::size_t d = 0; d < 4; ++d)
    EXPECT_NEAR(r.model.parts[0].mean[(1 - j) * 4 + d], truth.parts[0].mean[4 + d], 0.05) << d;
}

TEST(GaussianSpherical, ModelFileHoldsOneVariancePerComponent) {
  const Model m = spherical_model();
  const std::string text = model_to_json(m, -1);
  EXPECT_NE(text.find("\"var\":[0.7,2.5]"), std::string::npos) << text;
  const Model back = model_from_json(text);
  EXPECT_EQ(back.parts[0].var, m.parts[0].var);
  EXPECT_EQ(back.parts[0].mean, m.parts[0].mean);
  // A K×D variance (gaussian_diag's shape) is refused, naming the field and the shape expected.
  std::string diag_shaped = text;
  diag_shaped.replace(diag_shaped.find("[0.7,2.5]"), 9, "[[0.7,0.7,0.7],[2.5,2.5,2.5]]");
  try {
    model_from_json(diag_shaped);
    FAIL() << "a K×D variance is refused";
  } catch (const InvalidInput& e) {
    EXPECT_NE(std::string(e.what()).find("var"), std::string::npos) << e.what();
  }
  Model nan_mean = m;
  nan_mean.parts[0].mean[4] = std::nan("");
  try {
    validate_model(nan_mean);
    FAIL() << "a NaN mean is refused";
  } catch (const InvalidInput& e) {
    EXPECT_NE(std::string(e.what()).find("mean[1][1]"), std::string::npos) << e.what();
  }
  Model bad = m;
  bad.parts[0].var[1] = 0.0;
  try {
    validate_model(bad);
    FAIL() << "a zero variance is refused";
  } catch (const InvalidInput& e) {
    EXPECT_NE(std::string(e.what()).find("var[1] = 0 is invalid"), std::string::npos) << e.what();
  }
}

TEST(GaussianSpherical, SamplesHaveTheComponentsVariance) {
  Model m{{1.0}, {make_part(Family::gaussian_spherical, 0, 2)}};
  m.parts[0].mean = {1.0, -3.0};
  m.parts[0].var = {4.0};
  const Dataset x = sample(m, 40000, 3);
  for (std::size_t d = 0; d < 2; ++d) {
    double s = 0.0, s2 = 0.0;
    for (std::size_t n = 0; n < x.rows(); ++n) s += x.at(n, d), s2 += x.at(n, d) * x.at(n, d);
    const double mean = s / x.rows(), var = s2 / x.rows() - mean * mean;
    EXPECT_NEAR(mean, m.parts[0].mean[d], 0.05) << d;  // standard error 0.01
    EXPECT_NEAR(var / 4.0, 1.0, 0.04) << d;            // relative standard error 0.7%
  }
}

}  // namespace
}  // namespace mixle
