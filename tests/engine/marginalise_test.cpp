// `--missing marginalise`: a row's missing values are left out of its log-density and of their
// columns' statistics. Oracles: (1) a column missing in every row gives the fit of the data and
// the initial model without that column, for every family that can marginalise — the rows then
// all take the host's per-column path, the reference fit only the kernels; (2) one EM iteration
// with values missing here and there equals the EM update written out by hand; (3) an incomplete
// row of integer weight w counts as w copies; (4) threads and the component-parallel handle
// change nothing. What cannot marginalise is refused with the remedy. Two ranks:
// tests/host/marginalise_ranks_test.cpp.
#include "common/json_numbers.hpp"
#include "engine_test_util.hpp"
#include "engine/incomplete_rows.hpp"

#include <mixle/data.hpp>
#include <mixle/error.hpp>
#include <mixle/fit.hpp>

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <numbers>

namespace mixle::test {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

/// 3 components over gaussian_diag:0-3, categorical:3-4:3, poisson:4-5 (the host tests' mixed
/// records), `rows` rows drawn with `seed`.
Dataset mixed_records(std::size_t rows, std::uint64_t seed) {
  return sample(model_from_json(R"({"format":"mixle-model","version":1,"weights":[0.5,0.3,0.2],"parts":[
    {"family":"gaussian_diag","columns":[0,3],"mean":[[0,0,0],[3,3,0],[0,4,-3]],"var":[[1,1,1],[0.5,2,1],[1,0.3,2]]},
    {"family":"categorical","columns":[3,4],"categories":3,"prob":[[0.8,0.1,0.1],[0.1,0.8,0.1],[0.1,0.1,0.8]]},
    {"family":"poisson","columns":[4,5],"rate":[[1],[6],[15]]}]})"),
                rows, seed);
}

/// `model` without data column `c`: the part holding it loses that column (or, holding only it,
/// goes), and the columns after it move down by one.
Model without_column(Model model, std::size_t c) {
  const std::size_t K = model.components();
  for (std::size_t i = model.parts.size(); i-- > 0;) {
    Part& p = model.parts[i];
    if (c >= p.col_end) continue;
    if (c < p.col_begin) {
      --p.col_begin;
      --p.col_end;
      continue;
    }
    const std::size_t D = p.dims(), d = c - p.col_begin;
    if (D == 1) {
      model.parts.erase(model.parts.begin() + static_cast<std::ptrdiff_t>(i));
      continue;
    }
    const std::size_t V = p.family == Family::categorical ? p.categories : 1;
    for (std::vector<double>* field : {&p.mean, &p.var, &p.prob, &p.rate, &p.shape}) {
      if (field->size() != K * D * V) continue;  // gaussian_spherical's var: one per component
      for (std::size_t k = K; k-- > 0;) {
        const auto at = field->begin() + static_cast<std::ptrdiff_t>((k * D + d) * V);
        field->erase(at, at + static_cast<std::ptrdiff_t>(V));
      }
    }
    --p.col_end;
  }
  return model;
}

/// Row-major `values` (C columns) without column `c`, or with NaN in it.
std::vector<double> drop_column(const std::vector<double>& values, std::size_t C, std::size_t c) {
  std::vector<double> out;
  for (std::size_t i = 0; i < values.size(); ++i)
    if (i % C != c) out.push_back(values[i]);
  return out;
}
std::vector<double> blank_column(std::vector<double> values, std::size_t C, std::size_t c) {
  for (std::size_t r = 0; r < values.size() / C; ++r) values[r * C + c] = kNaN;
  return values;
}

FitOptions from_model(const Model& start, const std::string& missing, int iterations = 25) {
  FitOptions o;
  o.init = InitMethod::model;
  o.init_model = start;
  o.precision = "fp64";
  o.threads = 1;
  o.max_iter = iterations;
  o.tol = 0.0;
  o.missing = missing;
  return o;
}

