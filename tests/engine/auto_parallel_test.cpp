// auto_parallel_estimator (engine/auto_parallel.hpp): plain when plan() places the rows with the
// whole model on each device; sharded when the fixed state only fits once cut and the world can
// run the shards; UnrealizedModelPlacement otherwise (never a silent fallback).
#include "common/cpu_resources.hpp"
#include "engine/auto_parallel.hpp"

#include <mixle/error.hpp>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <set>

namespace mixle::engine {
namespace {

plan::ModelSummary diag_model(std::size_t K, std::size_t D) {
  plan::ModelSummary m;
  m.components = K;
  m.parts = {plan::PartSummary{"gaussian_diag", D, 0}};
  return m;
}

/// The fixed state plan() charges each device: ceil((parameters + statistics) × 1.25).
std::uint64_t fixed_bytes(const plan::ModelSummary& m) {
  return static_cast<std::uint64_t>(std::ceil(static_cast<double>(m.parameter_bytes() + m.statistic_bytes()) * 1.25));
}

EstimatorOptions fp64() {
  EstimatorOptions e;
  e.precision = Precision::fp64;
  return e;
}

TEST(AutoParallel, PlainWhenTheModelFitsEveryDevice) {
  const auto m = diag_model(64, 8);
  const ParallelChoice unknown = auto_parallel_estimator(fp64(), m, test::cpu_devices(2, std::nullopt), 10000);
  EXPECT_EQ(unknown.kind, "plain");
  EXPECT_EQ(unknown.shard_components, 1);
  EXPECT_TRUE(unknown.shards.empty());
  const ParallelChoice roomy = auto_parallel_estimator(fp64(), m, test::cpu_devices(2, fixed_bytes(m) * 4), 10000);
  EXPECT_EQ(roomy.kind, "plain");
  EXPECT_EQ(roomy.placement.total_rows, 10000u);
}

// A model summary that describes no model is refused naming the model, not a placement.
TEST(AutoParallel, AnInvalidModelIsRefusedAsSuch) {
  try {
    (void)auto_parallel_estimator(fp64(), diag_model(0, 8), test::cpu_devices(2, std::nullopt), 100);
    ADD_FAILURE() << "a model of 0 components was accepted";
  } catch (const InvalidInput& e) {
    EXPECT_NE(std::string(e.what()).find("model components=0 is invalid"), std::string::npos) << e.what();
  }
}

TEST(AutoParallel, ShardedWhenOnlyHalfTheModelFits) {
  const auto full = diag_model(64, 8), half = diag_model(32, 8);
  // Room for half the model's state plus some rows, not for the whole model.
  const std::uint64_t memory = (fixed_bytes(full) + fixed_bytes(half)) / 2;
  ASSERT_LT(memory, fixed_bytes(full));
  const ParallelChoice c = auto_parallel_estimator(fp64(), full, test::cpu_devices(2, memory), 10000);
  EXPECT_EQ(c.kind, "sharded");
  EXPECT_TRUE(c.sharded());
  EXPECT_EQ(c.shard_components, 2);
  ASSERT_EQ(c.shards.size(), 2u);
  EXPECT_EQ(c.shards[0].component_start, 0u);
  EXPECT_EQ(c.shards[0].component_stop, c.shards[1].component_start);
  EXPECT_EQ(c.shards[1].component_stop, 64u);
  EXPECT_EQ(c.placement.total_rows, 10000u);
  EXPECT_NE(c.reason.find("does not fit one device"), std::string::npos) << c.reason;
  // A world of 4 ranks on 4 such devices: 4 shards of 16 fit too (model_sharding_plan uses
  // every device), one data group.
  const ParallelChoice four = auto_parallel_estimator(fp64(), full, test::cpu_devices(4, memory), 10000);
  EXPECT_EQ(four.shard_components, 4);
  // A world of 4 ranks with the 2 devices: 2 data groups of 2 shards, whose rows are planned
  // over the devices of ranks 0 and 2 — the list has no third, so its last stands in.
  const ParallelChoice wide = auto_parallel_estimator(fp64(), full, test::cpu_devices(2, memory), 10000, 1, 4);
  EXPECT_EQ(wide.shard_components, 2);
  ASSERT_FALSE(wide.placement.shards.empty());
  std::set<std::string> named;
  for (const auto& s : wide.placement.shards) named.insert(s.device.name);
  EXPECT_EQ(named, (std::set<std::string>{"cpu:0", "cpu:1"}));
}

TEST(AutoParallel, UnrealizedWhenEvenAShardDoesNotFit) {
  const auto full = diag_model(64, 8), quarter = diag_model(16, 8);
  // Less than a half model's state: two devices cannot hold it in two shards.
  try {
    auto_parallel_estimator(fp64(), full, test::cpu_devices(2, fixed_bytes(quarter)), 10000);
    FAIL() << "expected UnrealizedModelPlacement";
  } catch (const UnrealizedModelPlacement& e) {
    EXPECT_NE(std::string(e.what()).find("does not fit one device"), std::string::npos) << e.what();
    EXPECT_EQ(e.plan(), "") << "no split fits, so the planner chose none";
  }
}

TEST(AutoParallel, UnrealizedWhenNoExecutorCanRunTheShards) {
  const auto full = diag_model(64, 8), half = diag_model(32, 8);
  const std::uint64_t memory = (fixed_bytes(full) + fixed_bytes(half)) / 2;
  // min_components_per_shard = K leaves one shard: nothing to run it on one device.
  EXPECT_THROW(auto_parallel_estimator(fp64(), full, test::cpu_devices(2, memory), 10000, 64),
               UnrealizedModelPlacement);
  // Two shards, but a world of one rank (given, not the device count) has no group of 2.
  try {
    auto_parallel_estimator(fp64(), full, test::cpu_devices(2, memory), 10000, 1, 1);
    FAIL() << "expected UnrealizedModelPlacement";
  } catch (const UnrealizedModelPlacement& e) {
    EXPECT_NE(std::string(e.what()).find("the world of 1 rank(s)"), std::string::npos) << e.what();
  }
  // Two shards, but a world of 3 ranks does not divide into groups of 2: the message carries
  // the shards (JSON) and the plan's error.
  try {
    auto_parallel_estimator(fp64(), full, test::cpu_devices(2, memory), 10000, 1, 3);
    FAIL() << "expected UnrealizedModelPlacement";
  } catch (const UnrealizedModelPlacement& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("world of 3"), std::string::npos) << what;
    EXPECT_NE(what.find("component_start"), std::string::npos) << what;
    // plan(): the planner's shards, the ones model_sharding_plan gives.
    const auto shards = plan::model_sharding_plan(full, test::cpu_devices(2, memory), {});
    const nlohmann::json chosen = nlohmann::json::parse(e.plan());
    ASSERT_EQ(chosen.size(), shards.size()) << e.plan();
    for (std::size_t i = 0; i < shards.size(); ++i)
      EXPECT_EQ(plan::ModelShard::from_json(chosen[i].dump()), shards[i]) << e.plan();
  }
}

TEST(AutoParallel, UnrealizedWhenTheModelFitsOneDeviceButNoRowFitsBesideIt) {
  // One device with room for the whole model's state and not one row: cutting the components
  // cannot help (one device gives one shard), and the choice says so instead of planning a shard.
  const auto m = diag_model(64, 8);
  try {
    auto_parallel_estimator(fp64(), m, test::cpu_devices(1, fixed_bytes(m) + 1), 10000);
    FAIL() << "expected UnrealizedModelPlacement";
  } catch (const UnrealizedModelPlacement& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("model_sharding_plan gives 1 shard"), std::string::npos) << what;
    EXPECT_NE(what.find("K = 64"), std::string::npos) << what;
    EXPECT_NE(what.find("one row needs"), std::string::npos) << what;  // the plan's own error, carried
  }
}

