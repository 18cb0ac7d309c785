// `--missing drop`: rows with NaN in a modelled column take no part in the fit. The oracle is the
// fit of the same rows with those deleted by hand, from the same initial model — in one process
// through the API, and on two ranks under `mixle launch` (real processes on 127.0.0.1); NaN in a
// column no part models drops nothing; the default still refuses NaN naming the row.
#include "common/json_numbers.hpp"
#include "common/require.hpp"
#include "engine/engine_test_util.hpp"
#include "host/fit_process_util.hpp"
#include "host/missing_values.hpp"

#include <mixle/data.hpp>
#include <mixle/error.hpp>
#include <mixle/fit.hpp>

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <set>

namespace mixle::test {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
const std::string kLayout = "gaussian_diag:0-3,categorical:3-4:3,poisson:4-5";
// A start near the truth of make_mixed_records, so every fit here runs from the same model.
const char* kStart = R"({"format":"mixle-model","version":1,"weights":[0.4,0.3,0.3],"parts":[
    {"family":"gaussian_diag","columns":[0,3],"mean":[[0.2,0,0],[3,2.5,0],[0,4,-2.5]],"var":[[1,1,1],[1,1,1],[1,1,1]]},
    {"family":"categorical","columns":[3,4],"categories":3,"prob":[[0.6,0.2,0.2],[0.2,0.6,0.2],[0.2,0.2,0.6]]},
    {"family":"poisson","columns":[4,5],"rate":[[2],[5],[12]]}]})";

/// The rows of `data` (C columns) whose index is in `missing` get NaN in column `column`.
std::vector<double> with_nan(std::vector<double> values, std::size_t C, const std::set<std::size_t>& missing,
                             std::size_t column) {
  for (std::size_t r : missing) values[r * C + column] = kNaN;
  return values;
}

/// `values` without the rows in `missing`.
std::vector<double> without(const std::vector<double>& values, std::size_t C, const std::set<std::size_t>& missing) {
  std::vector<double> kept;
  for (std::size_t r = 0; r < values.size() / C; ++r)
    if (!missing.count(r)) kept.insert(kept.end(), values.begin() + r * C, values.begin() + (r + 1) * C);
  return kept;
}

FitOptions from_start(const std::string& missing) {
  FitOptions o;
  o.init = InitMethod::model;
  o.init_model = model_from_json(kStart);
  o.precision = "fp64";
  o.threads = 1;
  o.max_iter = 30;
  o.tol = 0.0;
  o.missing = missing;
  return o;
}

TEST(MissingRows, DroppedRowsGiveTheFitOfTheRowsDeletedByHand) {
  TempDir dir;
  const Dataset all = read_data(make_mixed_records(dir, 3000).string());
  const std::vector<double> values = all.values();
  const std::size_t C = all.cols();
  // NaN in each family's columns: a Gaussian, the categorical and the Poisson column.
  const std::set<std::size_t> gaussian{3, 10, 11, 2047, 2048}, categorical{500, 2999}, poisson{1234};
  std::vector<double> holed = with_nan(with_nan(with_nan(values, C, gaussian, 1), C, categorical, 3), C, poisson, 4);
  std::set<std::size_t> missing = gaussian;
  missing.insert(categorical.begin(), categorical.end());
  missing.insert(poisson.begin(), poisson.end());
  for (const bool f32 : {false, true}) {
    SCOPED_TRACE(f32 ? "float32 rows" : "float64 rows");
    auto dataset = [&](const std::vector<double>& v) {
      return f32 ? Dataset::from_vector(std::vector<float>(v.begin(), v.end()), v.size() / C, C)
                 : Dataset::from_vector(v, v.size() / C, C);
    };
    const FitResult dropped = fit(dataset(holed), from_start("drop"));
    const FitResult by_hand = fit(dataset(without(values, C, missing)), from_start("error"));
    EXPECT_LT(max_relative_difference(dropped.model, by_hand.model), 1e-9);
    EXPECT_NEAR(dropped.final_mean_loglik, by_hand.final_mean_loglik, 1e-12 * std::abs(by_hand.final_mean_loglik));
    EXPECT_EQ(dropped.dropped_rows, missing.size());
    EXPECT_EQ(dropped.rows, 3000 - missing.size());
    EXPECT_EQ(dropped.total_weight, by_hand.total_weight);
    ASSERT_FALSE(dropped.warnings.empty());
    EXPECT_EQ(dropped.warnings[0],
              "dropped 8 row(s) with a missing value (NaN) in a modelled column (rows 3, 10, 11, 500, 1234, 2047, "
              "2048, 2999, counted from 0); they take no part in the fit");
  }
  // The default refuses NaN, naming the first row that holds one.
  expect_invalid_input([&] { fit(Dataset::from_vector(holed, 3000, C), from_start("error")); },
                       {"row 3, column 1", "nan"});
  expect_invalid_input([&] { fit(Dataset::from_vector(holed, 3000, C), from_start("ignore")); },
                       {"'ignore'", "error, drop"});
}