/// For each column: NaN in every row, marginalised, gives the fit without the column; the
/// column's own parameters stay the initial model's.
void expect_blank_columns_leave_the_rest_unchanged(const Model& start, const std::vector<double>& values, std::size_t C,
                                                   const std::vector<std::size_t>& columns) {
  const std::size_t N = values.size() / C;
  for (const std::size_t c : columns) {
    SCOPED_TRACE("column " + std::to_string(c) + " missing in every row");
    const FitResult marginalised =
        fit(Dataset::from_vector(blank_column(values, C, c), N, C), from_model(start, "marginalise"));
    const FitResult by_hand =
        fit(Dataset::from_vector(drop_column(values, C, c), N, C - 1), from_model(without_column(start, c), "error"));
    EXPECT_LT(max_relative_difference(without_column(marginalised.model, c), by_hand.model), 1e-9);
    EXPECT_NEAR(marginalised.final_mean_loglik, by_hand.final_mean_loglik, 1e-11 * std::abs(by_hand.final_mean_loglik));
    EXPECT_EQ(marginalised.marginalised_rows, N);
    EXPECT_EQ(marginalised.rows, N);
    EXPECT_DOUBLE_EQ(marginalised.total_weight, static_cast<double>(N));
    // Column c was observed by no row: its parameters are the start's.
    for (std::size_t i = 0; i < start.parts.size(); ++i) {
      const Part &s = start.parts[i], &m = marginalised.model.parts[i];
      if (c < s.col_begin || c >= s.col_end) continue;
      const std::size_t D = s.dims(), d = c - s.col_begin, V = s.family == Family::categorical ? s.categories : 1;
      for (const auto field : {&Part::mean, &Part::var, &Part::prob, &Part::rate, &Part::shape}) {
        if ((s.*field).size() != start.components() * D * V) continue;
        for (std::size_t k = 0; k < start.components(); ++k)
          for (std::size_t v = 0; v < V; ++v)
            EXPECT_EQ((m.*field)[(k * D + d) * V + v], (s.*field)[(k * D + d) * V + v]) << "component " << k;
      }
    }
  }
}

TEST(Marginalise, AColumnMissingEverywhereGivesTheFitWithoutIt) {
  const Dataset data = mixed_records(3000, 21);
  const Model start = model_from_json(R"({"format":"mixle-model","version":1,"weights":[0.4,0.3,0.3],"parts":[
    {"family":"gaussian_diag","columns":[0,3],"mean":[[0.2,0,0],[3,2.5,0],[0,4,-2.5]],"var":[[1,1,1],[1,1,1],[1,1,1]]},
    {"family":"categorical","columns":[3,4],"categories":3,"prob":[[0.6,0.2,0.2],[0.2,0.6,0.2],[0.2,0.2,0.6]]},
    {"family":"poisson","columns":[4,5],"rate":[[2],[5],[12]]}]})");
  expect_blank_columns_leave_the_rest_unchanged(start, data.values(), data.cols(), {1, 3, 4});
}

TEST(Marginalise, EveryFamilyThatCanLeaveAColumnOut) {
  const Model truth = model_from_json(R"({"format":"mixle-model","version":1,"weights":[0.55,0.45],"parts":[
    {"family":"gaussian_spherical","columns":[0,2],"mean":[[0,1],[3,-2]],"var":[1,2]},
    {"family":"lognormal","columns":[2,4],"log_mean":[[0,1],[1,0]],"log_var":[[0.2,0.3],[0.3,0.2]]},
    {"family":"gamma","columns":[4,6],"shape":[[2,5],[6,2]],"rate":[[1,2],[3,0.5]]},
    {"family":"exponential","columns":[6,8],"rate":[[0.5,2],[3,0.7]]},
    {"family":"bernoulli","columns":[8,10],"prob":[[0.2,0.6],[0.9,0.3]]},
    {"family":"categorical","columns":[10,12],"categories":2,"prob":[[[0.7,0.3],[0.4,0.6]],[[0.1,0.9],[0.8,0.2]]]},
    {"family":"poisson","columns":[12,14],"rate":[[2,9],[6,1]]}]})");
  const Dataset data = sample(truth, 2000, 17);
  Model start = truth;  // a start away from the truth, so EM has work to do
  start.weights = {0.5, 0.5};
  for (Part& p : start.parts)
    for (std::vector<double>* field : {&p.mean, &p.rate, &p.prob})
      for (double& v : *field)
        v = p.family == Family::bernoulli || p.family == Family::categorical ? 0.5 * (v + 0.5) : v * 1.2 + 0.1;
  // Each part has two columns (the second, blank, leaves the first to be read under every
  // component's own parameters), and every part is read in the rows another part's column left.
  expect_blank_columns_leave_the_rest_unchanged(start, data.values(), data.cols(), {1, 3, 5, 7, 9, 10, 11, 13});
}

