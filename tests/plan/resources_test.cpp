// DeviceSpec and Resources: validation, every constructor, JSON and save/load
// (docs/planning.md, "Devices and resources").
#include <mixle/error.hpp>
#include <mixle/plan.hpp>

#include "plan/test_util.hpp"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <unistd.h>

using namespace mixle::plan;
using mixle::InvalidInput;
using mixle::plan::testing::expect_mentions;
using mixle::plan::testing::message_of;

namespace {

DeviceSpec cpu(std::string name, double throughput = 1.0) {
  DeviceSpec d;
  d.name = std::move(name);
  d.throughput = throughput;
  return d;
}

}  // namespace

// Every spelling the reference accepts maps to its canonical name, case-insensitively.
TEST(Resources, PrecisionNamesAndTheirAliases) {
  for (const auto& [canonical, aliases] : std::vector<std::pair<std::string, std::vector<std::string>>>{
           {"float16", {"float16", "fp16", "f16", "half", "FP16"}},
           {"bfloat16", {"bfloat16", "bf16", "BF16"}},
           {"float32", {"float32", "fp32", "f32", "float", "Float32"}},
           {"float64", {"float64", "fp64", "f64", "double", "DOUBLE"}}}) {
    for (const std::string& alias : aliases) EXPECT_EQ(precision_name(alias), canonical) << alias;
  }
  EXPECT_THROW(precision_name("fp8"), mixle::InvalidInput);
}

TEST(Resources, RejectsNonFiniteThroughputWithFieldAndValue) {
  for (double bad : {std::nan(""), 0.0, -1.0, std::numeric_limits<double>::infinity()}) {
    auto msg = message_of<InvalidInput>([&] { Resources({cpu("cpu:0", bad)}); });
    expect_mentions(msg, {"cpu:0", "throughput=", "accepted", "> 0"});
  }
}

TEST(Resources, RejectsDuplicateNamesAndPhysicalIdentities) {
  auto msg = message_of<InvalidInput>([] { Resources({cpu("a"), cpu("a")}); });
  expect_mentions(msg, {"'a'", "twice", "unique"});

  DeviceSpec g0 = cpu("gpu-a");
  DeviceSpec g1 = cpu("gpu-b");
  for (DeviceSpec* g : {&g0, &g1}) {
    g->kind = "cuda";
    g->node_id = 0;
    g->local_rank = 1;
  }
  msg = message_of<InvalidInput>([&] { Resources({g0, g1}); });
  expect_mentions(msg, {"physical device", "node_id=0", "local_rank=1", "accepted"});
  // The same local rank on another node, or of another kind, is a different device.
  g1.node_id = 1;
  EXPECT_NO_THROW(Resources({g0, g1}));
}

TEST(Resources, RejectsEmptyAndBlankAndZeroMemory) {
  expect_mentions(message_of<InvalidInput>([] { Resources(std::vector<DeviceSpec>{}); }), {"at least one device"});
  expect_mentions(message_of<InvalidInput>([] { Resources({cpu("  ")}); }), {"blank", "accepted"});
  DeviceSpec d = cpu("cpu:0");
  d.memory_bytes = 0;
  expect_mentions(message_of<InvalidInput>([&] { Resources({d}); }), {"memory_bytes=0", "accepted"});
  d.memory_bytes.reset();
  d.local_rank = -1;
  expect_mentions(message_of<InvalidInput>([&] { Resources({d}); }), {"local_rank=-1", "accepted"});
}

TEST(Resources, FastestIsFirstMaximum) {
  Resources r({cpu("a", 1), cpu("b", 3), cpu("c", 3)});
  EXPECT_EQ(r.fastest().name, "b");
  EXPECT_EQ(r.find("c")->throughput, 3);
  EXPECT_EQ(r.find("zzz"), nullptr);
}

