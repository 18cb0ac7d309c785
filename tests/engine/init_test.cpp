// Initialisation: kmeans++ and select see only the columns the layout uses.
#include "engine_test_util.hpp"
#include "engine/encoded_data.hpp"
#include "engine/initialise.hpp"
#include "engine/nearest_centres.hpp"

#include <mixle/fit.hpp>

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>
#include <random>
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

// Codes are labels, not numbers: k-means++ sees a categorical column as indicators of its code,
// so renaming the codes (v → π(v) in every row) renames them in the initial model and changes
// nothing else. As numbers, 0 and 3 would be further apart than 0 and 1, and the start — and,
// for clusters that differ only in their favourite code, the optimum EM reaches — would depend
// on how the codes happen to be numbered.
TEST(EngineInit, KmeansPlusPlusTreatsCodesAsLabels) {
  constexpr std::size_t K = 4, D = 4, V = 4;
  const std::size_t pi[V] = {2, 0, 3, 1};
  Model truth;
  truth.weights = {0.2, 0.3, 0.25, 0.25};
  Part c = make_part(Family::categorical, 0, D, V);
  for (std::size_t k = 0; k < K; ++k)
    for (std::size_t d = 0; d < D; ++d)
      for (std::size_t v = 0; v < V; ++v) c.prob.push_back(v == k ? 0.91 : 0.03);
  truth.parts = {c};
  const Dataset drawn = sample(truth, 4000, 2);
  std::vector<double> renamed(drawn.as<double>(), drawn.as<double>() + drawn.rows() * D);
  for (double& v : renamed) v = static_cast<double>(pi[static_cast<std::size_t>(v)]);
  for (std::uint64_t seed : {1u, 2u, 3u}) {
    SCOPED_TRACE(seed);
    FitOptions o;
    o.components = K;
    o.layout = "categorical:0-4:4";
    o.seed = seed;
    o.max_iter = 1;  // the M-step of the initial model's responsibilities
    o.precision = "fp64";
    const FitResult a = fit(drawn, o);
    const FitResult b = fit(Dataset::from_vector(renamed, drawn.rows(), D), o);
    for (std::size_t k = 0; k < K; ++k) {
      EXPECT_NEAR(b.model.weights[k], a.model.weights[k], 1e-12);
      for (std::size_t d = 0; d < D; ++d)
        for (std::size_t v = 0; v < V; ++v)
          EXPECT_NEAR(b.model.parts[0].prob[(k * D + d) * V + pi[v]], a.model.parts[0].prob[(k * D + d) * V + v], 1e-12)
              << "component " << k << " column " << d << " code " << v;
    }
  }
}

// k-means++'s coordinates weigh every modelled column alike: over all ordered pairs of the rows
// they were fitted to, each column's coordinates add exactly 2 on average to the squared
// distance — a numeric column of any scale and offset, a code column of any frequencies — and
// an unmodelled column adds nothing.
TEST(EngineInit, KmeansCoordinatesWeighEveryColumnAlike) {
  // Columns: 0 numeric (large, offset), 1 unmodelled, 2 codes (skewed frequencies), 3 numeric
  // (small spread).
  const std::size_t N = 97;
  std::vector<double> v;
  for (std::size_t r = 0; r < N; ++r) {
    const double i = static_cast<double>(r);
    v.insert(v.end(),
             {1000.0 + 37.0 * std::sin(i), 1e9 * i, static_cast<double>((r * r) % 7 % 4), 0.01 * std::cos(3 * i)});
  }
  // One row more, far away, that the coordinates must never read: they are fitted to N rows.
  v.insert(v.end(), {1e6, 0.0, 1.0, 1e6});
  const Dataset rows = Dataset::from_vector(v, N + 1, 4).slice(0, N);
  Model shape;
  shape.weights = {1.0};
  Part g = make_part(Family::gaussian_diag, 0, 1);
  Part c = make_part(Family::categorical, 2, 3, 4);
  Part h = make_part(Family::gaussian_diag, 3, 4);
  shape.parts = {g, c, h};
  const engine::KmeansCoordinates coordinates(shape, rows);
  ASSERT_EQ(coordinates.width(), 1u + 4u + 1u);
  std::vector<double> x(N * 6);
  for (std::size_t r = 0; r < N; ++r) coordinates.embed(rows, r, &x[r * 6]);
  // Coordinates [0], [1..5), [5]: the three modelled columns.
  const std::pair<std::size_t, std::size_t> spans[] = {{0, 1}, {1, 5}, {5, 6}};
  for (const auto& [begin, end] : spans) {
    double total = 0.0;
    for (std::size_t a = 0; a < N; ++a)
      for (std::size_t b = 0; b < N; ++b)
        for (std::size_t j = begin; j < end; ++j)
          total += (x[a * 6 + j] - x[b * 6 + j]) * (x[a * 6 + j] - x[b * 6 + j]);
    EXPECT_NEAR(total / static_cast<double>(N * N), 2.0, 1e-9) << "coordinates [" << begin << ", " << end << ")";
  }
  // A code column's row has one non-zero indicator, at its code.
  for (std::size_t r = 0; r < N; ++r)
    for (std::size_t code = 0; code < 4; ++code)
      EXPECT_EQ(x[r * 6 + 1 + code] != 0.0, static_cast<double>(code) == rows.at(r, 2)) << "row " << r;
  // A code outside [0, V) (an impossible row) sets no indicator and leaves its neighbours alone.
  const Dataset odd = Dataset::from_vector(std::vector<double>{1000.0, 0.0, 4.0, 0.0}, 1, 4);
  std::vector<double> y(7, -1.0);  // one slot past the width, to see a write there
  coordinates.embed(odd, 0, y.data());
  for (std::size_t j = 1; j < 5; ++j) EXPECT_EQ(y[j], 0.0) << "indicator " << j - 1;
  EXPECT_NE(y[5], 0.0);  // the last column's own coordinate
  EXPECT_EQ(y[6], -1.0);
  // The sample: 20,000 rows, or 4 per component when K is larger.
  EXPECT_EQ(engine::kmeans_sample_rows(10), engine::kKmeansSample);
  EXPECT_EQ(engine::kmeans_sample_rows(5000), 20000u);
  EXPECT_EQ(engine::kmeans_sample_rows(6000), 24000u);
}