TEST(AutoParallel, UnrealizedWhenAShardFitsButNoRowFitsBesideIt) {
  // Two devices, each with room for half the model's state (with plan()'s safety factor) and
  // not one row beside it: two shards, and no rows to give them.
  const auto full = diag_model(64, 8), half = diag_model(32, 8);
  try {
    auto_parallel_estimator(fp64(), full, test::cpu_devices(2, fixed_bytes(half) + 1), 10000);
    FAIL() << "expected UnrealizedModelPlacement";
  } catch (const UnrealizedModelPlacement& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("cut into 2 component shards, but the rows do not fit"), std::string::npos) << what;
    EXPECT_NE(what.find("component_start"), std::string::npos) << what;
    EXPECT_EQ(nlohmann::json::parse(e.plan()).size(), 2u) << e.plan();
  }
}

// How a run describes its layout (the summary's parallel: line, mixle plan --shard-components):
// one shard per group is data parallel whatever the group count; the reason in parentheses only
// when there is one.
TEST(AutoParallel, ParallelSummaryNamesTheMeshAndTheReason) {
  EXPECT_EQ(parallel_summary(4, 1, "--shard-components 1"), "data parallel (--shard-components 1)");
  EXPECT_EQ(parallel_summary(1, 1, ""), "data parallel");
  EXPECT_EQ(parallel_summary(2, 2, "why"), "component sharded: 2 data group(s) × 2 component shards (why)");
  EXPECT_EQ(parallel_summary(1, 4, ""), "component sharded: 1 data group(s) × 4 component shards");
}

}  // namespace
}  // namespace mixle::engine