TEST(Resources, SingleCpuAndLocalSplitMemory) {
  Resources one = Resources::single_cpu({.memory_bytes = 1000, .precision = "fp32"});
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(one.devices()[0].name, "cpu:0");
  EXPECT_EQ(one.devices()[0].memory_bytes, 1000u);
  EXPECT_EQ(one.devices()[0].precision, "float32");  // canonicalised
  Resources four = Resources::local(4, {.memory_bytes = 1000});
  ASSERT_EQ(four.size(), 4u);
  EXPECT_EQ(four.devices()[3].name, "cpu:3");
  EXPECT_EQ(four.devices()[3].memory_bytes, 250u);
  // Fewer bytes than slots: each slot keeps one byte rather than a share of 0, which a device
  // may not have.
  for (const DeviceSpec& d : Resources::local(4, {.memory_bytes = 3}).devices()) EXPECT_EQ(d.memory_bytes, 1u);
  expect_mentions(message_of<InvalidInput>([] { Resources::local(0); }), {"num_cpus=0"});
  expect_mentions(message_of<InvalidInput>([] { Resources::single_cpu({.precision = "fp12"}); }), {"fp12", "float32"});
}

TEST(Resources, FromMpiThreeRanksSplitMemory) {
  Resources r = Resources::from_mpi(Environment{{"OMPI_COMM_WORLD_SIZE", "3"}}, {.memory_bytes = 900});
  ASSERT_EQ(r.size(), 3u);
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(r.devices()[i].name, "mpi:" + std::to_string(i));
    EXPECT_EQ(r.devices()[i].memory_bytes, 300u);
  }
  // Fewer bytes than ranks: each slot still gets one byte (0 would mean no memory at all).
  const Resources tiny = Resources::from_mpi(Environment{{"OMPI_COMM_WORLD_SIZE", "3"}}, {.memory_bytes = 2});
  for (const DeviceSpec& d : tiny.devices()) EXPECT_EQ(d.memory_bytes, 1u) << d.name;
  // Variables are consulted in the reference order; none set → one slot.
  EXPECT_EQ(Resources::from_mpi(Environment{{"PMIX_SIZE", "5"}, {"MPI_LOCALNRANKS", "2"}}).size(), 5u);
  EXPECT_EQ(Resources::from_mpi(Environment{}).size(), 1u);
  EXPECT_EQ(Resources::from_mpi(Environment{{"OMPI_COMM_WORLD_SIZE", "1"}}).size(), 1u);  // the least accepted
  expect_mentions(message_of<InvalidInput>([] {
                    Resources::from_mpi(Environment{{"OMPI_COMM_WORLD_SIZE", "0"}});
                  }),
                  {"OMPI_COMM_WORLD_SIZE"});
  expect_mentions(message_of<InvalidInput>([] {
                    Resources::from_mpi(Environment{{"PMI_SIZE", "x"}});
                  }),
                  {"PMI_SIZE", "'x'", "accepted"});
}

TEST(Resources, FromDaskUsesThreadsAndMemoryLimit) {
  const char* info = R"({"workers": {
      "tcp://10.0.0.2:4000": {"nthreads": 4, "memory_limit": 8000},
      "tcp://10.0.0.1:4000": {"nthreads": 2, "memory_limit": 4000}}})";
  Resources r = Resources::from_dask(info);
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r.devices()[0].name, "dask:tcp://10.0.0.1:4000");  // sorted by address
  EXPECT_EQ(r.devices()[0].throughput, 2);
  EXPECT_EQ(r.devices()[0].memory_bytes, 4000u);
  EXPECT_EQ(r.devices()[1].throughput, 4);
  EXPECT_EQ(r.devices()[1].memory_bytes, 8000u);
  EXPECT_FALSE(r.devices()[0].precision.has_value());  // no precision asked: none stated
  // A precision is stated, canonically named, on every worker.
  const Resources typed = Resources::from_dask(info, "fp64");
  for (const DeviceSpec& d : typed.devices()) EXPECT_EQ(d.precision, "float64") << d.name;
  // nthreads 0 or absent → throughput 1.
  EXPECT_EQ(Resources::from_dask(R"({"workers": {"w": {"nthreads": 0}}})").devices()[0].throughput, 1);
  // memory_limit 0 is Dask's "no limit"; any other value, 1 byte included, is the limit.
  EXPECT_FALSE(Resources::from_dask(R"({"workers": {"w": {"memory_limit": 0}}})").devices()[0].memory_bytes);
  EXPECT_EQ(Resources::from_dask(R"({"workers": {"w": {"memory_limit": 1}}})").devices()[0].memory_bytes, 1u);
  expect_mentions(message_of<InvalidInput>([] { Resources::from_dask(R"({"workers": {}})"); }),
                  {"no workers", "accepted"});
}