// The coordinates read float32 rows as they read float64 ones: the same values (exact in both)
// give the same standardisation and the same embedding, bit for bit.
TEST(EngineInit, KmeansCoordinatesOfFloatRowsAreThoseOfDoubleRows) {
  const std::size_t N = 53, C = 3;
  std::vector<double> v;
  for (std::size_t r = 0; r < N; ++r)
    v.insert(v.end(), {0.25 * static_cast<double>(r % 11), -3.0 + 0.5 * static_cast<double>((r * 7) % 5),
                       static_cast<double>(r % 3)});
  const Dataset f64 = Dataset::from_vector(v, N, C);
  const Dataset f32 = Dataset::from_vector(std::vector<float>(v.begin(), v.end()), N, C);
  Model shape;
  shape.weights = {1.0};
  shape.parts = {make_part(Family::gaussian_diag, 0, 2), make_part(Family::categorical, 2, 3, 3)};
  const engine::KmeansCoordinates from_f64(shape, f64), from_f32(shape, f32);
  ASSERT_EQ(from_f32.width(), from_f64.width());
  std::vector<double> a(from_f64.width()), b(from_f64.width());
  for (std::size_t r = 0; r < N; ++r) {
    from_f64.embed(f64, r, a.data());
    from_f32.embed(f32, r, b.data());
    EXPECT_EQ(a, b) << "row " << r;
  }
}

