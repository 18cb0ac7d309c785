// RunRecords, what rank 0 of a distributed fit writes: a checkpoint every `checkpoint_every`
// iterations (with the current restart's history and the best restart before it, carried over
// from a resumed checkpoint) and one step receipt per iteration, whose byte and time counts are
// this iteration's share of the running totals it is given. Other ranks write nothing.
#include "comms/process_util.hpp"
#include "host/run_records.hpp"

#include <mixle/error.hpp>
#include <mixle/model.hpp>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

namespace mixle::test {
namespace {

using host::RunFacts;
using host::RunRecords;

Model one_gaussian(double mean) {
  return model_from_json(R"({"format":"mixle-model","version":1,"weights":[1],"parts":[
    {"family":"gaussian_diag","columns":[0,1],"mean":[[)" +
                         std::to_string(mean) + R"(]],"var":[[1]]}]})");
}

/// Two collectives of one step: the statistics' all-reduce and a second, gathered update.
std::vector<plan::DistributedUpdate> two_updates() {
  plan::DistributedUpdate a;
  a.node_id = "statistics";
  a.mesh_axes = {plan::ParallelAxis::dp_replicate};
  a.contract_exact = true;
  plan::DistributedUpdate b;
  b.node_id = "shards";
  b.collective = plan::CollectiveKind::all_gather;
  b.mesh_axes = {plan::ParallelAxis::dp_replicate, plan::ParallelAxis::ep};
  b.state_layout = plan::StateLayout::sharded;
  return {a, b};
}

RunFacts rank0_facts() {
  RunFacts f;
  f.rank0 = true;
  f.data_rows = 1000;
  f.world_size = 4;
  f.data_parallel_size = 2;
  f.local_examples = 250;
  f.shard_components = 2;
  f.precision = "fp64";
  f.comm = "gloo";
  f.updates = two_updates();
  return f;
}

engine::IterationInfo iteration(int i, double mean_loglik) {
  engine::IterationInfo it;
  it.iteration = i;
  it.mean_loglik = mean_loglik;
  it.seconds = 0.5 * i;
  it.rows = 987.5;
  return it;
}

std::vector<nlohmann::json> receipts(const std::filesystem::path& file) {
  std::vector<nlohmann::json> out;
  std::istringstream lines(read_file(file));
  for (std::string line; std::getline(lines, line);) out.push_back(nlohmann::json::parse(line));
  return out;
}

TEST(RunRecords, ACheckpointIsDueEveryNthIterationOnlyWithAFolder) {
  DistributedOptions dist;
  dist.checkpoint_every = 3;
  const RunRecords none(dist, RunFacts{}, nullptr, {});
  for (int i = 1; i <= 9; ++i) EXPECT_FALSE(none.checkpoint_due(i)) << i;  // no folder
  dist.checkpoint_dir = "/nonexistent/checkpoints";
  const RunRecords every3(dist, RunFacts{}, nullptr, {});
  for (int i = 1; i <= 9; ++i) EXPECT_EQ(every3.checkpoint_due(i), i % 3 == 0) << i;
  // Fewer than one iteration between checkpoints writes none (and never divides by zero).
  for (const int every : {0, -2}) {
    dist.checkpoint_every = every;
    const RunRecords never(dist, RunFacts{}, nullptr, {});
    for (int i = 1; i <= 4; ++i) EXPECT_FALSE(never.checkpoint_due(i)) << every << " " << i;
  }
}

TEST(RunRecords, ByteCountsMustMatchTheUpdates) {
  DistributedOptions dist;
  EXPECT_THROW(RunRecords(dist, rank0_facts(), nullptr, {1}), Error);
  EXPECT_NO_THROW(RunRecords(dist, rank0_facts(), nullptr, {0, 0}));
}

TEST(RunRecords, EachReceiptCarriesItsIterationsShareOfTheTotals) {
  TempDir dir;
  DistributedOptions dist;
  dist.receipts_file = (dir.path / "receipts.jsonl").string();
  RunRecords records(dist, rank0_facts(), nullptr, {100, 10});
  records.record(0, iteration(1, -2.5), nullptr, {400, 30}, 1.25);
  engine::IterationInfo pruned = iteration(2, 0.75);
  pruned.pairs_per_row = 1.5;
  records.record(0, pruned, nullptr, {1000, 80}, 2.0);
  const std::vector<nlohmann::json> r = receipts(dist.receipts_file);
  ASSERT_EQ(r.size(), 2u);                                // the file holds every receipt so far, one a line
  EXPECT_FALSE(r[0]["extra"].contains("pairs_per_row"));  // not counted: absent
  EXPECT_EQ(r[1]["extra"]["pairs_per_row"], 1.5);
  EXPECT_EQ(r[0]["step"], 0);
  EXPECT_EQ(r[1]["step"], 1);
  EXPECT_EQ(r[0]["loss"], 2.5);
  EXPECT_EQ(r[1]["loss"], 0.0);  // a positive log-likelihood is no negative loss
  EXPECT_EQ(r[1]["extra"]["mean_loglik"], 0.75);
  EXPECT_EQ(r[0]["collective_bytes"], 300 + 20);
  EXPECT_EQ(r[1]["collective_bytes"], 600 + 50);
  EXPECT_EQ(r[0]["extra"]["update.statistics.bytes"], 300);
  EXPECT_EQ(r[0]["extra"]["update.shards.bytes"], 20);
  EXPECT_EQ(r[1]["extra"]["update.statistics.bytes"], 600);
  EXPECT_EQ(r[1]["extra"]["update.shards.bytes"], 50);
  EXPECT_EQ(r[0]["extra"]["collective_seconds"], 1.25);
  EXPECT_EQ(r[1]["extra"]["collective_seconds"], 0.75);
  for (const nlohmann::json& j : r) {
    EXPECT_EQ(j["local_examples"], 250);
    EXPECT_EQ(j["data_parallel_size"], 2);
    EXPECT_EQ(j["global_examples_observed"], 1000);
    EXPECT_EQ(j["optimizer"], "em");
    EXPECT_EQ(j["precision"], "fp64");
    EXPECT_EQ(j["extra"]["total_weight"], 987.5);
    EXPECT_EQ(j["extra"]["restart"], 0);
    EXPECT_EQ(j["extra"]["comm"], "gloo");
    EXPECT_EQ(j["extra"]["shard_components"], 2);
    EXPECT_EQ(j["extra"]["update.statistics.collective"], plan::collective_name(plan::CollectiveKind::all_reduce));
    EXPECT_EQ(j["extra"]["update.shards.collective"], plan::collective_name(plan::CollectiveKind::all_gather));
    EXPECT_EQ(j["extra"]["update.statistics.payload"], plan::payload_name(plan::PayloadKind::sufficient_statistic));
    EXPECT_EQ(j["extra"]["update.statistics.mesh_axes"], "dp_replicate");
    EXPECT_EQ(j["extra"]["update.shards.mesh_axes"], "dp_replicate,ep");
    EXPECT_EQ(j["extra"]["update.statistics.state_layout"], plan::state_layout_name(plan::StateLayout::replicated));
    EXPECT_EQ(j["extra"]["update.shards.state_layout"], plan::state_layout_name(plan::StateLayout::sharded));
    EXPECT_EQ(j["extra"]["update.statistics.contract_exact"], true);
    EXPECT_EQ(j["extra"]["update.shards.contract_exact"], false);
    EXPECT_EQ(j["extra"]["update.shards.exact"], false);
  }
  EXPECT_EQ(r[1]["extra"]["seconds"], 1.0);
}

TEST(RunRecords, UntimedCollectivesAndUnshardedRunsLeaveTheirFieldsOut) {
  TempDir dir;
  DistributedOptions dist;
  dist.receipts_file = (dir.path / "receipts.jsonl").string();
  RunFacts facts = rank0_facts();
  facts.shard_components = 0;
  RunRecords records(dist, facts, nullptr, {0, 0});
  records.record(0, iteration(1, -1.0), nullptr, {8, 8});
  const std::vector<nlohmann::json> r = receipts(dist.receipts_file);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_FALSE(r[0]["extra"].contains("collective_seconds"));
  EXPECT_FALSE(r[0]["extra"].contains("shard_components"));
}

TEST(RunRecords, OnlyRankZeroWrites) {
  TempDir dir;
  DistributedOptions dist;
  dist.receipts_file = (dir.path / "receipts.jsonl").string();
  dist.checkpoint_dir = (dir.path / "checkpoints").string();
  RunFacts facts = rank0_facts();
  facts.rank0 = false;
  RunRecords records(dist, facts, nullptr, {0, 0});
  records.record(0, iteration(1, -1.0), nullptr, {8, 8});  // due, but no model needed off rank 0
  EXPECT_FALSE(std::filesystem::exists(dist.receipts_file));
  EXPECT_FALSE(std::filesystem::exists(dist.checkpoint_dir));
}

TEST(RunRecords, CheckpointsHoldTheRestartsHistoryAndTheBestBeforeIt) {
  TempDir dir;
  DistributedOptions dist;
  dist.checkpoint_dir = (dir.path / "checkpoints").string();
  dist.checkpoint_every = 2;
  RunRecords records(dist, rank0_facts(), nullptr, {0, 0});
  const Model m1 = one_gaussian(1.0), m2 = one_gaussian(2.0);
  records.record(0, iteration(1, -3.0), &m1, {0, 0});
  EXPECT_FALSE(host::load_checkpoint(dist.checkpoint_dir));  // iteration 1 is not due
  records.record(0, iteration(2, -2.0), &m2, {0, 0});
  std::optional<host::Checkpoint> c = host::load_checkpoint(dist.checkpoint_dir);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->iteration, 2);
  EXPECT_EQ(c->restart, 0);
  EXPECT_EQ(c->data_rows, 1000u);
  EXPECT_EQ(c->world_size, 4);
  EXPECT_EQ(c->model.parts[0].mean, (std::vector<double>{2.0}));
  EXPECT_EQ(c->mean_loglik, (std::vector<double>{-3.0, -2.0}));
  EXPECT_FALSE(c->best);

  FitResult best;
  best.model = m1;
  best.final_mean_loglik = -1.5;
  best.mean_loglik = {-3.0, -2.0};
  records.set_best(best);
  records.record(1, iteration(1, -4.0), &m1, {0, 0});
  records.record(1, iteration(2, -3.5), &m2, {0, 0});
  c = host::load_checkpoint(dist.checkpoint_dir);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->restart, 1);
  EXPECT_EQ(c->mean_loglik, (std::vector<double>{-4.0, -3.5}));  // a new restart starts its own history
  ASSERT_TRUE(c->best);
  EXPECT_EQ(c->best->final_mean_loglik, -1.5);
  EXPECT_EQ(c->best->model.parts[0].mean, (std::vector<double>{1.0}));
}

TEST(RunRecords, ADueCheckpointNeedsTheGlobalModel) {
  TempDir dir;
  DistributedOptions dist;
  dist.checkpoint_dir = (dir.path / "checkpoints").string();
  RunRecords records(dist, rank0_facts(), nullptr, {0, 0});
  EXPECT_THROW(records.record(0, iteration(1, -2.0), nullptr, {0, 0}), Error);
  EXPECT_FALSE(host::load_checkpoint(dist.checkpoint_dir));
}

TEST(RunRecords, AResumedRunCarriesOnTheCheckpointsHistoryAndBest) {
  TempDir dir;
  DistributedOptions dist;
  dist.checkpoint_dir = (dir.path / "checkpoints").string();
  host::Checkpoint resumed;
  resumed.iteration = 3;
  resumed.restart = 1;
  resumed.mean_loglik = {-5.0, -4.0, -3.5};
  resumed.data_rows = 1000;
  resumed.model = one_gaussian(0.5);
  FitResult best;
  best.model = one_gaussian(0.25);
  best.final_mean_loglik = -2.25;
  best.mean_loglik = {-2.5, -2.25};
  resumed.best = best;
  RunRecords records(dist, rank0_facts(), &resumed, {0, 0});
  const Model m = one_gaussian(0.75);
  records.record(1, iteration(4, -3.25), &m, {0, 0});
  const std::optional<host::Checkpoint> c = host::load_checkpoint(dist.checkpoint_dir);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->iteration, 4);
  EXPECT_EQ(c->mean_loglik, (std::vector<double>{-5.0, -4.0, -3.5, -3.25}));
  ASSERT_TRUE(c->best);
  EXPECT_EQ(c->best->final_mean_loglik, -2.25);
  EXPECT_EQ(c->best->model.parts[0].mean, (std::vector<double>{0.25}));
}

}  // namespace
}  // namespace mixle::test