TEST(Resources, FromSparkSplitsMemoryOverSlots) {
  Resources r = Resources::from_spark(R"({"defaultParallelism": 5, "memory_bytes": 5000})");
  ASSERT_EQ(r.size(), 5u);
  EXPECT_EQ(r.devices()[4].name, "spark:4");
  EXPECT_EQ(r.devices()[4].memory_bytes, 1000u);
  // Spark's slots are not ranks of a launcher: none carries one.
  const Resources typed = Resources::from_spark(R"({"defaultParallelism": 2})", "fp32");
  for (const DeviceSpec& d : typed.devices()) {
    EXPECT_EQ(d.precision, "float32") << d.name;
    EXPECT_FALSE(d.global_rank.has_value()) << d.name;
  }
  Resources g = Resources::from_spark(R"({"defaultParallelism": 2, "executorMemory": "4g"})");
  EXPECT_EQ(g.devices()[1].memory_bytes, 2ull << 30);
  // Every unit, binary as Spark reads them, with or without a trailing b, in either case.
  for (const auto& [text, bytes] : std::vector<std::pair<std::string, std::uint64_t>>{{"3072", 3072},
                                                                                      {"6k", 6ull << 10},
                                                                                      {"6KB", 6ull << 10},
                                                                                      {"6m", 6ull << 20},
                                                                                      {"6Mb", 6ull << 20},
                                                                                      {"6G", 6ull << 30},
                                                                                      {"6t", 6ull << 40},
                                                                                      {"6tb", 6ull << 40}}) {
    const Resources one = Resources::from_spark(R"({"defaultParallelism": 3, "executorMemory": ")" + text + R"("})");
    EXPECT_EQ(one.devices()[0].memory_bytes, bytes / 3) << text;
  }
  EXPECT_EQ(Resources::from_spark(R"({"defaultParallelism": 0})").size(), 1u);
  expect_mentions(message_of<InvalidInput>([] { Resources::from_spark(R"({"defaultParallelism": 2.5})"); }),
                  {"defaultParallelism=2.5", "exact integer"});
  expect_mentions(message_of<InvalidInput>([] { Resources::from_spark(R"({"executorMemory": "4q"})"); }),
                  {"executorMemory='4q'", "accepted"});
}

TEST(Resources, TorchrunRequiresLocalWorldSize) {
  auto msg = message_of<InvalidInput>([] {
    Resources::from_torchrun(Environment{{"WORLD_SIZE", "2"}, {"RANK", "0"}});
  });
  expect_mentions(msg, {"WORLD_SIZE=2", "LOCAL_WORLD_SIZE", "accepted"});
}

