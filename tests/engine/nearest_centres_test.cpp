// CentreSet labels points by nearest_centre's rule through a float32 screen: its labels must be
// the rule's, bit for bit, for any points — random ones, exact ties at the screen's lane-group
// edges, centres the screen cannot tell apart (1e4 away, 1e-2 apart), values it cannot take —
// and on separated clusters the screen must settle almost every point by itself.
#include "engine/nearest_centres.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

namespace mixle::engine {
namespace {

std::vector<double> by_coordinate(const std::vector<double>& rows, std::size_t n, std::size_t C) {
  std::vector<double> t(rows.size());
  for (std::size_t r = 0; r < n; ++r)
    for (std::size_t c = 0; c < C; ++c) t[c * n + r] = rows[r * C + c];
  return t;
}

/// CentreSet's labels of `points` against nearest_centre's, point by point; returns how many
/// points the screen left to the rule.
std::size_t expect_the_rule(const std::vector<double>& centres, std::size_t K, const std::vector<double>& points,
                            std::size_t C) {
  const std::size_t m = points.size() / C;
  const std::vector<double> centres_t = by_coordinate(centres, K, C);
  std::vector<std::size_t> label(m, K + 1);
  const std::size_t measured = CentreSet(centres, K, C).nearest(points.data(), m, label.data());
  for (std::size_t i = 0; i < m; ++i)
    EXPECT_EQ(label[i], nearest_centre(&points[i * C], centres_t.data(), K, C))
        << "point " << i << " K " << K << " C " << C;
  EXPECT_LE(measured, m);
  return measured;
}

TEST(NearestCentres, RandomPointsGetTheRulesLabels) {
  std::mt19937_64 rng(3);
  std::normal_distribution<double> z(0.0, 1.0);
  // K across one lane group and its edges (15, 16, 17, 33); C from 1 to 83; m not a multiple
  // of the screen's four-point block.
  for (std::size_t C : {1u, 2u, 7u, 32u, 83u})
    for (std::size_t K : {1u, 2u, 5u, 15u, 16u, 17u, 33u, 64u}) {
      std::vector<double> centres(K * C), points(103 * C);
      for (double& v : centres) v = 3.0 * z(rng);
      for (double& v : points) v = 3.0 * z(rng);
      expect_the_rule(centres, K, points, C);
    }
}

TEST(NearestCentres, TiesGoToTheLowestIndexAcrossLaneGroups) {
  constexpr std::size_t K = 40, C = 3;
  std::vector<double> centres(K * C);
  for (std::size_t k = 0; k < K; ++k)
    for (std::size_t c = 0; c < C; ++c) centres[k * C + c] = 50.0 + static_cast<double>(k) + static_cast<double>(c);
  // Equal centres 15 and 16 (the first group's last, the second's first), 31 and 32, and
  // centre 38 equal to centre 2 (a later group ties with an earlier one).
  for (std::size_t c = 0; c < C; ++c) {
    centres[16 * C + c] = centres[15 * C + c] = -4.0;
    centres[32 * C + c] = centres[31 * C + c] = 9.0;
    centres[38 * C + c] = centres[2 * C + c];
  }
  // Points on those centres, at the midpoint of 15/16 and 31/32 (equidistant, exactly), and
  // at the midpoint of two distinct centres (0 and 1: the first coordinate differs by one).
  std::vector<double> points = {-4, -4, -4, 9, 9, 9, 52, 53, 54, 2.5, 2.5, 2.5, 50.5, 51.5, 52.5};
  const std::size_t measured = expect_the_rule(centres, K, points, C);
  EXPECT_GE(measured, 4u) << "exact ties cannot be settled by the screen";
  const std::vector<double> centres_t = by_coordinate(centres, K, C);
  EXPECT_EQ(nearest_centre(points.data(), centres_t.data(), K, C), 15u);
  EXPECT_EQ(nearest_centre(&points[3], centres_t.data(), K, C), 31u);
  EXPECT_EQ(nearest_centre(&points[6], centres_t.data(), K, C), 2u);
}

TEST(NearestCentres, CentresTheScreenCannotSeparateFallToTheRule) {
  // Means 1e4 from the origin and 1e-2 apart: float32 holds 1e4 to about 1e-3, so the screen's
  // bound covers many centres and the rule decides.
  constexpr std::size_t K = 20, C = 4;
  std::mt19937_64 rng(5);
  std::normal_distribution<double> z(0.0, 1.0);
  std::vector<double> centres(K * C), points(64 * C);
  for (std::size_t k = 0; k < K; ++k)
    for (std::size_t c = 0; c < C; ++c) centres[k * C + c] = 1e4 + 1e-2 * static_cast<double>((k * 7 + c * 3) % K);
  for (std::size_t i = 0; i < 64; ++i)
    for (std::size_t c = 0; c < C; ++c) points[i * C + c] = 1e4 + 0.1 * z(rng);
  EXPECT_GT(expect_the_rule(centres, K, points, C), 32u);
}

// Pairs of centres 1e-6 apart in each of 32 coordinates, about 170 from the origin, and points
// around them: float32 rounds each screened value (about 1e4) by several of its units of 1e-3
// over the 32 products, while the two centres' true values differ by far less. The screen's
// one bound for every centre grows with the norms (β(‖x‖ + max ‖c‖)², about 0.5 here) and must
// cover both centres of a pair; a bound that did not would keep whichever value rounding left
// lower, and lose about half the points to the wrong centre.
TEST(NearestCentres, NearTiesBelowTheScreensResolutionFallToTheRule) {
  constexpr std::size_t K = 4, C = 32, m = 400;
  std::mt19937_64 rng(11);
  std::normal_distribution<double> z(0.0, 1.0);
  std::vector<double> centres(K * C), points(m * C);
  for (std::size_t pair = 0; pair < K / 2; ++pair)
    for (std::size_t c = 0; c < C; ++c) {
      centres[2 * pair * C + c] = 30.0 * z(rng);
      centres[(2 * pair + 1) * C + c] = centres[2 * pair * C + c] + 1e-6 * z(rng);
    }
  for (std::size_t i = 0; i < m; ++i)
    for (std::size_t c = 0; c < C; ++c) points[i * C + c] = centres[(i % K) * C + c] + z(rng);
  EXPECT_GT(expect_the_rule(centres, K, points, C), m / 2);
}

TEST(NearestCentres, ValuesTheScreenCannotTakeFallToTheRule) {
  constexpr std::size_t K = 6, C = 2;
  std::vector<double> centres = {0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5};
  const double inf = std::numeric_limits<double>::infinity(), nan = std::numeric_limits<double>::quiet_NaN();
  const std::vector<double> points = {inf, 0, -inf, 1, nan, 2, 1e300, 1e300, 3.9, 4.2};
  EXPECT_GE(expect_the_rule(centres, K, points, C), 4u);
  // A centre beyond float32's reach (or not finite) turns the screen off for the whole set.
  centres[7] = 1e30;
  EXPECT_EQ(expect_the_rule(centres, K, points, C), points.size() / C);
  centres[7] = nan;
  EXPECT_EQ(expect_the_rule(centres, K, points, C), points.size() / C);
}

TEST(NearestCentres, TheScreenSettlesSeparatedClusters) {
  // 64 clusters (σ 1, means drawn with σ 5) in 32 coordinates, points drawn around them: the
  // screen's bound is about 1e-4 of the squared distances, far inside the gaps between them.
  constexpr std::size_t K = 64, C = 32, m = 4000;
  std::mt19937_64 rng(7);
  std::normal_distribution<double> z(0.0, 1.0);
  std::vector<double> centres(K * C), points(m * C);
  for (double& v : centres) v = 5.0 * z(rng);
  for (std::size_t i = 0; i < m; ++i)
    for (std::size_t c = 0; c < C; ++c) points[i * C + c] = centres[(i % K) * C + c] + z(rng);
  EXPECT_LE(expect_the_rule(centres, K, points, C), m / 100);
}

// One centre a million from the origin makes the first bound (the largest centre's, for every
// centre) about 1e6, wider than the gap between the two near centres 10 apart: every point goes
// to the second screen, where each centre's own bound — about 1e-4 for the near ones — must
// settle it without the rule. Centre 0 is the nearest for every point, so its own bound is the
// one that decides how far the others may reach.
TEST(NearestCentres, EachCentresOwnBoundSettlesWhatTheWidestCannot) {
  constexpr std::size_t K = 3, C = 2, m = 200;
  const std::vector<double> centres = {0, 0, 10, 0, 1e6, 0};
  std::mt19937_64 rng(9);
  std::uniform_real_distribution<double> near(-1.0, 1.0);
  std::vector<double> points(m * C);
  for (double& v : points) v = near(rng);
  EXPECT_EQ(expect_the_rule(centres, K, points, C), 0u);
}

// Each point's bound grows with its own norm only: points beside centres near the origin, each
// followed by one a million out along the first axis, are all settled by the screen — a near
// point that took its neighbour's norm would get a bound of about 1e6 and fall to the rule.
TEST(NearestCentres, APointsBoundIsItsOwn) {
  constexpr std::size_t K = 3, C = 2, m = 200;
  const std::vector<double> centres = {0, 0, 10, 0, 20, 0};
  std::mt19937_64 rng(12);
  std::uniform_real_distribution<double> near(-1.0, 1.0);
  std::vector<double> points(m * C);
  for (std::size_t i = 0; i < m; ++i) {
    points[i * C] = (i % 2 ? 1e6 : 10.0 * static_cast<double>(i / 2 % K)) + near(rng);
    points[i * C + 1] = near(rng);
  }
  EXPECT_EQ(expect_the_rule(centres, K, points, C), 0u);
}

TEST(NearestCentres, TheScreensBoundScalesWithTheData) {
  // The same clusters a million times smaller: the bound is relative to the points' and
  // centres' norms, so the screen settles them as well as at unit scale.
  constexpr std::size_t K = 64, C = 32, m = 4000;
  std::mt19937_64 rng(7);
  std::normal_distribution<double> z(0.0, 1.0);
  std::vector<double> centres(K * C), points(m * C);
  for (double& v : centres) v = 5e-6 * z(rng);
  for (std::size_t i = 0; i < m; ++i)
    for (std::size_t c = 0; c < C; ++c) points[i * C + c] = centres[(i % K) * C + c] + 1e-6 * z(rng);
  EXPECT_LE(expect_the_rule(centres, K, points, C), m / 100);
}

// The screen's reach is the float just above least + 2·slack: next_float_up is std::nextafter
// towards +inf, from either side of zero, across zero, at the largest float and at +inf.
TEST(NextFloatUp, IsNextafterTowardsInfinity) {
  const float inf = std::numeric_limits<float>::infinity();
  for (const float v : {1.0f, -1.0f, 3.5e-3f, -2.75e7f, 0.0f, -0.0f, std::numeric_limits<float>::denorm_min(),
                        -std::numeric_limits<float>::denorm_min(), std::numeric_limits<float>::max(),
                        -std::numeric_limits<float>::max(), inf})
    EXPECT_EQ(next_float_up(v), std::nextafter(v, inf)) << v;
  EXPECT_GT(next_float_up(1.0f), 1.0f);
  EXPECT_LT(next_float_up(-1.0f), -0.99999f);
}

}  // namespace
}  // namespace mixle::engine
