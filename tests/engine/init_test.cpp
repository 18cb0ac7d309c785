// Initialisation: kmeans++ and select see only the columns the layout uses.
#include "engine_test_util.hpp"

#include <mixle/fit.hpp>

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

namespace mixle {
namespace {

using test::make_part;

TEST(EngineInit, UnusedColumnsDoNotAffectKmeansPlusPlus) {
  // Columns 0 and 2 are modelled; column 1 is not in the layout and holds NaN (e.g. a text
  // column read as nan) or huge values. Neither may reach the initial centres.
  Model truth;
  truth.weights = {0.5, 0.5};
  Part g = make_part(Family::gaussian_diag, 0, 1);
  g.mean = {0.0, 20.0};
  g.var = {1.0, 1.0};
  Part p = make_part(Family::poisson, 2, 3);
  p.rate = {2.0, 30.0};
  truth.parts = {g, p};
  const std::size_t N = 4000;
  const Dataset drawn = sample(truth, N, 8);
  for (double filler : {std::nan(""), 1e12}) {
    SCOPED_TRACE(filler);
    std::vector<double> v(drawn.as<double>(), drawn.as<double>() + N * 3);
    for (std::size_t r = 0; r < N; ++r)
      v[r * 3 + 1] = std::isnan(filler) ? filler : filler * static_cast<double>(r % 2);
    FitOptions o;
    o.components = 2;
    o.layout = "gaussian_diag:0-1,poisson:2-3";
    o.max_iter = 1;  // the initial model decides the first M-step's split
    const FitResult r = fit(Dataset::from_vector(std::move(v), N, 3), o);
    // Well separated (20 standard deviations): each component near half the rows.
    constexpr double kWeightTol = 0.05;
    EXPECT_NEAR(r.model.weights[0], 0.5, kWeightTol);
    EXPECT_NEAR(r.model.weights[1], 0.5, kWeightTol);
    EXPECT_TRUE(test::all_finite(r.model));
  }
}

// k-means++ seeding samples each next centre with probability ∝ the squared distance to the
// nearest centre so far. With K clusters of identical points, a chosen cluster's points have
// distance 0: every seed must land in a different cluster, for any seed — so the fit starts with
// one component per cluster and one EM step puts each mean exactly on its cluster. (Uniform
// seeding gets all five clusters only 5!/5^5 ≈ 4% of the time.)
TEST(EngineInit, KmeansPlusPlusSeedsEveryClusterOfIdenticalPoints) {
  constexpr std::size_t K = 5, per = 40, D = 2;
  const double where[K][D] = {{0, 0}, {10, 0}, {0, 10}, {10, 10}, {5, -20}};
  std::vector<double> v;
  for (std::size_t r = 0; r < per; ++r)
    for (std::size_t k = 0; k < K; ++k) v.insert(v.end(), where[k], where[k] + D);
  const Dataset data = Dataset::view(v.data(), K * per, D);
  for (std::uint64_t seed = 1; seed <= 12; ++seed) {
    SCOPED_TRACE(seed);
    FitOptions o;
    o.components = K;
    o.init = InitMethod::kmeanspp;
    o.seed = seed;
    o.max_iter = 1;
    o.precision = "fp64";
    const FitResult r = fit(data, o);
    const Part& g = r.model.parts.at(0);
    ASSERT_EQ(g.mean.size(), K * D);
    for (std::size_t c = 0; c < K; ++c) {
      int found = 0;
      for (std::size_t k = 0; k < K; ++k)
        found += std::abs(g.mean[k * D] - where[c][0]) < 1e-9 && std::abs(g.mean[k * D + 1] - where[c][1]) < 1e-9;
      EXPECT_EQ(found, 1) << "cluster at (" << where[c][0] << ", " << where[c][1] << ")";
    }
  }
}

}  // namespace
}  // namespace mixle