// A column the sample holds constant (one value, or one code) cannot be standardised: it keeps
// scale 1 about its value and adds nothing to any distance. Ten rows of 1.0 average to a hair
// off 1.0 and ten frequencies of 1/10 sum to a hair below 1: scaled by the spread those leave
// (~1e13 and ~1e8), a row off the constant there would be so far from every centre that its
// other columns were lost in the rounding; an all-zero column would be 0 · ∞.
TEST(EngineInit, AConstantColumnAddsNothingToTheDistance) {
  const std::size_t N = 10;
  std::vector<double> v;
  for (std::size_t r = 0; r < N; ++r) v.insert(v.end(), {static_cast<double>(r), 1.0, 0.0, 2.0});
  const Dataset rows = Dataset::from_vector(v, N, 4);
  Model shape;
  shape.weights = {1.0};
  shape.parts = {make_part(Family::gaussian_diag, 0, 3), make_part(Family::categorical, 3, 4, 3)};
  const engine::KmeansCoordinates coordinates(shape, rows);
  ASSERT_EQ(coordinates.width(), 3u + 3u);
  std::vector<double> x(6);
  for (std::size_t r = 0; r < N; ++r) {
    coordinates.embed(rows, r, x.data());
    // Column 0 standardised: mean 4.5, population variance 8.25.
    EXPECT_NEAR(x[0], (static_cast<double>(r) - 4.5) / std::sqrt(8.25), 1e-12) << "row " << r;
    EXPECT_EQ(x[1], 0.0) << "row " << r;
    EXPECT_EQ(x[2], 0.0) << "row " << r;
    EXPECT_EQ(x[3], 0.0);
    EXPECT_EQ(x[4], 0.0);
    EXPECT_EQ(x[5], 1.0) << "row " << r;  // the one code's indicator, at scale 1
  }
  // Another row, off the constants by 1 and by its code: unit steps, as in any coordinate.
  const Dataset other = Dataset::from_vector(std::vector<double>{4.5, 2.0, -1.0, 0.0}, 1, 4);
  coordinates.embed(other, 0, x.data());
  EXPECT_EQ(x[0], 0.0);
  EXPECT_EQ(x[1], 1.0);
  EXPECT_EQ(x[2], -1.0);
  EXPECT_EQ(x[3], 1.0);
  EXPECT_EQ(x[5], 0.0);
  // Codes outside [0, V) (impossible rows, which the data check refuses before a fit) count for
  // no code: codes {0, 0, 3, −1} with V = 3 are frequencies {1/2, 0, 0}, scale 1/√(1 − 1/4).
  const Dataset odd = Dataset::from_vector(std::vector<double>{0.0, 0.0, 3.0, -1.0}, 4, 1);
  Model one_code;
  one_code.weights = {1.0};
  one_code.parts = {make_part(Family::categorical, 0, 1, 3)};
  const engine::KmeansCoordinates codes(one_code, odd);
  codes.embed(odd, 0, x.data());
  EXPECT_DOUBLE_EQ(x[0], 1.0 / std::sqrt(0.75));
}

// A categorical part without V takes it from the largest code in the data — every row counts,
// the first one too.
TEST(EngineInit, CategoriesComeFromTheLargestCodeInAnyRow) {
  std::vector<double> v{4.0};
  for (int i = 0; i < 59; ++i) v.push_back(static_cast<double>(i % 3));
  FitOptions o;
  o.components = 2;
  o.layout = "categorical:0-1";
  o.max_iter = 2;
  const FitResult r = fit(Dataset::from_vector(std::move(v), 60, 1), o);
  EXPECT_EQ(r.model.parts.at(0).categories, 5u);
}

// The k-means steps' one rule, against the plain loop: each squared distance summed over the
// coordinates in order, the lowest index at the least distance. K from 1 to 19 covers whole
// blocks of eight centres and the tails after them; ties are built at the blocks' edges.
TEST(EngineInit, NearestCentreIsTheLowestIndexAtTheLeastDistance) {
  std::mt19937_64 rng(11);
  std::normal_distribution<double> z(0.0, 1.0);
  for (std::size_t C : {1u, 3u, 32u}) {
    for (std::size_t K = 1; K <= 19; ++K) {
      std::vector<double> centres(K * C), centres_t(K * C), x(C);
      for (double& v : centres) v = z(rng);
      for (std::size_t k = 0; k < K; ++k)
        for (std::size_t c = 0; c < C; ++c) centres_t[c * K + k] = centres[k * C + c];
      for (int trial = 0; trial < 20; ++trial) {
        for (double& v : x) v = z(rng);
        std::size_t want = 0;
        double best = std::numeric_limits<double>::infinity();
        for (std::size_t k = 0; k < K; ++k) {
          double d = 0.0;
          for (std::size_t c = 0; c < C; ++c) d += (x[c] - centres[k * C + c]) * (x[c] - centres[k * C + c]);
          if (d < best) best = d, want = k;
        }
        ASSERT_EQ(engine::nearest_centre(x.data(), centres_t.data(), K, C), want) << "C " << C << " K " << K;
      }
    }
  }
  // Ties: the point sits on centres 7 and 8 (the first block's last, the second's first), and on
  // centres 16 and 17 (in the tail); every other centre is further away.
  constexpr std::size_t K = 18, C = 2;
  std::vector<double> centres_t(K * C);
  for (std::size_t k = 0; k < K; ++k) centres_t[k] = 100.0 + static_cast<double>(k), centres_t[K + k] = 0.0;
  const double on_7_and_8[C] = {0.0, 0.0}, on_16_and_17[C] = {-5.0, 0.0};
  centres_t[7] = centres_t[8] = 0.0;
  centres_t[16] = centres_t[17] = -5.0;
  EXPECT_EQ(engine::nearest_centre(on_7_and_8, centres_t.data(), K, C), 7u);
  EXPECT_EQ(engine::nearest_centre(on_16_and_17, centres_t.data(), K, C), 16u);
}