// One iteration from a given model, values missing here and there, against the update written
// out: r_ik ∝ w_k Π_{observed d} p_d(x_id | k); a column's mean, variance and rate come from the
// rows that observed it, each weighted by r_ik.
TEST(Marginalise, OneIterationIsTheEmUpdateOverObservedValues) {
  const std::size_t N = 400, C = 3, K = 2;
  const Model start = model_from_json(R"({"format":"mixle-model","version":1,"weights":[0.5,0.5],"parts":[
    {"family":"gaussian_diag","columns":[0,2],"mean":[[0,0],[2,3]],"var":[[1,2],[1.5,1]]},
    {"family":"poisson","columns":[2,3],"rate":[[2],[7]]}]})");
  const Dataset drawn = sample(start, N, 5);
  std::vector<double> x = drawn.values();
  for (std::size_t r = 0; r < N; r += 7) x[r * C + r % C] = kNaN;  // each column misses some rows
  x[11 * C + 0] = x[11 * C + 2] = kNaN;                            // a row missing two columns
  std::vector<double> weights(N);
  for (std::size_t r = 0; r < N; ++r) weights[r] = 1.0 + static_cast<double>(r % 4) * 0.25;
  const FitResult one = fit(Dataset::from_vector(x, N, C).with_weights(weights), from_model(start, "marginalise", 1));

  // The E-step by hand.
  const Part &g = start.parts[0], &p = start.parts[1];
  std::vector<double> resp(N * K);
  double loglik = 0.0;
  for (std::size_t r = 0; r < N; ++r) {
    double lp[K], most = -1e300;
    for (std::size_t k = 0; k < K; ++k) {
      lp[k] = std::log(start.weights[k]);
      for (std::size_t d = 0; d < 2; ++d) {
        const double v = x[r * C + d];
        if (std::isnan(v)) continue;
        const double var = g.var[k * 2 + d], t = v - g.mean[k * 2 + d];
        lp[k] += -0.5 * std::log(2 * std::numbers::pi * var) - t * t / (2 * var);
      }
      const double n = x[r * C + 2];
      if (!std::isnan(n)) lp[k] += n * std::log(p.rate[k]) - p.rate[k] - std::lgamma(n + 1);
      most = std::max(most, lp[k]);
    }
    const double lse = most + std::log(std::exp(lp[0] - most) + std::exp(lp[1] - most));
    loglik += weights[r] * lse;
    for (std::size_t k = 0; k < K; ++k) resp[r * K + k] = weights[r] * std::exp(lp[k] - lse);
  }
  double total_weight = 0.0;
  for (double w : weights) total_weight += w;
  EXPECT_NEAR(one.mean_loglik[0], loglik / total_weight, 1e-12 * std::abs(loglik / total_weight));
  // The M-step by hand.
  for (std::size_t k = 0; k < K; ++k) {
    double mass = 0.0;
    for (std::size_t r = 0; r < N; ++r) mass += resp[r * K + k];
    EXPECT_NEAR(one.model.weights[k], mass / total_weight, 1e-12);
    for (std::size_t c = 0; c < C; ++c) {
      double m0 = 0.0, m1 = 0.0;
      for (std::size_t r = 0; r < N; ++r)
        if (!std::isnan(x[r * C + c])) {
          m0 += resp[r * K + k];
          m1 += resp[r * K + k] * x[r * C + c];
        }
      const double mean = m1 / m0;
      if (c == 2) {
        EXPECT_NEAR(one.model.parts[1].rate[k], mean, 1e-10 * mean);
        continue;
      }
      double m2 = 0.0;
      for (std::size_t r = 0; r < N; ++r)
        if (!std::isnan(x[r * C + c])) m2 += resp[r * K + k] * (x[r * C + c] - mean) * (x[r * C + c] - mean);
      EXPECT_NEAR(one.model.parts[0].mean[k * 2 + c], mean, 1e-10 * (1 + std::abs(mean)));
      EXPECT_NEAR(one.model.parts[0].var[k * 2 + c], m2 / m0 + 1e-6, 1e-10 * (m2 / m0));
    }
  }
  EXPECT_EQ(one.marginalised_rows, (N + 6) / 7 + 1);
  ASSERT_FALSE(one.warnings.empty());
  EXPECT_NE(one.warnings[0].find("their missing values were left out (marginalised)"), std::string::npos)
      << one.warnings[0];
  EXPECT_NE(one.warnings[0].find("(rows 0, 7, 11, 14, "), std::string::npos) << one.warnings[0];
}

