// Exact pruning through a whole fit (FitOptions::prune, docs/numerics.md §8): `auto` and `off`
// fit the same model bit for bit — gaussian_diag and gaussian_spherical, fp32 and fp64, separated
// and overlapping, a layout without a bound — and the progress says how many pairs a row took.
#include <mixle/fit.hpp>
#include <mixle/model.hpp>

#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace mixle {
namespace {

/// K components over D columns, means centre·N(0, 1), σ in [0.5, 1.5].
Model generating(int K, int D, double centre, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal;
  std::uniform_real_distribution<double> sd(0.5, 1.5);
  Model m;
  m.weights.assign(static_cast<std::size_t>(K), 1.0 / K);
  Part g;
  g.family = Family::gaussian_diag;
  g.col_begin = 0;
  g.col_end = D;
  for (int i = 0; i < K * D; ++i) {
    g.mean.push_back(centre * normal(rng));
    const double s = sd(rng);
    g.var.push_back(s * s);
  }
  m.parts = {g};
  return m;
}

/// `rows` rows drawn from generating(K, D, centre, seed).
Dataset separated(int K, int D, std::size_t rows, double centre, std::uint64_t seed) {
  return sample(generating(K, D, centre, seed), rows, seed);
}

bool same_bits(const std::vector<double>& a, const std::vector<double>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(double)) == 0;
}

void expect_same_fit(const FitResult& a, const FitResult& b) {
  EXPECT_EQ(a.iterations, b.iterations);
  EXPECT_TRUE(same_bits(a.mean_loglik, b.mean_loglik));
  EXPECT_TRUE(same_bits(a.model.weights, b.model.weights));
  ASSERT_EQ(a.model.parts.size(), b.model.parts.size());
  for (std::size_t p = 0; p < a.model.parts.size(); ++p) {
    EXPECT_TRUE(same_bits(a.model.parts[p].mean, b.model.parts[p].mean)) << "part " << p;
    EXPECT_TRUE(same_bits(a.model.parts[p].var, b.model.parts[p].var)) << "part " << p;
  }
}

struct Fitted {
  FitResult result;
  std::vector<double> pairs_per_row;  // per iteration, from the progress callback
};

/// A fit of `data`; from `start` where given (so that the pass under test, not k-means++'s luck,
/// decides how separated the fitted components are), else from k-means++.
Fitted fit_with(const Dataset& data, const std::string& layout, const std::string& precision, const std::string& prune,
                std::size_t K, const Model* start = nullptr) {
  FitOptions o;
  o.components = K;
  if (start) {
    o.init = InitMethod::model;
    o.init_model = *start;
  }
  o.layout = layout;
  o.precision = precision;
  o.prune = prune;
  o.max_iter = 12;
  o.tol = 0.0;
  o.seed = 5;
  o.threads = 2;
  Fitted f;
  o.progress = [&](const FitProgress& p) { f.pairs_per_row.push_back(p.pairs_per_row); };
  f.result = fit(data, o);
  return f;
}

void check(const Dataset& data, const std::string& layout, const std::string& precision, std::size_t K,
           double most_pairs_per_row, const Model* start = nullptr) {
  const Fitted pruned = fit_with(data, layout, precision, "auto", K, start);
  const Fitted dense = fit_with(data, layout, precision, "off", K, start);
  expect_same_fit(pruned.result, dense.result);
  ASSERT_FALSE(pruned.pairs_per_row.empty());
  for (double p : dense.pairs_per_row) EXPECT_EQ(p, static_cast<double>(K));
  std::string seen;
  for (double p : pruned.pairs_per_row) seen += " " + std::to_string(p);
  EXPECT_LE(pruned.pairs_per_row.back(), most_pairs_per_row) << layout << " " << precision << ":" << seen;
}

TEST(PrunedFit, SeparatedDiagFitsTheSameBits) {
  const Model truth = generating(32, 32, 4.0, 1);  // the bench's recipe, smaller
  const Dataset data = sample(truth, 4000, 1);
  check(data, "gaussian_diag", "fp32", 32, 8.0, &truth);
  check(data, "gaussian_diag", "fp64", 32, 8.0, &truth);
  // From k-means++, which merges some of these clusters: the bits agree whatever is pruned.
  check(data, "gaussian_diag", "fp32", 32, 32.0);
}

TEST(PrunedFit, SeparatedSphericalFitsTheSameBits) {
  const Dataset data = separated(32, 24, 4000, 4.0, 2);
  check(data, "gaussian_spherical", "fp32", 32, 8.0);
  check(data, "gaussian_spherical", "fp64", 32, 8.0);
}

TEST(PrunedFit, OverlappingDiagFitsTheSameBits) {
  const Dataset data = separated(8, 6, 4000, 0.5, 3);
  check(data, "gaussian_diag", "fp32", 8, 8.0);
  check(data, "gaussian_diag", "fp64", 8, 8.0);
}

// A model with a part that has no bound (categorical) runs every pair, with the same result.
TEST(PrunedFit, MixedLayoutWithoutABoundRunsEveryPair) {
  std::mt19937_64 rng(4);
  std::vector<double> x;
  for (int i = 0; i < 3000; ++i) {
    const int k = i % 3;
    x.push_back(6.0 * k + std::normal_distribution<double>()(rng));
    x.push_back(static_cast<double>((k + i / 7) % 3));
  }
  const Dataset data = Dataset::from_vector(x, 3000, 2);
  const Fitted pruned = fit_with(data, "gaussian_diag:0-1,categorical:1-2:3", "fp32", "auto", 3);
  const Fitted dense = fit_with(data, "gaussian_diag:0-1,categorical:1-2:3", "fp32", "off", 3);
  expect_same_fit(pruned.result, dense.result);
  for (double p : pruned.pairs_per_row) EXPECT_EQ(p, 3.0);
}

TEST(PrunedFit, UnknownPruneIsRefusedByName) {
  const Dataset data = separated(2, 2, 200, 4.0, 5);
  try {
    fit_with(data, "gaussian_diag", "fp32", "sometimes", 2);
    FAIL() << "prune = sometimes was accepted";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("sometimes"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("auto"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace mixle