// The initial model does not depend on the thread count, nor on whether the same values arrive
// as float32 or float64: threads split rows, never a sum, and every value is read as a double.
TEST(EngineInit, KmeansPlusPlusIsTheSameAtAnyThreadCountAndElementType) {
  Model truth;
  truth.weights.assign(9, 1.0 / 9.0);
  Part g = make_part(Family::gaussian_diag, 0, 3);
  for (std::size_t k = 0; k < 9; ++k)
    g.mean.insert(g.mean.end(),
                  {10.0 * static_cast<double>(k % 3), 10.0 * static_cast<double>(k / 3), 0.5 * static_cast<double>(k)});
  g.var.assign(27, 1.0);
  truth.parts = {g};
  // 30,000 rows: a sample of 20,000 (seeding blocks on several threads) and assignment chunks
  // of thousands of rows (threaded too).
  const Dataset drawn = sample(truth, 30000, 5);
  std::vector<float> as_float(drawn.as<double>(), drawn.as<double>() + drawn.rows() * drawn.cols());
  std::vector<double> rounded(as_float.begin(), as_float.end());
  const Dataset f32 = Dataset::view(as_float.data(), drawn.rows(), drawn.cols());
  const Dataset f64 = Dataset::view(rounded.data(), drawn.rows(), drawn.cols());
  Model shape = truth;
  engine::EstimatorOptions est;
  est.precision = engine::Precision::fp64;
  auto initial = [&](const Dataset& rows, int threads) {
    const auto handle = engine::encoded_data(rows, {});
    return engine::initialise_kmeans_pp(*handle, shape, 21, est, threads);
  };
  const Model one = initial(f64, 1);
  for (int threads : {2, 3}) {
    const Model m = initial(f64, threads);
    EXPECT_EQ(m.weights, one.weights) << threads << " threads";
    EXPECT_EQ(m.parts[0].mean, one.parts[0].mean) << threads << " threads";
    EXPECT_EQ(m.parts[0].var, one.parts[0].var) << threads << " threads";
  }
  const Model from_float = initial(f32, 2);
  EXPECT_EQ(from_float.weights, one.weights);
  EXPECT_EQ(from_float.parts[0].mean, one.parts[0].mean);
  // 2,047 rows, all in the sample: the seeding's last block of 1,024 points is one point short.
  const Dataset edge = f64.slice(0, 2047);
  const Model edge_one = initial(edge, 1), edge_two = initial(edge, 2);
  EXPECT_EQ(edge_two.parts[0].mean, edge_one.parts[0].mean);
  EXPECT_EQ(edge_two.weights, edge_one.weights);
  // And it found the nine clusters: every component holds about a ninth of the rows.
  for (double w : one.weights) EXPECT_NEAR(w, 1.0 / 9.0, 0.02);
  // A fit reports the time its initialisation took, a part of its whole time.
  FitOptions o;
  o.components = 9;
  o.max_iter = 2;
  const FitResult r = fit(f64, o);
  EXPECT_GT(r.init_seconds, 0.0);
  EXPECT_LT(r.init_seconds, r.seconds);
}

/// K gaussian_diag components over columns [0, C) at equal weights, means 0 and variances 1:
/// the shape an initialisation fills.
Model diag_shape(std::size_t K, std::size_t C) {
  Model shape;
  shape.weights.assign(K, 1.0 / static_cast<double>(K));
  Part g = make_part(Family::gaussian_diag, 0, C);
  g.mean.assign(K * C, 0.0);
  g.var.assign(K * C, 1.0);
  shape.parts = {g};
  return shape;
}

