// Component-parallel E-step: threading components inside each block must give a model
// bit-identical to serial — for gaussian_diag K=16, a mixed record and gaussian_full, at
// num_workers 1, 2 and 4 — through the `component_parallel` handle and its aliases, and
// component_parallel_fold must equal the serial statistics bit for bit.
#include "engine/component_parallel.hpp"
#include "engine/encoded_data.hpp"
#include "engine_test_util.hpp"

#include <mixle/error.hpp>
#include <mixle/fit.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <ostream>
#include <thread>

namespace mixle {
namespace {

using test::truth_model;

struct Case {
  std::string kind, layout;
  std::size_t K;
};

// Test names show the case, not a byte dump of it.
void PrintTo(const Case& c, std::ostream* os) { *os << c.kind << " K=" << c.K; }

class ComponentParallel : public ::testing::TestWithParam<Case> {};

TEST_P(ComponentParallel, FitIsBitIdenticalToSerialAtEveryWorkerCount) {
  const Case c = GetParam();
  const Dataset data = sample(truth_model(c.kind), 2000, 3);
  FitOptions o;
  o.components = c.K;
  o.layout = c.layout;
  o.seed = 5;
  o.max_iter = 6;
  o.threads = 1;
  const std::string serial = model_to_json(fit(data, o).model);
  // Every worker count under the canonical name; the aliases once each (they resolve to it).
  const std::vector<std::pair<const char*, int>> runs = {{"component_parallel", 1},
                                                         {"component_parallel", 2},
                                                         {"component_parallel", 4},
                                                         {"model_parallel", 2},
                                                         {"MP_MODEL", 2}};
  for (const auto& [backend, workers] : runs) {
    FitOptions p = o;
    p.backend = backend;
    p.num_workers = workers;
    EXPECT_EQ(model_to_json(fit(data, p).model), serial) << backend << " with " << workers << " workers";
  }
}

INSTANTIATE_TEST_SUITE_P(Families, ComponentParallel,
                         ::testing::Values(Case{"diag", "gaussian_diag", 16}, Case{"full", "gaussian_full", 2},
                                           Case{"mixed", "gaussian_diag:0-2,categorical:2-3:3,poisson:3-4", 3}),
                         [](const auto& info) { return info.param.kind; });

TEST(ComponentParallelFold, EqualsSerialStatisticsBitForBit) {
  const Model model = truth_model("mixed");
  const Dataset data = sample(model, 5000, 9);
  engine::ComponentParallelEstimator serial{{}, 1}, threaded{{}, 2};
  const auto a = engine::component_parallel_fold(model, data, serial).values;
  const auto b = engine::model_parallel_fold(model, data, threaded).values;
  ASSERT_EQ(a.size(), b.size());
  EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * sizeof(double)), 0);
  EXPECT_EQ(a[1], 5000.0);  // every row folded once
}

TEST(ComponentParallelFold, WeightsGivenBesideTheRowsFoldEachRowThatManyTimes) {
  const Model model = truth_model("mixed");
  const Dataset data = sample(model, 700, 4);
  std::vector<double> w(700), repeated;
  for (std::size_t r = 0; r < 700; ++r) {
    w[r] = static_cast<double>(r % 3);  // 0, 1, 2
    for (int c = 0; c < static_cast<int>(w[r]); ++c)
      for (std::size_t j = 0; j < data.cols(); ++j) repeated.push_back(data.at(r, j));
  }
  engine::ComponentParallelEstimator est{{}, 2};
  est.inner.precision = engine::Precision::fp64;
  const auto weighted = engine::component_parallel_fold(model, data, w, est).values;
  const auto copies = engine::component_parallel_fold(
                          model, Dataset::from_vector(repeated, repeated.size() / data.cols(), data.cols()), est)
                          .values;
  ASSERT_EQ(weighted.size(), copies.size());
  EXPECT_EQ(weighted[1], static_cast<double>(repeated.size() / data.cols()));  // Σ w: the repeated rows
  for (std::size_t j = 0; j < copies.size(); ++j)
    EXPECT_NEAR(weighted[j], copies[j], 1e-9 * (1.0 + std::abs(copies[j]))) << "statistic " << j;
}

TEST(ComponentParallelFold, ImpossibleRowIsNamed) {
  // A categorical code whose probability is 0 in every component: ImpossibleEvidence naming row 1.
  const Model model = model_from_json(R"({"format":"mixle-model","version":1,"weights":[0.5,0.5],"parts":[
      {"family":"categorical","columns":[0,1],"categories":3,"prob":[[0.5,0.5,0],[0.5,0.5,0]]}]})");
  const Dataset data = Dataset::from_vector(std::vector<double>{0, 2, 1}, 3, 1);
  try {
    engine::component_parallel_fold(model, data, {{}, 2});
    FAIL() << "expected ImpossibleEvidence";
  } catch (const ImpossibleEvidence& e) {
    EXPECT_NE(std::string(e.what()).find("rows 1"), std::string::npos) << e.what();
  }
}

// 0 workers means every hardware thread; a count is kept as given, or capped at K where K is
// known (at least one worker even for no components); a negative count is refused.
TEST(ComponentParallelWorkers, ResolvedFromTheCountAndCappedAtTheComponents) {
  const int hardware = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  EXPECT_EQ(engine::resolve_workers(0), hardware);
  EXPECT_EQ(engine::resolve_workers(7), 7);
  EXPECT_EQ(engine::resolve_workers(1), 1);
  EXPECT_EQ(engine::resolve_workers(3, 2), 2);
  EXPECT_EQ(engine::resolve_workers(3, 3), 3);
  EXPECT_EQ(engine::resolve_workers(2, 5), 2);
  EXPECT_EQ(engine::resolve_workers(4, 0), 1);
  EXPECT_EQ(engine::resolve_workers(0, 1), 1);
  EXPECT_THROW(engine::resolve_workers(-1), InvalidInput);
  EXPECT_THROW(engine::resolve_workers(-2, 4), InvalidInput);
}

TEST(ComponentParallelHandle, RefusesCudaAndNegativeWorkers) {
  const Dataset data = Dataset::from_vector(std::vector<double>{0, 1, 2, 3}, 4, 1);
  engine::EncodedDataOptions o;
  o.backend = "component_parallel";
  o.device = "cuda";
  EXPECT_THROW(engine::encoded_data(data, o), InvalidInput);
  o.device = "cpu";
  o.num_workers = -1;
  EXPECT_THROW(engine::encoded_data(data, o), InvalidInput);
}

}  // namespace
}  // namespace mixle
