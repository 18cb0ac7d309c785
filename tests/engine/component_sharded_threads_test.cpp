// Component-sharded EM with the shards on threads of one process (backend "component_sharded"):
// the fit equals the unsharded fit (fp64, rtol 1e-9) for gaussian_diag, a mixed record and
// gaussian_full at several shard counts; a failure inside the shards reaches the caller as the
// root cause; K < shards is a usage error.
#include "common/json_numbers.hpp"
#include "engine_test_util.hpp"
#include "engine/component_sharded.hpp"

#include <mixle/error.hpp>
#include <mixle/fit.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <exception>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

namespace mixle {
namespace {

using test::truth_model;

using test::max_relative_difference;

struct Case {
  std::string kind, layout;
  std::size_t K;
  int shards;
};
void PrintTo(const Case& c, std::ostream* os) { *os << c.kind << " K=" << c.K << " shards=" << c.shards; }

class ComponentShardedThreads : public ::testing::TestWithParam<Case> {};

TEST_P(ComponentShardedThreads, EqualsTheUnshardedFitFp64) {
  const Case c = GetParam();
  const Dataset data = sample(truth_model(c.kind), 3000, 11);
  FitOptions o;
  o.components = c.K;
  o.layout = c.layout;
  o.seed = 4;
  o.max_iter = 8;
  o.tol = 0;
  o.precision = "fp64";
  o.threads = 1;
  o.n_init = 2;  // restarts go through the same driver
  std::vector<double> plain_progress, sharded_progress;
  o.progress = [&](const FitProgress& p) { plain_progress.push_back(p.mean_loglik); };
  const FitResult plain = fit(data, o);
  FitOptions s = o;
  s.backend = "component_sharded";
  s.num_workers = c.shards;
  s.progress = [&](const FitProgress& p) { sharded_progress.push_back(p.mean_loglik); };
  const FitResult sharded = fit(data, s);
  // Progress once per iteration (one shard reports, whatever their number), with the same values.
  ASSERT_EQ(sharded_progress.size(), plain_progress.size());
  for (std::size_t i = 0; i < plain_progress.size(); ++i)
    EXPECT_NEAR(sharded_progress[i], plain_progress[i], 1e-9 * std::abs(plain_progress[i])) << i;
  EXPECT_EQ(sharded.iterations, plain.iterations);
  EXPECT_EQ(sharded.best_restart, plain.best_restart);
  EXPECT_EQ(sharded.rows, plain.rows);
  EXPECT_NEAR(sharded.final_mean_loglik, plain.final_mean_loglik, 1e-9 * std::abs(plain.final_mean_loglik));
  EXPECT_LT(max_relative_difference(sharded.model, plain.model), 1e-9);
}

INSTANTIATE_TEST_SUITE_P(Families, ComponentShardedThreads,
                         ::testing::Values(Case{"diag", "gaussian_diag", 16, 1}, Case{"diag", "gaussian_diag", 16, 2},
                                           Case{"diag", "gaussian_diag", 16, 3}, Case{"diag", "gaussian_diag", 16, 4},
                                           Case{"full", "gaussian_full", 4, 2},
                                           Case{"mixed", "gaussian_diag:0-2,categorical:2-3:3,poisson:3-4", 3, 3}),
                         [](const auto& info) { return info.param.kind + "_" + std::to_string(info.param.shards); });

TEST(ComponentShardedThreads, AnImpossibleRowIsReportedByTheShardsNotAsAHang) {
  // Category 2 has probability 0 in both components; row 5 has category 2.
  const Model start = model_from_json(R"({"format":"mixle-model","version":1,"weights":[0.5,0.5],"parts":[
      {"family":"categorical","columns":[0,1],"categories":3,"prob":[[0.5,0.5,0],[0.2,0.8,0]]}]})");
  std::vector<double> values(40, 0.0);
  for (std::size_t i = 0; i < values.size(); ++i) values[i] = static_cast<double>(i % 2);
  values[5] = 2.0;
  const Dataset data = Dataset::from_vector(values, values.size(), 1);
  FitOptions o;
  o.init = InitMethod::model;
  o.init_model = start;
  o.pseudo_count = 0;
  o.backend = "component_sharded";
  o.num_workers = 2;
  o.threads = 1;
  try {
    fit(data, o);
    FAIL() << "expected ImpossibleEvidence";
  } catch (const ImpossibleEvidence& e) {
    EXPECT_NE(std::string(e.what()).find("5"), std::string::npos) << e.what();
  }
}