// Lloyd's steps on k-means++'s sample move each centre to the weighted mean of its points, in
// k-means's coordinates: two clusters, one of two half-weight points (mass exactly 1, so a centre
// is moved by any mass above 0, not only above 1) and one of three unit-weight points.
TEST(EngineInit, LloydMovesEachCentreToItsPointsWeightedMean) {
  constexpr std::size_t K = 2, C = 2, N = 5;
  const std::vector<double> v = {0.0, 0.0, 1.0, 2.0, 100.0, 50.0, 101.0, 53.0, 102.0, 51.0};
  const std::vector<double> weights = {0.5, 0.5, 1.0, 1.0, 1.0};
  const Dataset rows = Dataset::from_vector(v, N, C).with_weights(weights);
  const auto handle = engine::encoded_data(rows, {});
  const Model shape = diag_shape(K, C);
  for (std::uint64_t seed : {1u, 2u, 3u}) {
    SCOPED_TRACE(seed);
    const engine::KmeansStart start = engine::kmeans_on_sample(*handle, shape, seed, 1);
    ASSERT_EQ(start.centres.size(), K * C);
    // Each cluster's weighted mean of the embedded points (the embedding is per-column affine).
    std::vector<double> x(C), want(K * C, 0.0);
    const double mass[K] = {1.0, 3.0};
    for (std::size_t r = 0; r < N; ++r) {
      start.coordinates.embed(rows, r, x.data());
      const std::size_t cluster = r < 2 ? 0 : 1;
      for (std::size_t c = 0; c < C; ++c) want[cluster * C + c] += weights[r] * x[c] / mass[cluster];
    }
    // The centres come in k-means++'s order: match each cluster to the nearer centre.
    const auto distance = [&](std::size_t centre, std::size_t cluster) {
      double d2 = 0.0;
      for (std::size_t c = 0; c < C; ++c)
        d2 += (start.centres[centre * C + c] - want[cluster * C + c]) *
              (start.centres[centre * C + c] - want[cluster * C + c]);
      return d2;
    };
    const std::size_t first = distance(0, 0) < distance(1, 0) ? 0 : 1;
    for (std::size_t cluster = 0; cluster < K; ++cluster) {
      const std::size_t centre = cluster == 0 ? first : 1 - first;
      for (std::size_t c = 0; c < C; ++c)
        EXPECT_NEAR(start.centres[centre * C + c], want[cluster * C + c], 1e-12) << cluster << "," << c;
    }
  }
}

// More components than distinct points: once every point coincides with a centre, the draw's
// total is 0 and k-means++ takes the sample's last point (a duplicate, which Lloyd leaves
// alone since ties go to the lower index). Every centre is still one of the points.
TEST(EngineInit, MoreComponentsThanDistinctPointsDuplicateAPoint) {
  constexpr std::size_t K = 5, C = 2, distinct = 3, copies = 4, N = distinct * copies;
  const double where[distinct][C] = {{0.0, 0.0}, {4.0, 1.0}, {-3.0, 7.0}};
  std::vector<double> v;
  for (std::size_t r = 0; r < N; ++r) v.insert(v.end(), where[r % distinct], where[r % distinct] + C);
  const Dataset rows = Dataset::from_vector(v, N, C);
  const auto handle = engine::encoded_data(rows, {});
  for (std::uint64_t seed : {1u, 2u, 3u}) {
    SCOPED_TRACE(seed);
    const engine::KmeansStart start = engine::kmeans_on_sample(*handle, diag_shape(K, C), seed, 1);
    ASSERT_EQ(start.centres.size(), K * C);
    std::vector<double> points(distinct * C);
    for (std::size_t p = 0; p < distinct; ++p) start.coordinates.embed(rows, p, &points[p * C]);
    std::vector<int> seen(distinct, 0);
    for (std::size_t k = 0; k < K; ++k) {
      int matches = 0;
      for (std::size_t p = 0; p < distinct; ++p)
        if (start.centres[k * C] == points[p * C] && start.centres[k * C + 1] == points[p * C + 1])
          ++matches, ++seen[p];
      EXPECT_EQ(matches, 1) << "centre " << k << " is not one of the points";
    }
    for (std::size_t p = 0; p < distinct; ++p) EXPECT_GE(seen[p], 1) << "no centre at point " << p;
  }
}

// The first k-means++ centre is drawn in proportion to weight: with nearly all of it on one row,
// that row is the first centre (the chance of another is 2e-11), whatever the seed and wherever
// the row is; the second centre then comes from the other rows, and Lloyd keeps the heavy row in
// the first one's cluster.
TEST(EngineInit, TheFirstCentreIsDrawnInProportionToWeight) {
  constexpr std::size_t K = 2, C = 2, N = 3;
  for (std::size_t heavy = 0; heavy < N; ++heavy) {
    std::vector<double> v, weights;
    const double others[2][C] = {{10.0, 10.0}, {10.5, 10.0}};
    for (std::size_t r = 0, o = 0; r < N; ++r) {
      if (r == heavy) {
        v.insert(v.end(), {0.0, 0.0});
        weights.push_back(100.0);
      } else {
        v.insert(v.end(), others[o], others[o] + C), ++o;
        weights.push_back(1e-9);
      }
    }
    const Dataset rows = Dataset::from_vector(v, N, C).with_weights(weights);
    const auto handle = engine::encoded_data(rows, {});
    for (std::uint64_t seed : {1u, 2u, 3u, 4u, 5u}) {
      SCOPED_TRACE(testing::Message() << "heavy row " << heavy << ", seed " << seed);
      const engine::KmeansStart start = engine::kmeans_on_sample(*handle, diag_shape(K, C), seed, 1);
      std::vector<double> x(C);
      start.coordinates.embed(rows, heavy, x.data());
      for (std::size_t c = 0; c < C; ++c) EXPECT_NEAR(start.centres[c], x[c], 1e-12) << c;
    }
  }
}