// A column's mass is the component's less its missing mass: below 1e-10 of the component's
// (and at least 1e-8) it is taken for rounding and the column keeps its parameters; above, the
// rows that observed it set them, however light.
TEST(Marginalise, AColumnObservedByLightRowsIsEstimatedAboveTheRoundingFloor) {
  const Model start = model_from_json(R"({"format":"mixle-model","version":1,"weights":[1],"parts":[
    {"family":"gaussian_diag","columns":[0,2],"mean":[[0,0]],"var":[[1,1]]}]})");
  std::vector<double> x, weights(1001, 1.0);
  for (std::size_t r = 0; r < 1000; ++r) x.insert(x.end(), {std::sin(static_cast<double>(r)), kNaN});
  x.insert(x.end(), {0.5, 5.0});                 // the only row that observes column 1
  for (const double light : {1.5e-7, 0.5e-7}) {  // 1.5e-10 and 0.5e-10 of the component's mass
    weights[1000] = light;
    const FitResult r =
        fit(Dataset::from_vector(x, 1001, 2).with_weights(weights), from_model(start, "marginalise", 1));
    EXPECT_NEAR(r.model.parts[0].mean[1], light > 1e-7 ? 5.0 : 0.0, 1e-6) << "weight " << light;
  }
}

TEST(Marginalise, AnIncompleteRowOfIntegerWeightCountsAsItsCopies) {
  const Model start = model_from_json(R"({"format":"mixle-model","version":1,"weights":[0.5,0.5],"parts":[
    {"family":"gaussian_diag","columns":[0,2],"mean":[[0,0],[2,3]],"var":[[1,2],[1.5,1]]},
    {"family":"categorical","columns":[2,3],"categories":2,"prob":[[0.7,0.3],[0.2,0.8]]}]})");
  const Dataset drawn = sample(start, 300, 9);
  std::vector<double> x = drawn.values(), weights(300, 1.0), copies;
  for (std::size_t r = 0; r < 300; r += 5) x[r * 3 + (r / 5) % 3] = kNaN;
  for (std::size_t r = 0; r < 300; ++r) {
    weights[r] = static_cast<double>(1 + r % 3);
    for (std::size_t i = 0; i < weights[r]; ++i) copies.insert(copies.end(), x.begin() + r * 3, x.begin() + r * 3 + 3);
  }
  const FitResult weighted =
      fit(Dataset::from_vector(x, 300, 3).with_weights(weights), from_model(start, "marginalise", 20));
  const FitResult repeated =
      fit(Dataset::from_vector(copies, copies.size() / 3, 3), from_model(start, "marginalise", 20));
  EXPECT_LT(max_relative_difference(weighted.model, repeated.model), 1e-12);
  EXPECT_DOUBLE_EQ(weighted.total_weight, repeated.total_weight);
  EXPECT_NEAR(weighted.final_mean_loglik, repeated.final_mean_loglik, 1e-12 * std::abs(repeated.final_mean_loglik));
  // float32 rows (the kernels then read the complete ones in float32) reach the same model.
  std::vector<float> x32(x.begin(), x.end());
  FitOptions f32 = from_model(start, "marginalise", 20);
  f32.precision = "fp32";
  const FitResult single = fit(Dataset::from_vector(x32, 300, 3).with_weights(weights), f32);
  EXPECT_LT(max_relative_difference(single.model, weighted.model), 1e-4);
}