TEST(Resources, TorchrunPreservesGlobalTopology) {
  Environment env{
      {"WORLD_SIZE", "4"}, {"LOCAL_WORLD_SIZE", "2"}, {"RANK", "2"}, {"LOCAL_RANK", "0"}, {"GROUP_RANK", "1"}};
  Resources r = Resources::from_torchrun(env);
  ASSERT_EQ(r.size(), 4u);
  std::set<std::string> names;
  std::vector<std::tuple<std::int64_t, std::int64_t, std::int64_t>> coords;
  for (const DeviceSpec& d : r.devices()) {
    names.insert(d.name);
    coords.emplace_back(*d.node_id, *d.local_rank, *d.global_rank);
    EXPECT_EQ(d.kind, "cpu");
  }
  EXPECT_EQ(names.size(), 4u);
  using T = std::tuple<std::int64_t, std::int64_t, std::int64_t>;
  EXPECT_EQ(coords, (std::vector<T>{{0, 0, 0}, {0, 1, 1}, {1, 0, 2}, {1, 1, 3}}));
  EXPECT_EQ(r.devices()[2].name, "torchrun-node:1:cpu:0");
  // CPU ranks share their node's memory: 2 ranks a node.
  EXPECT_EQ(Resources::from_torchrun(env, {.memory_bytes = 1000}).devices()[3].memory_bytes, 500u);
}

TEST(Resources, TorchrunTopologyChecks) {
  Environment base{
      {"WORLD_SIZE", "4"}, {"LOCAL_WORLD_SIZE", "2"}, {"RANK", "2"}, {"LOCAL_RANK", "0"}, {"GROUP_RANK", "1"}};
  auto with = [&](std::string key, std::string value) {
    Environment e = base;
    if (value.empty())
      e.erase(key);
    else
      e[key] = value;
    return e;
  };
  expect_mentions(message_of<InvalidInput>([&] { Resources::from_torchrun(with("LOCAL_WORLD_SIZE", "3")); }),
                  {"LOCAL_WORLD_SIZE=3", "does not divide", "WORLD_SIZE=4"});
  expect_mentions(message_of<InvalidInput>([&] { Resources::from_torchrun(with("RANK", "")); }), {"RANK is not set"});
  // A world of two already needs every rank variable.
  expect_mentions(message_of<InvalidInput>([] {
                    Resources::from_torchrun(Environment{{"WORLD_SIZE", "2"}, {"LOCAL_WORLD_SIZE", "2"}});
                  }),
                  {"RANK is not set"});
  expect_mentions(message_of<InvalidInput>([&] { Resources::from_torchrun(with("RANK", "4")); }),
                  {"RANK=4", "outside", "WORLD_SIZE=4"});
  expect_mentions(message_of<InvalidInput>([&] { Resources::from_torchrun(with("LOCAL_RANK", "1")); }),
                  {"inconsistent", "LOCAL_RANK=1", "imply LOCAL_RANK=0"});
  expect_mentions(message_of<InvalidInput>([&] { Resources::from_torchrun(with("GROUP_RANK", "0")); }),
                  {"inconsistent", "GROUP_RANK=0"});
  expect_mentions(message_of<InvalidInput>([&] { Resources::from_torchrun(with("WORLD_SIZE", "0")); }),
                  {"WORLD_SIZE=0", "accepted"});
  // Two GPUs per rank needed, one visible: would duplicate a physical GPU.
  LaunchOptions one_gpu{.gpu_memory_bytes = {80ull << 30}};
  expect_mentions(message_of<InvalidInput>([&] { Resources::from_torchrun(base, one_gpu); }),
                  {"duplicate a physical GPU"});
  LaunchOptions two_gpus{.gpu_memory_bytes = {80ull << 30, 40ull << 30}};
  Resources g = Resources::from_torchrun(base, two_gpus);
  EXPECT_EQ(g.devices()[3].name, "torchrun-node:1:cuda:1");
  EXPECT_EQ(g.devices()[3].memory_bytes, 40ull << 30);
  EXPECT_EQ(g.devices()[3].throughput, 10.0);
  for (const DeviceSpec& d : g.devices()) {  // a GPU rank is a CUDA device on the CUDA engine
    EXPECT_EQ(d.kind, "cuda") << d.name;
    EXPECT_EQ(d.engine, "cuda") << d.name;
  }
  // Without torchrun variables: a world of one.
  EXPECT_EQ(Resources::from_torchrun(Environment{}).size(), 1u);
}