// The first centre's draw in proportion to weight, counted over seeds: three points far apart
// with weights 1, 2, 1 and K = 3, so every point becomes a centre and Lloyd leaves each alone —
// the first centre is the point drawn first. Over 400 seeds each point comes first at about its
// share of the weight (¼, ½, ¼; the bounds are four standard deviations), the middle one too,
// which is reached only after the draw has passed the first point's weight.
TEST(EngineInit, TheFirstCentreComesFirstAtItsShareOfTheWeight) {
  constexpr std::size_t K = 3, C = 2, N = 3, kSeeds = 400;
  const std::vector<double> v = {0.0, 0.0, 10.0, 0.0, 0.0, 10.0};
  const std::vector<double> weights = {1.0, 2.0, 1.0};
  const Dataset rows = Dataset::from_vector(v, N, C).with_weights(weights);
  const auto handle = engine::encoded_data(rows, {});
  const double total = std::accumulate(weights.begin(), weights.end(), 0.0);
  std::vector<std::size_t> first(N, 0);
  for (std::uint64_t seed = 1; seed <= kSeeds; ++seed) {
    const engine::KmeansStart start = engine::kmeans_on_sample(*handle, diag_shape(K, C), seed, 1);
    ASSERT_EQ(start.centres.size(), K * C);
    std::size_t nearest = N;
    double best = std::numeric_limits<double>::infinity();
    std::vector<double> x(C);
    for (std::size_t r = 0; r < N; ++r) {
      start.coordinates.embed(rows, r, x.data());
      const double d2 =
          (start.centres[0] - x[0]) * (start.centres[0] - x[0]) + (start.centres[1] - x[1]) * (start.centres[1] - x[1]);
      if (d2 < best) best = d2, nearest = r;
    }
    ASSERT_LT(best, 1e-20) << "seed " << seed << ": the first centre is not a point";
    ++first[nearest];
  }
  for (std::size_t r = 0; r < N; ++r) {
    const double share = weights[r] / total, seen = static_cast<double>(first[r]) / kSeeds;
    const double sd = std::sqrt(share * (1.0 - share) / kSeeds);
    EXPECT_NEAR(seen, share, 4.0 * sd) << "point " << r << " came first " << first[r] << " times of " << kSeeds;
  }
}

// Hard assignments fold each component's rows and nothing else: labels that leave some rows
// out, weights, and chunks of 4,096 rows (K = 257), against a naive weighted mean and variance
// per component; the left-out rows count in the header's weight only.
TEST(EngineInit, HardAssignmentsFoldEachComponentsRows) {
  constexpr std::size_t K = 257, C = 3, N = 10000;
  std::mt19937_64 rng(17);
  std::normal_distribution<double> z(0.0, 1.0);
  std::vector<float> values(N * C);
  std::vector<double> weights(N);
  for (float& v : values) v = static_cast<float>(5.0 + z(rng));
  for (std::size_t r = 0; r < N; ++r) weights[r] = 0.25 + static_cast<double>(r % 7);
  auto label_of = [](std::size_t row) { return (row * 2654435761u) % (K + 1); };  // K: left out
  const Dataset rows = Dataset::view(values.data(), N, C).with_weights(weights);
  const Model shape = diag_shape(K, C);
  const auto handle = engine::encoded_data(rows, {});
  std::size_t calls = 0;
  const engine::Statistics s = handle->accumulate_assigned(
      shape, [&](const Dataset& chunk, std::size_t first, std::size_t Kc, std::size_t* label) {
        ++calls;
        ASSERT_EQ(Kc, K);
        for (std::size_t r = 0; r < chunk.rows(); ++r) {
          ASSERT_EQ(label[r], K);  // "left out" on entry
          label[r] = label_of(first + r);
        }
      });
  EXPECT_EQ(calls, 3u);  // 4096 + 4096 + 1808 rows
  double all_weight = 0.0;
  for (double w : weights) all_weight += w;
  EXPECT_NEAR(s.rows(), all_weight, 1e-9 * all_weight);
  engine::EstimatorOptions est;
  est.precision = engine::Precision::fp64;
  const Model m = engine::m_step(shape, s.values, engine::shift_table(shape, engine::Precision::fp64, true), est).model;
  std::vector<double> mass(K, 0.0), sum(K * C, 0.0), sq(K * C, 0.0);
  double assigned = 0.0;
  for (std::size_t r = 0; r < N; ++r) {
    const std::size_t k = label_of(r);
    if (k == K) continue;
    mass[k] += weights[r];
    assigned += weights[r];
    for (std::size_t c = 0; c < C; ++c) sum[k * C + c] += weights[r] * values[r * C + c];
  }
  for (std::size_t r = 0; r < N; ++r) {
    const std::size_t k = label_of(r);
    if (k == K) continue;
    for (std::size_t c = 0; c < C; ++c) {
      const double d = values[r * C + c] - sum[k * C + c] / mass[k];
      sq[k * C + c] += weights[r] * d * d;
    }
  }
  for (std::size_t k = 0; k < K; ++k) {
    ASSERT_GT(mass[k], 0.0) << k;
    EXPECT_NEAR(m.weights[k], mass[k] / assigned, 1e-12) << k;
    for (std::size_t c = 0; c < C; ++c) {
      EXPECT_NEAR(m.parts[0].mean[k * C + c], sum[k * C + c] / mass[k], 1e-11) << k << "," << c;
      EXPECT_NEAR(m.parts[0].var[k * C + c], sq[k * C + c] / mass[k] + est.m_step.reg_covar, 1e-10) << k << "," << c;
    }
  }
}