// The host folds incomplete rows in chunks on the fit's threads, the chunks' sums added in order:
// any thread count gives the same bits; the component-parallel backend marginalises as well.
TEST(Marginalise, ThreadsDoNotChangeTheResult) {
  const Dataset data = mixed_records(3000, 22);
  std::vector<double> x = data.values();
  for (std::size_t r = 0; r < 3000; r += 2) x[r * 5 + r % 5] = kNaN;  // 1500 rows: six chunks
  FitOptions o;
  o.components = 3;
  o.layout = "gaussian_diag:0-3,categorical:3-4,poisson:4-5";
  o.seed = 2;
  o.max_iter = 5;
  o.missing = "marginalise";
  o.threads = 1;
  const FitResult one = fit(Dataset::from_vector(x, 3000, 5), o);
  o.threads = 4;
  const FitResult four = fit(Dataset::from_vector(x, 3000, 5), o);
  EXPECT_EQ(model_numbers(four.model), model_numbers(one.model));
  EXPECT_EQ(four.mean_loglik, one.mean_loglik);
  EXPECT_EQ(one.marginalised_rows, 1500u);
  // The component-parallel handle (components threaded in the kernels) folds them the same way.
  o.backend = "component_parallel";
  o.num_workers = 3;
  const FitResult threaded = fit(Dataset::from_vector(x, 3000, 5), o);
  EXPECT_LT(max_relative_difference(threaded.model, one.model), 1e-12);
  EXPECT_EQ(threaded.marginalised_rows, 1500u);
}

// An incomplete row that no component can produce from its observed values is the kernels'
// error for impossible rows, naming it.
TEST(Marginalise, AnImpossibleIncompleteRowIsNamed) {
  const Model start = model_from_json(R"({"format":"mixle-model","version":1,"weights":[0.5,0.5],"parts":[
    {"family":"gaussian_diag","columns":[0,1],"mean":[[0],[2]],"var":[[1],[1]]},
    {"family":"categorical","columns":[1,2],"categories":3,"prob":[[0.5,0,0.5],[0.5,0,0.5]]}]})");
  std::vector<double> x;
  for (std::size_t r = 0; r < 50; ++r) x.insert(x.end(), {static_cast<double>(r % 3), r % 2 ? 2.0 : 0.0});
  x[17 * 2] = kNaN;
  x[17 * 2 + 1] = 1.0;  // code 1: probability 0 in both components
  // The first E-step raises it — its kernels' pass meets the row too, held at weight 0 with its
  // missing value replaced — so no iteration completes.
  FitOptions o = from_model(start, "marginalise", 1);
  int iterations = 0;
  o.progress = [&](const FitProgress&) { ++iterations; };
  try {
    fit(Dataset::from_vector(x, 50, 2), o);
    ADD_FAILURE() << "no error";
  } catch (const ImpossibleEvidence& e) {
    EXPECT_NE(std::string(e.what()).find("1 row(s) have zero probability under every component (rows 17)"),
              std::string::npos)
        << e.what();
  }
  EXPECT_EQ(iterations, 0);
}