TEST(Resources, SlurmBlockDistribution) {
  Environment env{{"SLURM_NTASKS", "5"},
                  {"SLURM_PROCID", "3"},
                  {"SLURM_LOCALID", "1"},
                  {"SLURM_NODEID", "1"},
                  {"SLURM_TASKS_PER_NODE", "2(x2),1"}};
  Resources r = Resources::from_slurm(env, {.memory_bytes = 500});
  ASSERT_EQ(r.size(), 5u);
  EXPECT_EQ(r.devices()[4].name, "slurm-node:2:cpu:0");
  EXPECT_EQ(r.devices()[3].node_id, 1);
  EXPECT_EQ(r.devices()[3].local_rank, 1);
  EXPECT_EQ(r.devices()[0].memory_bytes, 250u);                                    // node 0 runs 2 ranks
  for (const DeviceSpec& d : r.devices()) EXPECT_EQ(d.throughput, 1.0) << d.name;  // CPU ranks: 1 each
  EXPECT_EQ(r.devices()[4].memory_bytes, 500u);                                    // node 2 runs 1
  env["SLURM_LOCALID"] = "0";
  expect_mentions(message_of<InvalidInput>([&] { Resources::from_slurm(env); }),
                  {"inconsistent", "SLURM_LOCALID=0", "block"});
  env["SLURM_TASKS_PER_NODE"] = "2(x2)";
  expect_mentions(message_of<InvalidInput>([&] { Resources::from_slurm(env); }), {"adds up to 4", "SLURM_NTASKS=5"});
  expect_mentions(message_of<InvalidInput>([] { Resources::from_slurm(Environment{}); }),
                  {"SLURM_NTASKS is not set", "srun"});
  Environment uniform{{"SLURM_NTASKS", "4"},
                      {"SLURM_PROCID", "0"},
                      {"SLURM_LOCALID", "0"},
                      {"SLURM_NODEID", "0"},
                      {"SLURM_NTASKS_PER_NODE", "2"}};
  EXPECT_EQ(Resources::from_slurm(uniform).devices()[2].node_id, 1);
}

// Uneven layouts: the busiest node, wherever it is in the list, decides whether the visible GPUs
// suffice (one rank per GPU).
TEST(Resources, SlurmUnevenLayoutIsCheckedAgainstItsBusiestNode) {
  const LaunchOptions two_gpus{.gpu_memory_bytes = {80ull << 30, 80ull << 30}};
  const LaunchOptions three_gpus{.gpu_memory_bytes = {80ull << 30, 80ull << 30, 80ull << 30}};
  for (const char* layout : {"1,3", "3,1", "1,3,1"}) {
    SCOPED_TRACE(layout);
    const std::string tasks = std::string(layout) == "1,3,1" ? "5" : "4";
    Environment env{{"SLURM_NTASKS", tasks},
                    {"SLURM_PROCID", "0"},
                    {"SLURM_LOCALID", "0"},
                    {"SLURM_NODEID", "0"},
                    {"SLURM_TASKS_PER_NODE", layout}};
    expect_mentions(message_of<InvalidInput>([&] { Resources::from_slurm(env, two_gpus); }),
                    {"SLURM tasks per node=3 exceeds the 2 visible GPUs"});
    EXPECT_EQ(Resources::from_slurm(env, three_gpus).size(), static_cast<std::size_t>(std::stoi(tasks)));
  }
}