// `--init kmeans` on one column (where the coordinates are the values shifted and scaled
// alike, so nearness is the values'): run to a fixed point (tolerance 0), each initial mean is
// the mean of the rows nearest to it — Lloyd's condition — and integer weights act as repeated
// rows. k-means++'s start is not such a point on 30,000 rows (its Lloyd steps saw a sample).
TEST(EngineInit, KmeansOnAllRowsReachesLloydsFixedPoint) {
  constexpr std::size_t N = 30000, K = 4;
  std::mt19937_64 rng(23);
  std::normal_distribution<double> z(0.0, 1.0);
  std::vector<double> v(N);
  for (std::size_t r = 0; r < N; ++r) v[r] = 3.0 * static_cast<double>(r % K) + 1.2 * z(rng);
  const Model shape = diag_shape(K, 1);
  engine::EstimatorOptions est;
  est.precision = engine::Precision::fp64;
  auto lloyd_gap = [&](const Model& m) {  // largest |mean − mean of the rows nearest to it|
    std::vector<double> sum(K, 0.0), count(K, 0.0);
    for (double x : v) {
      std::size_t best = 0;
      for (std::size_t k = 1; k < K; ++k)
        if (std::abs(x - m.parts[0].mean[k]) < std::abs(x - m.parts[0].mean[best])) best = k;
      sum[best] += x;
      count[best] += 1.0;
    }
    double gap = 0.0;
    for (std::size_t k = 0; k < K; ++k) gap = std::max(gap, std::abs(m.parts[0].mean[k] - sum[k] / count[k]));
    return gap;
  };
  const Dataset rows = Dataset::from_vector(v, N, 1);
  int iterations = 0;
  const Model fixed = engine::initialise_kmeans(*engine::encoded_data(rows, {}), shape, 5, est, 2,
                                                engine::kKmeansMaxIterations, 0.0, &iterations);
  EXPECT_GT(iterations, 1);
  EXPECT_LT(iterations, engine::kKmeansMaxIterations);
  EXPECT_LT(lloyd_gap(fixed), 1e-12);
  const Model plus = engine::initialise_kmeans_pp(*engine::encoded_data(rows, {}), shape, 5, est, 2);
  EXPECT_GT(lloyd_gap(plus), 1e-6);
  // One iteration is one: the default tolerance stops no later than tolerance 0.
  int one = 0, by_default = 0;
  (void)engine::initialise_kmeans(*engine::encoded_data(rows, {}), shape, 5, est, 2, 1, 0.0, &one);
  (void)engine::initialise_kmeans(*engine::encoded_data(rows, {}), shape, 5, est, 2, engine::kKmeansMaxIterations,
                                  engine::kKmeansTolerance, &by_default);
  EXPECT_EQ(one, 1);
  EXPECT_LE(by_default, iterations);

  // Weights 1–3 against the rows repeated that many times (the sample differs, so the start
  // may too; the fixed point Lloyd's steps reach from it is compared by its condition).
  std::vector<double> weights(N), repeated;
  for (std::size_t r = 0; r < N; ++r) {
    weights[r] = static_cast<double>(1 + r % 3);
    for (int i = 0; i < static_cast<int>(weights[r]); ++i) repeated.push_back(v[r]);
  }
  const Model weighted = engine::initialise_kmeans(*engine::encoded_data(rows.with_weights(weights), {}), shape, 5, est,
                                                   1, engine::kKmeansMaxIterations, 0.0);
  // Weights far below 1 (each cluster's mass ≈ 0.075): a cluster of any positive mass moves to its
  // weighted mean — here the plain mean, so the unweighted fixed point's condition holds.
  const Model light =
      engine::initialise_kmeans(*engine::encoded_data(rows.with_weights(std::vector<double>(N, 1e-5)), {}), shape, 5,
                                est, 1, engine::kKmeansMaxIterations, 0.0);
  EXPECT_LT(lloyd_gap(light), 1e-9);
  v = repeated;
  EXPECT_LT(lloyd_gap(weighted), 1e-12);
}