TEST(MissingRows, WeightedRowsKeepTheirWeightUnlessDropped) {
  TempDir dir;
  const Dataset all = read_data(make_mixed_records(dir, 2000).string());
  const std::size_t C = all.cols();
  const std::set<std::size_t> missing{0, 7, 1999};
  std::vector<double> weights(2000), kept_weights;
  for (std::size_t r = 0; r < 2000; ++r) {
    weights[r] = 0.5 + static_cast<double>(r % 3);
    if (!missing.count(r)) kept_weights.push_back(weights[r]);
  }
  const std::vector<double> holed = with_nan(all.values(), C, missing, 0);
  const FitResult dropped = fit(Dataset::from_vector(holed, 2000, C).with_weights(weights), from_start("drop"));
  const FitResult by_hand = fit(
      Dataset::from_vector(without(all.values(), C, missing), 1997, C).with_weights(kept_weights), from_start("error"));
  EXPECT_LT(max_relative_difference(dropped.model, by_hand.model), 1e-9);
  EXPECT_DOUBLE_EQ(dropped.total_weight, by_hand.total_weight);
}

TEST(MissingRows, OnlyModelledColumnsCountAndNothingIsCopiedWithoutThem) {
  std::vector<double> v{1.0, 2.0, kNaN, 3.0, 4.0, 5.0, 2.0, 1.0, kNaN};
  const Dataset data = Dataset::from_vector(v, 3, 3);
  // Columns 0-2 modelled: rows 0 and 2 hold NaN there only in column 2, which is not.
  const host::DroppedRows none = host::drop_missing_rows(data, {PartSpec{Family::gaussian_diag, 0, 2, 0}});
  EXPECT_EQ(none.count, 0u);
  EXPECT_EQ(none.data.data(), data.data()) << "no row dropped: the rows themselves, not a copy";
  EXPECT_EQ(none.data.weights(), nullptr);
  // Column 2 modelled by a poisson part: those rows are dropped, their NaN become 0 (a count
  // every discrete family accepts) and their weight 0; the rest are untouched.
  const host::DroppedRows two =
      host::drop_missing_rows(data, {PartSpec{Family::gaussian_diag, 0, 2, 0}, PartSpec{Family::poisson, 2, 3, 0}});
  EXPECT_EQ(two.count, 2u);
  EXPECT_EQ(two.first, (std::vector<std::size_t>{0, 2}));
  ASSERT_NE(two.data.weights(), nullptr);
  EXPECT_EQ(std::vector<double>(two.data.weights(), two.data.weights() + 3), (std::vector<double>{0, 1, 0}));
  EXPECT_EQ(two.data.values(), (std::vector<double>{1, 2, 0, 3, 4, 5, 2, 1, 0}));
  // A continuous family takes 1 instead (valid for the positive families too).
  const host::DroppedRows positive = host::drop_missing_rows(data, {PartSpec{Family::gamma, 0, 3, 0}});
  EXPECT_EQ(positive.data.values(), (std::vector<double>{1, 2, 1, 3, 4, 5, 2, 1, 1}));
  // Messages keep naming the source's rows.
  const Dataset part = data.slice(1, 3);
  const host::DroppedRows sliced = host::drop_missing_rows(part, {PartSpec{Family::poisson, 0, 3, 0}});
  EXPECT_EQ(sliced.first, std::vector<std::size_t>{2});
  EXPECT_EQ(sliced.data.first_row(), 1u);
  // Every row missing: nothing is left to fit.
  FitOptions o;
  o.components = 1;
  o.layout = "poisson";
  o.missing = "drop";
  expect_invalid_input(
      [&] {
        fit(Dataset::from_vector(std::vector<double>{kNaN, 1.0, 2.0, kNaN}, 2, 2), o);
      },
      {"every row has a missing value"});
  test::expect_invalid_input(
      [&] {
        fit(Dataset::from_vector(std::vector<double>{1.0, kNaN}, 1, 2), o);
      },
      {"every row has a missing value"});
  EXPECT_EQ(host::drop_missing_rows(Dataset::from_vector(std::vector<double>{}, 0, 0), o).count, 0u);
  // Marginalising keeps the same copy and lists each row's missing columns — and refuses a part
  // that cannot leave a value out, called directly too.
  const host::DroppedRows kept = host::marginalise_missing_rows(
      data, {PartSpec{Family::gaussian_diag, 0, 2, 0}, PartSpec{Family::poisson, 2, 3, 0}});
  EXPECT_EQ(kept.data.values(), two.data.values());
  EXPECT_EQ(kept.incomplete.rows, (std::vector<std::size_t>{0, 2}));
  EXPECT_EQ(kept.incomplete.missing, (std::vector<std::size_t>{2, 2}));
  EXPECT_EQ(kept.incomplete.weights, (std::vector<double>{1, 1}));
  expect_invalid_input(
      [&] {
        host::marginalise_missing_rows(data, {PartSpec{Family::gaussian_full, 0, 3, 0}});
      },
      {"parts[0] (gaussian_full, columns 0-2)", "--missing drop"});
}