/// Options of a fp64, one-thread fit from the diag truth's shape with these means (K = 4, D = 3,
/// unit variances, equal weights): a start that puts chosen components far from every row.
FitOptions from_means(const std::string& means, int max_iter) {
  FitOptions o;
  o.init = InitMethod::model;
  o.init_model = model_from_json(R"({"format":"mixle-model","version":1,"weights":[0.25,0.25,0.25,0.25],"parts":[
      {"family":"gaussian_diag","columns":[0,3],"mean":)" +
                                 means + R"(,"var":[[1,1,1],[1,1,1],[1,1,1],[1,1,1]]}]})");
  o.max_iter = max_iter;
  o.tol = 0;
  o.precision = "fp64";
  o.threads = 1;
  return o;
}

/// The same options with the components on `shards` threads.
FitOptions sharded_over(FitOptions o, int shards) {
  o.backend = "component_sharded";
  o.num_workers = shards;
  return o;
}

TEST(ComponentShardedThreads, EmptyComponentsOfEveryShardAreReportedAsUnsharded) {
  // Components 1 and 3 start far from every row: they end empty, in shards 0 and 1.
  const Dataset data = sample(truth_model("diag"), 2000, 6);
  const FitOptions o = from_means("[[0,0,0],[900,900,900],[0,4,0],[-900,0,900]]", 4);
  const FitResult plain = fit(data, o);
  const FitResult sharded = fit(data, sharded_over(o, 2));
  auto mentions = [](const std::vector<std::string>& warnings, const std::string& what) {
    for (const auto& w : warnings)
      if (w.find(what) != std::string::npos) return true;
    return false;
  };
  ASSERT_TRUE(mentions(plain.warnings, "component 3 captured no rows"))
      << "the test needs shard 1 to hold an empty component";
  for (const auto& w : plain.warnings)
    EXPECT_TRUE(std::find(sharded.warnings.begin(), sharded.warnings.end(), w) != sharded.warnings.end())
        << "missing from the sharded fit: " << w;
  EXPECT_EQ(sharded.warnings.size(), plain.warnings.size());
}

// Every component of one shard starts far from every row: that shard folds no mass at all, keeps
// its parameters with weight 0, and the fit still equals the unsharded one (whose M-step does the
// same per component).
TEST(ComponentShardedThreads, AShardWhoseComponentsAreAllEmptyKeepsThemAtWeightZero) {
  const Dataset data = sample(truth_model("diag"), 2000, 6);
  const FitOptions o = from_means("[[0,0,0],[4,0,0],[900,900,900],[-900,0,900]]", 3);
  const FitResult plain = fit(data, o);
  const FitOptions s = sharded_over(o, 2);  // shard 1 = components 2 and 3
  const FitResult sharded = fit(data, s);
  for (std::size_t k : {2u, 3u}) {
    EXPECT_EQ(sharded.model.weights[k], 0.0);
    for (std::size_t d = 0; d < 3; ++d)
      EXPECT_EQ(sharded.model.parts[0].mean[k * 3 + d], o.init_model->parts[0].mean[k * 3 + d]);
  }
  EXPECT_LT(max_relative_difference(sharded.model, plain.model), 1e-9);
  EXPECT_EQ(sharded.warnings.size(), plain.warnings.size());
  FitOptions negative = s;
  negative.num_workers = -1;
  try {
    fit(data, negative);
    ADD_FAILURE() << "num_workers = -1 accepted";
  } catch (const InvalidInput& e) {
    EXPECT_NE(std::string(e.what()).find("num_workers = -1 for component_sharded"), std::string::npos) << e.what();
  }
}