// The host's fold of incomplete rows reports an impossible row itself, as the kernels do —
// called directly here, without the kernels' pass over the same rows (which meets the row too,
// held at weight 0, and raises first in a fit). Row 3 of 6 is the only impossible one; the
// others, incomplete too, fold without error.
TEST(Marginalise, TheHostFoldNamesAnImpossibleIncompleteRow) {
  const Model model = model_from_json(R"({"format":"mixle-model","version":1,"weights":[0.5,0.5],"parts":[
    {"family":"gaussian_diag","columns":[0,1],"mean":[[0],[2]],"var":[[1],[1]]},
    {"family":"categorical","columns":[1,2],"categories":3,"prob":[[0.5,0,0.5],[0.5,0,0.5]]}]})");
  std::vector<double> x;
  for (std::size_t r = 0; r < 6; ++r) x.insert(x.end(), {kNaN, r == 3 ? 1.0 : 2.0});  // code 1: probability 0
  const Dataset rows = Dataset::from_vector(x, 6, 2);
  engine::IncompleteRows incomplete;
  for (std::size_t r = 0; r < 6; ++r) incomplete.add(r, 1.0, {0});
  const auto size = static_cast<std::size_t>(engine::stat_layout(model).size + engine::missing_mass_size(model));
  std::vector<double> stats(size, 0.0);
  try {
    engine::accumulate_incomplete(model, rows, incomplete, Precision::fp64, 1, stats);
    ADD_FAILURE() << "no error";
  } catch (const ImpossibleEvidence& e) {
    EXPECT_NE(std::string(e.what()).find("1 row(s) have zero probability under every component (rows 3)"),
              std::string::npos)
        << e.what();
  }
  // Without the impossible row the same fold completes: five rows' weight in the header.
  engine::IncompleteRows possible;
  for (std::size_t r = 0; r < 6; ++r)
    if (r != 3) possible.add(r, 1.0, {0});
  std::fill(stats.begin(), stats.end(), 0.0);
  engine::accumulate_incomplete(model, rows, possible, Precision::fp64, 1, stats);
  EXPECT_EQ(stats[1], 5.0);
}

TEST(Marginalise, WhatCannotMarginaliseIsRefusedWithTheRemedy) {
  const std::vector<double> x{0.0, 1.0, kNaN, 2.0, 1.0, 0.5, 3.0, kNaN, 2.5, 0.0, 1.0, 1.0};
  FitOptions o;
  o.components = 1;
  o.missing = "marginalise";
  o.layout = "gaussian_diag:0-1,gaussian_full:1-3";
  expect_invalid_input([&] { fit(Dataset::from_vector(x, 4, 3), o); },
                       {"parts[1] (gaussian_full, columns 1-2)", "--missing drop", "gaussian_diag"});
  o.layout = "gaussian_tied";
  expect_invalid_input([&] { fit(Dataset::from_vector(x, 4, 3), o); }, {"gaussian_tied", "--missing drop"});
  o.layout = "gaussian_diag";
  o.backend = "component_sharded";
  o.components = 2;
  expect_invalid_input([&] { fit(Dataset::from_vector(x, 4, 3), o); }, {"component sharding", "--missing drop"});
  // Every row missing a value: an initialisation from rows has no complete row to start from.
  o.backend = "local";
  o.components = 1;
  const std::vector<double> holed{kNaN, 1.0, 2.0, kNaN};
  expect_invalid_input([&] { fit(Dataset::from_vector(holed, 2, 2), o); },
                       {"every row has a missing value", "--init-model"});
  // The default still refuses NaN, naming the row.
  o.missing = "error";
  expect_invalid_input([&] { fit(Dataset::from_vector(x, 4, 3), o); }, {"row 0, column 2"});
}

}  // namespace
}  // namespace mixle::test