// The same in two columns of unequal spread, where nearness is measured in k-means's
// coordinates (fitted to k-means++'s sample, which the test draws the same way): at the fixed
// point each initial mean is the mean of the rows whose coordinates are nearest to its own.
// And the handle visits its rows in chunks, in order, each once (150,000 rows: three chunks).
TEST(EngineInit, KmeansFixedPointInTwoColumnsAndEveryRowVisited) {
  constexpr std::size_t N = 150000, K = 5, C = 2;
  std::mt19937_64 rng(29);
  std::normal_distribution<double> z(0.0, 1.0);
  std::vector<double> v(N * C);
  for (std::size_t r = 0; r < N; ++r) {
    v[r * C] = 4.0 * static_cast<double>(r % K) + z(rng);
    v[r * C + 1] = 100.0 * static_cast<double>((r * 3) % K) + 30.0 * z(rng);
  }
  const Dataset rows = Dataset::from_vector(v, N, C);
  const auto handle = engine::encoded_data(rows, {});
  std::size_t next = 0, chunks = 0;
  std::vector<double> none;
  handle->fold_rows(none, [&](const Dataset& chunk, std::size_t first) {
    EXPECT_EQ(first, next);
    EXPECT_EQ(chunk.at(0, 0), v[first * C]);
    next += chunk.rows();
    ++chunks;
  });
  EXPECT_EQ(next, N);
  EXPECT_GT(chunks, 1u);

  const Model shape = diag_shape(K, C);
  engine::EstimatorOptions est;
  est.precision = engine::Precision::fp64;
  const Model m = engine::initialise_kmeans(*handle, shape, 9, est, 2, engine::kKmeansMaxIterations, 0.0);
  const engine::KmeansCoordinates coordinates(shape, handle->sample(9, engine::kmeans_sample_rows(K)));
  const Dataset means = Dataset::from_vector(m.parts[0].mean, K, C);
  std::vector<double> centres_t(C * K), x(C), sum(K * C, 0.0), count(K, 0.0);
  for (std::size_t k = 0; k < K; ++k) {
    coordinates.embed(means, k, x.data());
    for (std::size_t c = 0; c < C; ++c) centres_t[c * K + k] = x[c];
  }
  for (std::size_t r = 0; r < N; ++r) {
    coordinates.embed(rows, r, x.data());
    const std::size_t k = engine::nearest_centre(x.data(), centres_t.data(), K, C);
    count[k] += 1.0;
    for (std::size_t c = 0; c < C; ++c) sum[k * C + c] += v[r * C + c];
  }
  for (std::size_t k = 0; k < K; ++k) {
    ASSERT_GT(count[k], 0.0);
    EXPECT_NEAR(m.weights[k], count[k] / N, 1e-12) << k;
    for (std::size_t c = 0; c < C; ++c)
      EXPECT_NEAR(m.parts[0].mean[k * C + c], sum[k * C + c] / count[k],
                  1e-9 * (1.0 + std::abs(sum[k * C + c] / count[k])))
          << k << "," << c;
  }
}

// `--init kmeans` stops as docs/engine.md says and as scikit-learn's KMeans does by default: after
// 300 Lloyd iterations at most, or once the centres move less than 1e-4 (in coordinates of unit
// variance). No test data runs 300 iterations, so the cap is pinned to its documentation here.
TEST(EngineInit, KmeansStopsAtTheDocumentedDefaults) {
  EXPECT_EQ(engine::kKmeansMaxIterations, 300);
  EXPECT_EQ(engine::kKmeansTolerance, 1e-4);
}

}  // namespace
}  // namespace mixle