// A fit whose whole mass is one row (one shard, K = 1): the M-step needs some mass, not more
// than one row's.
TEST(ComponentShardedThreads, OneRowIsEnoughMass) {
  FitOptions o;
  o.components = 1;
  o.backend = "component_sharded";
  o.num_workers = 1;
  o.max_iter = 3;
  const FitResult r = fit(Dataset::from_vector(std::vector<double>{2.5, -1.0}, 1, 2), o);
  ASSERT_EQ(r.model.components(), 1u);
  EXPECT_EQ(r.model.parts[0].mean, (std::vector<double>{2.5, -1.0}));
  EXPECT_EQ(r.rows, 1u);
}

// A row impossible under one shard's components but not under another's is a valid row: the
// whole mixture's log-likelihood combines the shards' values row by row. Rows alternate between
// a code only component 0 allows and one only component 1 allows (one component per shard), so
// reading any other shard's or row's value would make a row look impossible.
TEST(ComponentShardedThreads, RowsImpossibleUnderOneShardAreCombinedRowByRow) {
  std::vector<double> codes;
  for (int i = 0; i < 600; ++i) codes.push_back(i % 3 == 2 ? 1.0 : (i % 2 == 0 ? 2.0 : 0.0));
  const Dataset data = Dataset::from_vector(codes, codes.size(), 1);
  FitOptions o;
  o.init = InitMethod::model;
  o.init_model = model_from_json(R"({"format":"mixle-model","version":1,"weights":[0.5,0.5],"parts":[
      {"family":"categorical","columns":[0,1],"categories":3,"prob":[[0,0.5,0.5],[0.5,0.5,0]]}]})");
  o.max_iter = 3;
  o.tol = 0;
  o.precision = "fp64";
  o.threads = 1;
  const FitResult whole = fit(data, o);
  o.backend = "component_sharded";
  o.num_workers = 2;
  const FitResult sharded = fit(data, o);
  EXPECT_LT(max_relative_difference(sharded.model, whole.model), 1e-9);
  EXPECT_EQ(sharded.rows, codes.size());
}

/// The error each of the unsharded fit and the fit on two component shards of `data` by `o`
/// throws, with the backend's name; a fit that succeeds is a test failure, and left out.
std::vector<std::pair<std::string, std::exception_ptr>> refusals(const Dataset& data, FitOptions o) {
  std::vector<std::pair<std::string, std::exception_ptr>> out;
  for (const auto& [backend, shards] : {std::pair{"local", 0}, std::pair{"component_sharded", 2}}) {
    o.backend = backend;
    o.num_workers = shards;
    try {
      (void)fit(data, o);
      ADD_FAILURE() << backend << " fitted";
    } catch (...) {
      out.emplace_back(backend, std::current_exception());
    }
  }
  return out;
}

// Rows impossible under every shard are reported as the unsharded fit reports them: their
// count, the first eight listed (in the message and the error's rows), and "…" for the rest.
TEST(ComponentShardedThreads, RowsImpossibleUnderEveryShardAreListedAsUnsharded) {
  std::vector<double> codes(600, 0.0);
  for (std::size_t i = 5; i < 25; ++i) codes[i] = 2.0;  // a code no component allows
  const Dataset data = Dataset::from_vector(codes, codes.size(), 1);
  FitOptions o;
  o.init = InitMethod::model;
  o.init_model = model_from_json(R"({"format":"mixle-model","version":1,"weights":[0.5,0.5],"parts":[
      {"family":"categorical","columns":[0,1],"categories":3,"prob":[[0.5,0.5,0],[0.2,0.8,0]]}]})");
  o.max_iter = 2;
  o.precision = "fp64";
  o.threads = 1;
  const std::vector<std::size_t> first_eight{5, 6, 7, 8, 9, 10, 11, 12};
  const std::string listed =
      "20 row(s) have zero probability under every component (rows 5, 6, 7, 8, 9, 10, 11, 12, …)";
  for (const auto& [backend, error] : refusals(data, o)) {
    SCOPED_TRACE(backend);
    try {
      std::rethrow_exception(error);
    } catch (const ImpossibleEvidence& e) {
      EXPECT_NE(std::string(e.what()).find(listed), std::string::npos) << e.what();
      EXPECT_EQ(e.rows(), first_eight);
    }
  }
}

