// Sample weights: a row of integer weight w must count exactly as w copies of it. Every family
// (the gaussian_diag vectorised path at D = 10 included), the component-parallel and
// component-sharded backends, fp32 beside fp64, zero weights as dropped rows, k-means++ never
// starting at a row of weight 0, and the errors for bad weights.
#include "common/json_numbers.hpp"
#include "engine_test_util.hpp"

#include <mixle/data.hpp>
#include <mixle/error.hpp>
#include <mixle/fit.hpp>
#include <mixle/model.hpp>

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <limits>
#include <ostream>
#include <random>
#include <string>
#include <vector>

namespace mixle {
namespace {

using test::expect_invalid_input;

using test::max_relative_difference;

constexpr std::size_t kCols = 16;
const std::string kEveryFamily =
    "gaussian_diag:0-10,categorical:10-11:3,poisson:11-12,exponential:12-13,gamma:13-14,lognormal:14-15,"
    "bernoulli:15-16";

/// `rows` rows in three clusters, each column in its family's domain (see kEveryFamily).
std::vector<double> draw_rows(std::size_t rows, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal(0.0, 1.0);
  std::vector<double> v;
  for (std::size_t r = 0; r < rows; ++r) {
    const int c = static_cast<int>(r % 3);
    for (int d = 0; d < 10; ++d) v.push_back(normal(rng) + 3.0 * c * (d % 3 == c ? 1 : 0));
    v.push_back(static_cast<double>((c + (r % 7 == 0 ? 1 : 0)) % 3));
    v.push_back(static_cast<double>(std::poisson_distribution<int>(1.0 + 4.0 * c)(rng)));
    v.push_back(std::exponential_distribution<double>(1.0 + c)(rng));
    v.push_back(std::gamma_distribution<double>(2.0 + c, 1.0)(rng));
    v.push_back(std::exp(0.5 * normal(rng) + c));
    v.push_back(static_cast<double>((r % 5 < static_cast<std::size_t>(c + 1)) ? 1 : 0));
  }
  return v;
}

/// Weights 0, 1, 2 or 3 in a fixed pattern, and the rows repeated that many times.
struct Weighted {
  Dataset data;      // the rows, weighted
  Dataset repeated;  // each row w times, unweighted
  Dataset kept;      // rows of weight > 0 once each, unweighted
};

Weighted weighted_and_repeated(const std::vector<double>& values, std::size_t cols) {
  const std::size_t rows = values.size() / cols;
  std::vector<double> w(rows), repeated, kept;
  for (std::size_t r = 0; r < rows; ++r) {
    w[r] = static_cast<double>((r * 7 + 3) % 4);
    for (int copy = 0; copy < static_cast<int>(w[r]); ++copy)
      repeated.insert(repeated.end(), values.begin() + r * cols, values.begin() + (r + 1) * cols);
    if (w[r] > 0) kept.insert(kept.end(), values.begin() + r * cols, values.begin() + (r + 1) * cols);
  }
  Weighted out;
  out.data = Dataset::from_vector(values, rows, cols).with_weights(w);
  out.repeated = Dataset::from_vector(repeated, repeated.size() / cols, cols);
  out.kept = Dataset::from_vector(kept, kept.size() / cols, cols);
  return out;
}

/// fp64 EM from a fixed starting model (fitted unweighted first, so every family has sensible
/// parameters): the only way two datasets can be compared iteration by iteration.
FitOptions from_model(const Dataset& rows, const std::string& layout, std::size_t K) {
  FitOptions start;
  start.layout = layout;
  start.components = K;
  start.max_iter = 3;
  start.seed = 2;
  start.precision = "fp64";
  start.threads = 1;
  FitOptions o = start;
  o.init = InitMethod::model;
  o.init_model = fit(rows, start).model;
  o.max_iter = 12;
  o.tol = 0;
  return o;
}

struct Case {
  const char* name;
  std::string layout;
  std::size_t cols, K;
};

// Test names show the case, not a byte dump of it.
void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

class SampleWeights : public ::testing::TestWithParam<Case> {};

TEST_P(SampleWeights, IntegerWeightsEqualRepeatedRows) {
  const Case c = GetParam();
  std::vector<double> values = draw_rows(900, 3);
  if (c.cols < kCols) {  // the first c.cols columns only
    std::vector<double> narrow;
    for (std::size_t r = 0; r < values.size() / kCols; ++r)
      narrow.insert(narrow.end(), values.begin() + r * kCols, values.begin() + r * kCols + c.cols);
    values = std::move(narrow);
  }
  const Weighted w = weighted_and_repeated(values, c.cols);
  const FitOptions o = from_model(w.kept, c.layout, c.K);
  const FitResult weighted = fit(w.data, o), repeated = fit(w.repeated, o);
  EXPECT_LT(max_relative_difference(weighted.model, repeated.model), 1e-12);
  ASSERT_EQ(weighted.mean_loglik.size(), repeated.mean_loglik.size());
  for (std::size_t i = 0; i < weighted.mean_loglik.size(); ++i)
    EXPECT_NEAR(weighted.mean_loglik[i], repeated.mean_loglik[i], 1e-12 * std::abs(repeated.mean_loglik[i])) << i;
  EXPECT_EQ(weighted.rows, w.data.rows());
  EXPECT_EQ(weighted.total_weight, static_cast<double>(w.repeated.rows()));
  EXPECT_EQ(repeated.total_weight, static_cast<double>(w.repeated.rows()));

  // Rows of weight 0 are rows left out; the backends that thread or shard components agree.
  FitOptions ones = o;
  const FitResult kept = fit(w.kept, ones);
  std::vector<double> unit(w.data.rows());
  for (std::size_t r = 0; r < unit.size(); ++r) unit[r] = w.data.weights()[r] > 0 ? 1.0 : 0.0;
  const FitResult zeroes = fit(w.data.with_weights(unit), ones);
  EXPECT_LT(max_relative_difference(zeroes.model, kept.model), 1e-12);
  for (const char* backend : {"component_parallel", "component_sharded"}) {
    FitOptions b = o;
    b.backend = backend;
    b.num_workers = 2;
    const FitResult other = fit(w.data, b);
    EXPECT_LT(max_relative_difference(other.model, weighted.model), 1e-9) << backend;
    // The weighted log-likelihood too, iteration by iteration: each row counts w times.
    ASSERT_EQ(other.mean_loglik.size(), weighted.mean_loglik.size()) << backend;
    for (std::size_t i = 0; i < other.mean_loglik.size(); ++i)
      EXPECT_NEAR(other.mean_loglik[i], weighted.mean_loglik[i], 1e-9 * std::abs(weighted.mean_loglik[i]))
          << backend << ", iteration " << i;
    EXPECT_EQ(other.total_weight, weighted.total_weight) << backend;
  }
}

INSTANTIATE_TEST_SUITE_P(Families, SampleWeights,
                         ::testing::Values(Case{"every_family", kEveryFamily, kCols, 3},
                                           Case{"full", "gaussian_full:0-4", 4, 3},
                                           Case{"spherical", "gaussian_spherical:0-10", 10, 3}),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(SampleWeights, Float32FoldsWeightsLikeFloat64) {
  const Weighted w = weighted_and_repeated(draw_rows(3000, 5), kCols);
  FitOptions o = from_model(w.kept, kEveryFamily, 3);
  o.max_iter = 5;
  const FitResult f64 = fit(w.data, o);
  o.precision = "fp32";
  const FitResult f32 = fit(w.data, o), repeated32 = fit(w.repeated, o);
  EXPECT_LT(max_relative_difference(f32.model, f64.model), 1e-3);
  EXPECT_LT(max_relative_difference(f32.model, repeated32.model), 1e-3);
  EXPECT_NEAR(f32.final_mean_loglik, f64.final_mean_loglik, 1e-5 * std::abs(f64.final_mean_loglik));
}

TEST(SampleWeights, KmeansPlusPlusNeverStartsAtARowOfWeightZero) {
  // 40 far outliers of weight 0 among 2 clusters: were they seen, a centre would sit there.
  std::vector<double> v, w;
  std::mt19937_64 rng(1);
  std::normal_distribution<double> normal(0.0, 1.0);
  for (int r = 0; r < 2000; ++r) {
    const bool outlier = r % 50 == 0;
    const double centre = outlier ? 1e6 : (r % 2 ? 5.0 : -5.0);
    v.push_back(centre + normal(rng));
    v.push_back(centre + normal(rng));
    w.push_back(outlier ? 0.0 : 1.0 + (r % 3));
  }
  const Dataset data = Dataset::from_vector(v, 2000, 2).with_weights(w);
  for (std::uint64_t seed = 0; seed < 4; ++seed) {
    FitOptions o;
    o.components = 2;
    o.seed = seed;
    o.n_init = 2;
    const FitResult r = fit(data, o);
    for (double m : r.model.parts[0].mean) EXPECT_LT(std::abs(m), 10.0) << "seed " << seed;
    EXPECT_EQ(r.rows, 2000u);
  }
}

TEST(SampleWeights, BadWeightsAreRefusedNamingTheRow) {
  const Dataset data = Dataset::from_vector(std::vector<double>{1, 2, 3, 4}, 4, 1);
  expect_invalid_input(
      [&] {
        (void)data.with_weights({1, 1, -2, 1}, "w.npy");
      },
      {"sample weights w.npy", "row 2 (counted from 0", "-2", "≥ 0"});
  expect_invalid_input([&] { (void)data.with_weights({1, std::nan(""), 1, 1}); }, {"row 1 (counted from 0", "finite"});
  expect_invalid_input(
      [&] {
        (void)data.with_weights({1, 1, std::numeric_limits<double>::infinity(), 1});
      },
      {"row 2 (counted from 0"});
  expect_invalid_input([&] { (void)data.with_weights({1, 1, 1}, "w.csv"); }, {"w.csv", "3 weights", "4 rows"});
  expect_invalid_input([&] { (void)data.with_weights(Dataset::from_vector(std::vector<double>(8, 1.0), 4, 2)); },
                       {"2 columns", "one value per row"});
  // A slice names rows by their place in the whole data.
  expect_invalid_input([&] { (void)data.slice(2, 4).with_weights({1, -1}); }, {"row 3 (counted from 0"});
  FitOptions o;
  o.components = 1;
  expect_invalid_input([&] { (void)fit(data.with_weights({0, 0, 0, 0}), o); }, {"every row has sample weight 0"});
}

TEST(SampleWeights, SlicesKeepTheirRowsWeights) {
  const Dataset data = Dataset::from_vector(std::vector<double>{1, 2, 3, 4, 5}, 5, 1).with_weights({5, 4, 3, 2, 1});
  const Dataset part = data.slice(1, 4);
  ASSERT_TRUE(part.weighted());
  EXPECT_EQ(part.weights()[0], 4.0);
  EXPECT_EQ(part.weights()[2], 2.0);
  EXPECT_FALSE(Dataset::from_vector(std::vector<double>{1}, 1, 1).weighted());
  EXPECT_EQ(Dataset::from_vector(std::vector<double>{1}, 1, 1).weights(), nullptr);
}

}  // namespace
}  // namespace mixle