TEST(Resources, JsonRoundTripsExactlyWithCalibratedThroughput) {
  DeviceSpec gpu;
  gpu.name = "cuda:0";
  gpu.kind = "cuda";
  gpu.engine = "cuda";
  gpu.memory_bytes = 150'000'000'000ull;
  gpu.throughput = 1234567.0 / 3.0;  // not representable in few digits
  gpu.precision = "float32";
  gpu.node_id = 0;
  gpu.local_rank = 0;
  gpu.global_rank = 0;
  gpu.product = "NVIDIA H200";
  gpu.compute_units = 132;
  Resources r({cpu("cpu:0", 0.1 + 0.2), gpu});
  const std::string text = r.to_json();
  Resources back = Resources::from_json(text);
  EXPECT_EQ(back, r);
  EXPECT_EQ(back.devices()[1].throughput, gpu.throughput);  // bit-exact
  EXPECT_EQ(back.to_json(), text);
  // The reference's nine keys are always written; mixle's additions only when set.
  EXPECT_NE(text.find("\"global_rank\":null"), std::string::npos);
  EXPECT_EQ(text.find("\"product\":null"), std::string::npos);
}

TEST(Resources, FromJsonNamesTheFieldAndValue) {
  expect_mentions(message_of<InvalidInput>([] { Resources::from_json(R"({"device": []})"); }), {"devices", "required"});
  expect_mentions(
      message_of<InvalidInput>([] { Resources::from_json(R"({"devices": [{"name": "a", "memory_bytes": -5}]})"); }),
      {"devices[0].memory_bytes=-5", "non-negative"});
  expect_mentions(
      message_of<InvalidInput>([] { Resources::from_json(R"({"devices": [{"name": "a", "local_rank": true}]})"); }),
      {"devices[0].local_rank=true", "exact integer"});
  expect_mentions(message_of<InvalidInput>([] { Resources::from_json(R"({"devices": [{"kind": "cpu"}]})"); }),
                  {"devices[0].name", "required"});
  // Python documents with only some keys get the defaults.
  Resources minimal = Resources::from_json(R"({"devices": [{"name": "cpu:0"}]})");
  EXPECT_EQ(minimal.devices()[0].throughput, 1.0);
  EXPECT_EQ(minimal.devices()[0].kind, "cpu");
}

TEST(Resources, SaveIsAtomicAndLoadsBack) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("mixle_plan_save_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string path = (dir / "resources.json").string();
  Resources r = Resources::local(3, {.memory_bytes = 3000, .throughput = 2.5});
  r.save(path);
  EXPECT_EQ(Resources::load(path), r);
  // Overwrite in place; no temporary files are left next to it.
  Resources::single_cpu().save(path);
  EXPECT_EQ(Resources::load(path).size(), 1u);
  std::size_t files = 0;
  for ([[maybe_unused]] const auto& entry : fs::directory_iterator(dir)) ++files;
  EXPECT_EQ(files, 1u);
  { std::ofstream(path) << "{\"devices\": 3}"; }
  expect_mentions(message_of<InvalidInput>([&] { Resources::load(path); }), {path, "devices=3"});
  fs::remove_all(dir);
  expect_mentions(message_of<InvalidInput>([&] { Resources::load(path); }), {path});
}

TEST(Resources, ReferenceShapedDocumentPassesThroughUnchanged) {
  // A document as the Python layer's Resources.to_json() writes it.
  const std::string doc = R"({"devices": [
    {"name": "cpu:0", "kind": "cpu", "memory_bytes": 1000, "engine": "numpy", "throughput": 1.0,
     "precision": "float64", "node_id": null, "local_rank": null, "global_rank": null},
    {"name": "torchrun-node:0:cuda:0", "kind": "cuda", "memory_bytes": 85899345920,
     "engine": "torch", "throughput": 12345.678, "precision": null, "node_id": 0,
     "local_rank": 0, "global_rank": 0}]})";
  Resources r = Resources::from_json(doc);
  EXPECT_EQ(r.devices()[1].engine, "torch");
  EXPECT_TRUE(r.devices()[1].is_gpu());
  // Same JSON value back (key order aside).
  const std::string again = r.to_json();
  EXPECT_EQ(Resources::from_json(again), r);
  for (const char* key : {"\"engine\":\"numpy\"", "\"throughput\":12345.678", "\"node_id\":0"}) {
    EXPECT_NE(again.find(key), std::string::npos) << key;
  }
}