// A row whose log-density is NaN under every shard is reported as the unsharded fit reports it,
// a NaN row (InvalidInput), not an impossible one: the row maximum skips NaN, so the fold must
// not take a row with no finite value for one of zero probability. A Poisson count of 1e308 is
// such a row in float32: the value overflows to +inf and x·log λ − log Γ(x + 1) is inf − inf.
// (float64 reads the same row as impossible.)
TEST(ComponentShardedThreads, RowsNaNUnderEveryShardAreReportedAsNaNAsUnsharded) {
  std::vector<double> counts(600);
  for (std::size_t i = 0; i < counts.size(); ++i) counts[i] = static_cast<double>(i % 7);
  counts[7] = 1e308;
  const Dataset data = Dataset::from_vector(counts, counts.size(), 1);
  FitOptions o;
  o.init = InitMethod::model;
  o.init_model = model_from_json(R"({"format":"mixle-model","version":1,"weights":[0.5,0.5],"parts":[
      {"family":"poisson","columns":[0,1],"rate":[[10],[20]]}]})");
  o.max_iter = 2;
  o.precision = "fp32";
  o.threads = 1;
  for (const auto& [backend, error] : refusals(data, o)) {
    SCOPED_TRACE(backend);
    try {
      std::rethrow_exception(error);
    } catch (const ImpossibleEvidence& e) {
      ADD_FAILURE() << "reported as impossible: " << e.what();
    } catch (const InvalidInput& e) {
      EXPECT_NE(std::string(e.what()).find("1 row(s) gave a NaN log-density (rows 7)"), std::string::npos) << e.what();
    }
  }
}

// The bytes of a model's parameters: every weight and every parameter value, float64.
TEST(ComponentShardedThreads, ModelParameterBytesCountEveryValue) {
  Model m = model_from_json(R"({"format":"mixle-model","version":1,"weights":[0.5,0.5],"parts":[
      {"family":"gaussian_diag","columns":[0,3],"mean":[[0,0,0],[1,1,1]],"var":[[1,1,1],[1,1,1]]},
      {"family":"poisson","columns":[3,4],"rate":[[1],[2]]}]})");
  EXPECT_EQ(engine::model_parameter_bytes(m), (2u + 2 * 3 + 2 * 3 + 2 * 1) * sizeof(double));
}

TEST(ComponentShardedThreads, MoreShardsThanComponentsIsAUsageError) {
  const Dataset data = sample(truth_model("diag"), 500, 2);
  FitOptions o;
  o.components = 2;
  o.layout = "gaussian_diag";
  o.backend = "COMPONENT_SHARDED";
  o.num_workers = 3;
  o.threads = 1;
  EXPECT_THROW(fit(data, o), UsageError);
}

// Without GPUs the automatic number of shards (num_workers 0) is two: two components fit, one is
// refused as fewer components than shards.
TEST(ComponentShardedThreads, TheAutomaticShardCountOnTheCpuIsTwo) {
  const Dataset data = sample(truth_model("diag"), 500, 2);
  FitOptions o;
  o.layout = "gaussian_diag";
  o.backend = "component_sharded";
  o.device = "cpu";
  o.num_workers = 0;
  o.threads = 1;
  o.max_iter = 2;
  o.components = 2;
  EXPECT_EQ(fit(data, o).model.components(), 2u);
  o.components = 1;
  EXPECT_THROW(fit(data, o), UsageError);
}

}  // namespace
}  // namespace mixle