// The parts whose columns count are the initial model's when the fit starts from it, and the
// layout's otherwise — an initial model left in the options by an earlier run included.
TEST(MissingRows, TheModelledPartsAreTheStartingModelsOnlyWhenTheFitStartsFromIt) {
  FitOptions o = from_start("drop");
  o.layout = "poisson";
  const std::vector<PartSpec> from_model = host::modelled_parts(o, 5);
  ASSERT_EQ(from_model.size(), 3u);
  EXPECT_EQ(from_model[1].family, Family::categorical);
  EXPECT_EQ(from_model[1].col_begin, 3u);
  EXPECT_EQ(from_model[1].col_end, 4u);
  EXPECT_EQ(from_model[1].categories, 3u);
  o.init = InitMethod::kmeanspp;  // init_model still set, but not the start
  const std::vector<PartSpec> from_layout = host::modelled_parts(o, 5);
  ASSERT_EQ(from_layout.size(), 1u);
  EXPECT_EQ(from_layout[0].family, Family::poisson);
  EXPECT_EQ(from_layout[0].col_begin, 0u);
  EXPECT_EQ(from_layout[0].col_end, 5u);
}

// Two ranks under `mixle launch`, NaN rows in both ranks' halves: the model of the one-process
// drop (which the test above ties to the rows deleted by hand), and one warning naming every
// rank's rows in file order.
TEST(MissingRows, TwoRanksDropTheirOwnRowsAndAgreeWithOneProcess) {
  MIXLE_SKIP_UNLESS_BUILT_WITH(MIXLE_HAVE_GLOO, "gloo");
  TempDir dir;
  const Dataset all = read_data(make_mixed_records(dir, 4000).string());
  const std::set<std::size_t> missing{5, 1999, 2000, 3998};
  const std::vector<double> holed = with_nan(all.values(), 5, missing, 2);
  write_matrix((dir.path / "holed.npy").string(), holed.data(), 4000, 5);
  write_file_atomic((dir.path / "start.json").string(), kStart);
  auto args = [&](const std::string& out, const std::string& missing = "drop") {
    return std::vector<std::string>{MIXLE_CLI_PATH,
                                    "fit",
                                    "--data",
                                    (dir.path / "holed.npy").string(),
                                    "--init",
                                    (dir.path / "start.json").string(),
                                    "--precision",
                                    "fp64",
                                    "--max-iter",
                                    "20",
                                    "--tol",
                                    "0",
                                    "--threads",
                                    "1",
                                    "--missing",
                                    missing,
                                    "--quiet",
                                    "--out",
                                    (dir.path / out).string()};
  };
  // `mixle launch --nproc 2 -- mixle fit …` writing `out`, with `extra` options, logged as `out`.log.
  auto launched = [&](const std::string& out, const std::vector<std::string>& extra,
                      const std::string& missing = "drop") {
    std::vector<std::string> argv{MIXLE_CLI_PATH, "launch", "--nproc", "2", "--"};
    for (const auto& a : args(out, missing)) argv.push_back(a);
    argv.insert(argv.end(), extra.begin(), extra.end());
    return run_process(argv, {}, dir.path / (out + ".log"), 180s);
  };
  const std::string dropped =
      "dropped 4 row(s) with a missing value (NaN) in a modelled column (rows 5, 1999, 2000, 3998, counted from 0)";
  Process one = run_process(args("one.json"), {}, dir.path / "one.log", 120s);
  ASSERT_EQ(one.exit_code(), 0) << one.output();
  Process two = launched("two.json", {});
  ASSERT_EQ(two.exit_code(), 0) << two.output();
  EXPECT_LT(max_relative_difference(dir.path / "one.json", dir.path / "two.json"), 1e-9);
  EXPECT_NE(two.output().find(dropped), std::string::npos) << two.output();
  // Component-sharded over the same two ranks: both hold every row, so each dropped row counts
  // once (not once per shard), and the model is the one-process drop's.
  Process shards = launched("sharded.json", {"--shard-components", "2"});
  ASSERT_EQ(shards.exit_code(), 0) << shards.output();
  EXPECT_LT(max_relative_difference(dir.path / "one.json", dir.path / "sharded.json"), 1e-9);
  EXPECT_NE(shards.output().find(dropped), std::string::npos) << shards.output();
  // With --missing error (the default) the ranks refuse the file, naming the row.
  Process refused = launched("refused.json", {}, "error");
  EXPECT_NE(refused.exit_code(), 0);
  EXPECT_NE(refused.output().find("row 5, column 2"), std::string::npos) << refused.output();
  // Every row missing — one row, so rank 0 holds it and rank 1 none: refused as such.
  const std::vector<double> nothing(5, kNaN);
  write_matrix((dir.path / "holed.npy").string(), nothing.data(), 1, 5);
  Process none = launched("none.json", {});
  EXPECT_NE(none.exit_code(), 0);
  EXPECT_NE(none.output().find("every row (of every rank) has a missing value"), std::string::npos) << none.output();
  // So too component-sharded, where both ranks hold the row: it is counted once, and missing.
  Process none_sharded = launched("none-sharded.json", {"--shard-components", "2"});
  EXPECT_NE(none_sharded.exit_code(), 0);
  EXPECT_NE(none_sharded.output().find("every row (of every rank) has a missing value"), std::string::npos)
      << none_sharded.output();
}

}  // namespace
}  // namespace mixle::test
