// Given initial parameters (scikit-learn's weights_init, means_init, precisions_init) replace
// what the initialisation draws, the rest stays drawn: for every Gaussian family, in every
// restart, so a fit from given means converges to the components in the order given. Wrong
// sizes, a precision that is not symmetric positive definite, a layout without one Gaussian part
// and given parameters beside a whole initial model are named.
#include "engine/initial_parameters.hpp"
#include "engine_test_util.hpp"

#include <mixle/data.hpp>
#include <mixle/fit.hpp>

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

namespace mixle {
namespace {

using test::expect_invalid_input;

Dataset two_clusters() {
  std::mt19937_64 rng(9);
  std::normal_distribution<double> z(0.0, 1.0);
  std::vector<double> v;
  for (int r = 0; r < 600; ++r) {
    const double c = r % 2 ? 6.0 : 0.0;
    v.push_back(c + z(rng));
    v.push_back(-c + 0.5 * z(rng));
  }
  return Dataset::from_vector(v, 600, 2);
}

/// A valid two-component model of `layout` for these data (one EM iteration).
Model some_model(const Dataset& data, const std::string& layout) {
  FitOptions o;
  o.components = 2;
  o.layout = layout;
  o.max_iter = 1;
  return fit(data, o).model;
}

TEST(InitialParameters, ReplaceOnlyWhatIsGivenForEveryGaussianFamily) {
  Model m;
  m.weights = {0.5, 0.5};
  Part p;
  p.col_begin = 0;
  p.col_end = 2;
  for (Family f : {Family::gaussian_diag, Family::gaussian_spherical, Family::gaussian_full, Family::gaussian_tied}) {
    SCOPED_TRACE(family_name(f));
    p.family = f;
    p.mean = {1, 2, 3, 4};
    p.var = f == Family::gaussian_diag
                ? std::vector<double>{1, 1, 1, 1}
                : (f == Family::gaussian_spherical ? std::vector<double>{1, 1} : std::vector<double>{});
    p.cov = f == Family::gaussian_full || f == Family::gaussian_tied ? std::vector<double>{1, 0, 0, 1, 1, 0, 0, 1}
                                                                     : std::vector<double>{};
    m.parts = {p};
    engine::InitialParameters given;
    given.precisions = f == Family::gaussian_diag        ? std::vector<double>{2, 4, 0.5, 0.25}
                       : f == Family::gaussian_spherical ? std::vector<double>{2, 0.5}
                       : f == Family::gaussian_full      ? std::vector<double>{2, 1, 1, 2, 4, 0, 0, 0.25}
                                                         : std::vector<double>{2, 1, 1, 2};
    Model out = m;
    engine::apply_initial_parameters(out, given);
    EXPECT_EQ(out.parts[0].mean, p.mean) << "means not given stay";
    EXPECT_EQ(out.weights, m.weights);
    const Part& q = out.parts[0];
    if (f == Family::gaussian_diag) EXPECT_EQ(q.var, (std::vector<double>{0.5, 0.25, 2, 4}));
    if (f == Family::gaussian_spherical) EXPECT_EQ(q.var, (std::vector<double>{0.5, 2}));
    if (f == Family::gaussian_full || f == Family::gaussian_tied) {
      // [[2, 1], [1, 2]]⁻¹ = [[2, −1], [−1, 2]] / 3
      const std::vector<double> inv = {2.0 / 3, -1.0 / 3, -1.0 / 3, 2.0 / 3};
      for (std::size_t i = 0; i < 4; ++i) EXPECT_NEAR(q.cov[i], inv[i], 1e-15) << i;
      const std::vector<double> second = f == Family::gaussian_full ? std::vector<double>{0.25, 0, 0, 4} : inv;
      for (std::size_t i = 0; i < 4; ++i) EXPECT_NEAR(q.cov[4 + i], second[i], 1e-15) << i;
    }
    given.precisions.clear();
    given.means = {0, 0, 9, 9};
    given.weights = {0.25, 0.75};
    out = m;
    engine::apply_initial_parameters(out, given);
    EXPECT_EQ(out.parts[0].mean, given.means);
    EXPECT_EQ(out.weights, given.weights);
    EXPECT_EQ(out.parts[0].var, p.var);
    EXPECT_EQ(out.parts[0].cov, p.cov);
  }
}

TEST(InitialParameters, AFitStartsFromTheGivenMeansInEveryRestart) {
  const Dataset data = two_clusters();
  FitOptions o;
  o.components = 2;
  o.layout = "gaussian_diag";
  o.precision = "fp64";
  o.max_iter = 30;
  o.tol = 1e-9;
  o.init_means = {6, -6, 0, 0};  // the clusters, in the order given
  o.init_weights = {0.5, 0.5};
  for (std::uint64_t seed : {0u, 1u, 2u}) {
    o.seed = seed;
    o.n_init = 2;
    const Model m = fit(data, o).model;
    EXPECT_NEAR(m.parts[0].mean[0], 6.0, 0.3) << "component 0 starts at the given mean, seed " << seed;
    EXPECT_NEAR(m.parts[0].mean[2], 0.0, 0.3) << seed;
  }
  // Means given in the other order give the other labelling: the given values are used.
  o.init_means = {0, 0, 6, -6};
  EXPECT_NEAR(fit(data, o).model.parts[0].mean[0], 0.0, 0.3);
}

// Symmetry is judged per pair, against the pair's own magnitude: a pair 1e-6 apart in a matrix
// whose other entries reach 1e9 is still not symmetric (and is named), not passed on to a
// Cholesky factorisation that would call it something else.
TEST(InitialParameters, AsymmetryIsJudgedByThePairsOwnSize) {
  Model m;
  m.weights = {1.0};
  Part p;
  p.family = Family::gaussian_full;
  p.col_begin = 0;
  p.col_end = 4;
  p.mean.assign(4, 0.0);
  p.cov = {1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1};
  m.parts = {p};
  engine::InitialParameters given;
  given.precisions = {1, 0, 0,          0,  //
                      0, 1, 0.5 + 1e-6, 1e9, 0, 0.5, 1, 0, 0, 1e9, 0, 1};
  expect_invalid_input([&] { engine::apply_initial_parameters(m, given); }, {"not symmetric at (2, 1)"});
}

// A symmetric positive-definite precision whose entries all differ is taken, every pair
// compared with its own mirror, and becomes the covariance P⁻¹: P · cov = I.
TEST(InitialParameters, ASymmetricPrecisionBecomesItsInverse) {
  constexpr std::size_t D = 3;
  Model m;
  m.weights = {1.0};
  Part p;
  p.family = Family::gaussian_full;
  p.col_begin = 0;
  p.col_end = D;
  p.mean.assign(D, 0.0);
  p.cov = {1, 0, 0, 0, 1, 0, 0, 0, 1};
  m.parts = {p};
  engine::InitialParameters given;
  given.precisions = {4.0, 1.0, 0.5,  //
                      1.0, 3.0, 0.25, 0.5, 0.25, 2.0};
  engine::apply_initial_parameters(m, given);
  const std::vector<double>& cov = m.parts[0].cov;
  ASSERT_EQ(cov.size(), D * D);
  for (std::size_t i = 0; i < D; ++i)
    for (std::size_t j = 0; j < D; ++j) {
      double v = 0.0;
      for (std::size_t q = 0; q < D; ++q) v += given.precisions[i * D + q] * cov[q * D + j];
      EXPECT_NEAR(v, i == j ? 1.0 : 0.0, 1e-12) << i << "," << j;
    }
}

TEST(InitialParameters, BadValuesAreNamed) {
  const Dataset data = two_clusters();
  FitOptions o;
  o.components = 2;
  o.layout = "gaussian_full";
  o.init_means = {1, 2, 3};
  expect_invalid_input([&] { (void)fit(data, o); }, {"initial means", "3 values", "K×D = 4"});
  o.init_means.clear();
  o.init_precisions = {1, 0, 0, -1, 1, 0, 0, 1};
  expect_invalid_input([&] { (void)fit(data, o); }, {"initial precisions[0]", "not positive definite"});
  o.init_precisions = {1, 0.5, 0, 1, 1, 0, 0, 1};
  expect_invalid_input([&] { (void)fit(data, o); }, {"initial precisions[0]", "not symmetric"});
  // One precision too many for each covariance type (K = 2, D = 2), named with the shape expected.
  const struct {
    const char* layout;
    std::size_t count;
    const char* shape;
  } shapes[] = {{"gaussian_diag", 4, "K×D (gaussian_diag) = 4"},
                {"gaussian_spherical", 2, "K (gaussian_spherical) = 2"},
                {"gaussian_full", 8, "K×D×D (gaussian_full) = 8"},
                {"gaussian_tied", 4, "D×D (gaussian_tied: one matrix) = 4"}};
  for (const auto& c : shapes) {
    SCOPED_TRACE(c.layout);
    o.layout = c.layout;
    o.init_precisions.assign(c.count + 1, 1.0);
    expect_invalid_input([&] { (void)fit(data, o); },
                         {"initial precisions", std::to_string(c.count + 1) + " values", c.shape});
  }
  // A diagonal or spherical precision of 0, below 0 or not finite is named with its index.
  for (const double bad : {0.0, -0.5, std::numeric_limits<double>::infinity(), std::nan("")}) {
    SCOPED_TRACE(bad);
    o.layout = "gaussian_diag";
    o.init_precisions = {1, 2, bad, 4};
    expect_invalid_input([&] { (void)fit(data, o); },
                         {"initial precisions: value 2 is", "precisions must be finite and > 0"});
    o.layout = "gaussian_spherical";
    o.init_precisions = {bad, 1};
    expect_invalid_input([&] { (void)fit(data, o); },
                         {"initial precisions: value 0 is", "precisions must be finite and > 0"});
  }
  o.layout = "gaussian_full";
  o.init_precisions.clear();
  o.init_weights = {0.5, 0.6};
  expect_invalid_input([&] { (void)fit(data, o); }, {"weights"});
  o.init_weights.clear();
  o.layout = "gaussian_diag:0-1,gaussian_diag:1-2";
  o.init_means = {1, 2};
  expect_invalid_input([&] { (void)fit(data, o); }, {"initial means", "one Gaussian part", "has 2"});
  o.layout = "gaussian_diag";
  o.init = InitMethod::model;
  o.init_model = some_model(data, "gaussian_diag");
  o.init_means = {1, 2, 3, 4};
  expect_invalid_input([&] { (void)fit(data, o); }, {"init = model"});
}

}  // namespace
}  // namespace mixle
