// ParallelPlan, ParameterLayout, DistributedUpdate, StepReceipt, BackendCapabilities and the
// training-backend registry, attestation (docs/planning.md, "Training contracts").
#include <mixle/error.hpp>
#include <mixle/plan.hpp>

#include "plan/test_util.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>
#include <vector>

using namespace mixle::plan;
using mixle::InvalidInput;
using mixle::UnrealizedModelPlacement;
using mixle::plan::testing::expect_mentions;
using mixle::plan::testing::message_of;

// 1.9 and true do not convert to a plan size or a world size: the C++ API refuses them at
// compile time (the reference refuses them at run time; JSON input is checked below).
static_assert(!std::is_convertible_v<double, PlanSize>);
static_assert(!std::is_convertible_v<bool, PlanSize>);
static_assert(std::is_convertible_v<long, PlanSize>);
template <class T>
concept AcceptsWorldSize = requires(const ParallelPlan& p, T v) {
  p.validate_world_size(v);
};
static_assert(!AcceptsWorldSize<double>);
static_assert(!AcceptsWorldSize<bool>);
static_assert(AcceptsWorldSize<int>);
template <class T>
concept AcceptsRank = requires(const ParallelPlan& p, T v) {
  attest_worker_coordinate(p, 4, v);
};
static_assert(!AcceptsRank<double>);
static_assert(!AcceptsRank<bool>);

TEST(ParallelPlan, WorldSizeAndMeshOfTheReferenceExample) {
  ParallelPlan plan({.dp_replicate = 8, .tp = 2, .pp = 2, .cp = 2, .ep = 4, .etp = 2});
  EXPECT_EQ(plan.world_size(), 64);
  EXPECT_EQ(plan.data_parallel_size(), 8);
  auto [names, shape] = plan.mesh();
  EXPECT_EQ(names, (std::vector<std::string>{"dp_replicate", "tp", "pp", "cp"}));
  EXPECT_EQ(shape, (std::vector<std::int64_t>{8, 2, 2, 2}));
  EXPECT_EQ(plan.active_axes().size(), 6u);  // ep and etp active but not mesh dimensions
  EXPECT_EQ(plan.size("ep"), 4);
  EXPECT_EQ(ParallelPlan().mesh().first, std::vector<std::string>{"dp_replicate"});
  EXPECT_EQ(ParallelPlan().mesh().second, std::vector<std::int64_t>{1});
  expect_mentions(message_of<InvalidInput>([&] { plan.size("zp"); }), {"'zp'", "dp_replicate"});
}

TEST(ParallelPlan, RejectsNonPositiveSizesAndBadExpertParallelism) {
  expect_mentions(message_of<InvalidInput>([] { ParallelPlan({.tp = 0}); }), {"tp=0", "exact positive integer"});
  expect_mentions(message_of<InvalidInput>([] { ParallelPlan({.microbatches = -1}); }),
                  {"microbatches=-1", "exact positive integer"});
  expect_mentions(message_of<InvalidInput>([] { ParallelPlan({.dp_replicate = 2, .ep = 4}); }),
                  {"ep=4", "expert parallelism must divide the data-parallel domain"});
}

TEST(ParallelPlan, JsonRejectsFractionsAndBooleans) {
  expect_mentions(message_of<InvalidInput>([] { ParallelPlan::from_json(R"({"tp": 1.9})"); }),
                  {"tp=1.9", "exact integer"});
  expect_mentions(message_of<InvalidInput>([] { ParallelPlan::from_json(R"({"pp": true})"); }),
                  {"pp=true", "exact integer"});
  expect_mentions(message_of<InvalidInput>([] { ParallelPlan::from_json(R"({"cp": 0})"); }),
                  {"cp=0", "exact positive integer"});
  ParallelPlan plan({.dp_replicate = 2, .dp_shard = 3, .tp = 2, .gradient_accumulation_steps = 4});
  EXPECT_EQ(ParallelPlan::from_json(plan.to_json()), plan);
  expect_mentions(message_of<InvalidInput>([] { ParallelPlan::from_json(R"({"tp": 2, "world_size": 3})"); }),
                  {"world_size=3", "accepted: 2"});
  // A stated world size that matches is accepted, 1 included; 0 is not a world size.
  EXPECT_EQ(ParallelPlan::from_json(R"({"world_size": 1})").world_size(), 1);
  EXPECT_EQ(ParallelPlan::from_json(R"({"tp": 2, "world_size": 2})").world_size(), 2);
  expect_mentions(message_of<InvalidInput>([] { ParallelPlan::from_json(R"({"world_size": 0})"); }),
                  {"world_size=0", "accepted: an integer ≥ 1"});
  expect_mentions(message_of<InvalidInput>([] { ParallelPlan::from_json(R"({"data_parallel_size": 0})"); }),
                  {"data_parallel_size=0", "accepted: an integer ≥ 1"});
  // The same for the data-parallel size: dp_replicate · dp_shard, or absent.
  EXPECT_EQ(ParallelPlan::from_json(R"({"dp_replicate": 2, "dp_shard": 3, "data_parallel_size": 6})"),
            ParallelPlan({.dp_replicate = 2, .dp_shard = 3}));
  expect_mentions(
      message_of<InvalidInput>([] { ParallelPlan::from_json(R"({"dp_replicate": 2, "data_parallel_size": 4})"); }),
      {"data_parallel_size=4", "dp_replicate·dp_shard (2)", "accepted: 2 or omit it"});
}

TEST(ParallelPlan, ValidateWorldSize) {
  ParallelPlan plan({.dp_replicate = 2, .tp = 2});
  EXPECT_NO_THROW(plan.validate_world_size(4));
  EXPECT_NO_THROW(plan.validate_world_size(std::size_t{4}));
  expect_mentions(message_of<InvalidInput>([&] { plan.validate_world_size(3); }),
                  {"requires world_size=4", "has world_size=3"});
  expect_mentions(message_of<InvalidInput>([&] { plan.validate_world_size(0); }),
                  {"world_size=0", "exact positive integer"});
}

TEST(ParallelPlanAttest, Dp2Tp2GivesFourUniqueCoordinates) {
  ParallelPlan plan({.dp_replicate = 2, .tp = 2});
  std::set<std::vector<std::pair<std::string, std::int64_t>>> seen;
  std::vector<std::pair<std::int64_t, std::int64_t>> dpr_tp;
  for (int rank = 0; rank < 4; ++rank) {
    WorkerTopologyAttestation a = attest_worker_coordinate(plan, 4, rank);
    EXPECT_EQ(a.rank, rank);
    EXPECT_EQ(a.world_size, 4);
    ASSERT_EQ(a.coordinate.size(), 5u);  // all five physical axes, size-1 ones at index 0
    EXPECT_EQ(a.coordinate[0].first, "dp_replicate");
    EXPECT_EQ(a.coordinate[4].first, "cp");
    seen.insert(a.coordinate);
    dpr_tp.emplace_back(a.coordinate[0].second, a.coordinate[2].second);
  }
  EXPECT_EQ(seen.size(), 4u);
  EXPECT_EQ(dpr_tp, (std::vector<std::pair<std::int64_t, std::int64_t>>{{0, 0}, {0, 1}, {1, 0}, {1, 1}}));
  EXPECT_EQ(attest_worker_coordinate(plan, 4, 3).to_json(),
            R"({"coordinate":{"cp":0,"dp_replicate":1,"dp_shard":0,"pp":0,"tp":1},"rank":3,"world_size":4})");
}

TEST(ParallelPlanAttest, CpIsFastestInTheMixedRadix) {
  ParallelPlan plan({.dp_shard = 2, .pp = 3, .cp = 2});
  // rank = ((dps·PP) + pp)·CP + cp → rank 7 = ((1·3) + 0)·2 + 1.
  WorkerTopologyAttestation a = attest_worker_coordinate(plan, 12, 7);
  EXPECT_EQ(a.coordinate[1].second, 1);  // dp_shard
  EXPECT_EQ(a.coordinate[3].second, 0);  // pp
  EXPECT_EQ(a.coordinate[4].second, 1);  // cp
}

TEST(ParallelPlanAttest, RejectsWorldMismatchAndRankOutOfRange) {
  ParallelPlan plan({.dp_replicate = 2, .tp = 2});
  expect_mentions(message_of<InvalidInput>([&] { attest_worker_coordinate(plan, 3, 0); }),
                  {"requires world_size=4", "world_size=3"});
  expect_mentions(message_of<InvalidInput>([&] { attest_worker_coordinate(plan, 4, 4); }),
                  {"rank=4", "0 ≤ rank < world_size=4"});
  expect_mentions(message_of<InvalidInput>([&] { attest_worker_coordinate(plan, 4, -1); }), {"rank=-1"});
}

TEST(ContractParameterLayout, Validation) {
  ParameterLayout ok{"w", {4, 3}, {{"tp", "shard(0)"}}, std::nullopt, StateLayout::sharded};
  EXPECT_NO_THROW(ok.validate());
  EXPECT_EQ(ParameterLayout::from_json(ok.to_json()), ok);
  ParameterLayout dup = ok;
  dup.placements.push_back({"tp", "replicate"});
  expect_mentions(message_of<InvalidInput>([&] { dup.validate(); }), {"repeat axis 'tp'"});
  ParameterLayout neg = ok;
  neg.global_shape = {-1};
  expect_mentions(message_of<InvalidInput>([&] { neg.validate(); }), {"global_shape[0]=-1", "≥ 0"});
  neg.global_shape = {4, 0, -3};  // the extent named by its own index
  expect_mentions(message_of<InvalidInput>([&] { neg.validate(); }), {"global_shape[2]=-3"});
  expect_mentions(
      message_of<InvalidInput>([] { ParameterLayout::from_json(R"({"logical_id": "w", "global_shape": [2.5]})"); }),
      {"global_shape[0]=2.5", "exact integer"});
  expect_mentions(
      message_of<InvalidInput>([] { ParameterLayout::from_json(R"({"logical_id": "w", "global_shape": [true]})"); }),
      {"global_shape[0]=true"});
  expect_mentions(message_of<InvalidInput>([] { ParameterLayout{" ", {}}.validate(); }), {"logical_id", "blank"});
}

TEST(ContractDistributedUpdate, ExactnessAndEvidenceRules) {
  DistributedUpdate u;
  u.node_id = "stats";
  u.mesh_axes = {ParallelAxis::dp_replicate};
  EXPECT_NO_THROW(u.validate());
  DistributedUpdate dup = u;
  dup.mesh_axes.push_back(ParallelAxis::dp_replicate);
  expect_mentions(message_of<InvalidInput>([&] { dup.validate(); }), {"repeat 'dp_replicate'"});
  DistributedUpdate exact = u;
  exact.exact = true;
  expect_mentions(message_of<InvalidInput>([&] { exact.validate(); }),
                  {"collective=all_reduce", "cannot claim guaranteed numerical exactness"});
  exact.collective = CollectiveKind::none;
  EXPECT_NO_THROW(exact.validate());
  EXPECT_EQ(DistributedUpdate::from_json(exact.to_json()), exact);  // the claim survives the file
  DistributedUpdate neg = u;
  neg.numerics_sample_count = -1;
  expect_mentions(message_of<InvalidInput>([&] { neg.validate(); }), {"numerics_sample_count=-1"});
  DistributedUpdate orphan = u;
  orphan.numerics_evidence_id = "run-7";
  expect_mentions(message_of<InvalidInput>([&] { orphan.validate(); }),
                  {"numerics_evidence_id='run-7'", "sample_count=0"});
  orphan.numerics_sample_count = 10;
  expect_mentions(message_of<InvalidInput>([&] { orphan.validate(); }), {"lacks determinism_observed"});
  // Each of the three missing alone is enough to refuse the evidence.
  for (int missing = 0; missing < 3; ++missing) {
    DistributedUpdate one = orphan;
    if (missing != 0) one.determinism_observed = true;
    if (missing != 1) one.maximum_absolute_error = 0.0;
    if (missing != 2) one.maximum_relative_error = 0.0;
    expect_mentions(message_of<InvalidInput>([&] { one.validate(); }), {"lacks determinism_observed"});
  }
  orphan.determinism_observed = true;
  orphan.maximum_absolute_error = 0.0;
  orphan.maximum_relative_error = std::nan("");
  expect_mentions(message_of<InvalidInput>([&] { orphan.validate(); }), {"maximum_relative_error=nan"});
  // A bad bound is shown to every digit that tells it apart.
  orphan.maximum_relative_error = -0.1;
  expect_mentions(message_of<InvalidInput>([&] { orphan.validate(); }),
                  {"maximum_relative_error=-0.10000000000000001 is invalid"});
  orphan.maximum_relative_error = 1e-12;
  EXPECT_NO_THROW(orphan.validate());
  EXPECT_EQ(DistributedUpdate::from_json(orphan.to_json()), orphan);
  // A string where an enum belongs must be one of the names.
  std::string text = u.to_json();
  text.replace(text.find("\"sufficient_statistic\""), 22, "\"weights\"");
  expect_mentions(message_of<InvalidInput>([&] { DistributedUpdate::from_json(text); }),
                  {"payload='weights'", "sufficient_statistic"});
}

TEST(ContractDistributedUpdate, EmStatisticsUpdateOverDataAxes) {
  DistributedUpdate u = em_statistics_update(ParallelPlan({.dp_replicate = 4}));
  EXPECT_EQ(u.collective, CollectiveKind::all_reduce);
  EXPECT_EQ(u.payload, PayloadKind::sufficient_statistic);
  EXPECT_FALSE(u.exact);
  EXPECT_TRUE(u.contract_exact);
  EXPECT_EQ(u.mesh_axes, (std::vector<ParallelAxis>{ParallelAxis::dp_replicate}));
  // Every data axis of more than one rank is reduced over, the smallest (2) included.
  const DistributedUpdate both = em_statistics_update(ParallelPlan({.dp_replicate = 2, .dp_shard = 3}));
  EXPECT_EQ(both.mesh_axes, (std::vector<ParallelAxis>{ParallelAxis::dp_replicate, ParallelAxis::dp_shard}));
  EXPECT_EQ(em_statistics_update(ParallelPlan({.dp_shard = 2})).mesh_axes,
            (std::vector<ParallelAxis>{ParallelAxis::dp_shard}));
  DistributedUpdate single = em_statistics_update(ParallelPlan());
  EXPECT_EQ(single.collective, CollectiveKind::none);
  EXPECT_TRUE(single.exact);
  EXPECT_TRUE(single.mesh_axes.empty());
}

TEST(Receipt, ValidationNamesFieldAndValue) {
  StepReceipt r{
      .step = 3, .loss = 0.5, .local_examples = 100, .local_tokens = 0, .optimizer = "em", .precision = "float32"};
  EXPECT_NO_THROW(r.validate());
  auto bad = [&](auto mutate, std::vector<std::string> words) {
    StepReceipt x = r;
    mutate(x);
    expect_mentions(message_of<InvalidInput>([&] { x.validate(); }), words);
  };
  // Steps count from 0 (the reference's first receipt is step 0); the other counters too.
  StepReceipt first = r;
  first.step = 0, first.local_examples = 0, first.collective_bytes = 0;
  EXPECT_NO_THROW(first.validate());
  bad([](StepReceipt& x) { x.step = -1; }, {"step=-1", "≥ 0"});
  bad([](StepReceipt& x) { x.loss = -1; }, {"loss=-1", "≥ 0"});
  bad([](StepReceipt& x) { x.loss = std::nan(""); }, {"loss=nan"});
  bad([](StepReceipt& x) { x.local_examples = -2; }, {"local_examples=-2"});
  bad([](StepReceipt& x) { x.collective_bytes = -8; }, {"collective_bytes=-8"});
  bad([](StepReceipt& x) { x.data_parallel_size = 0; }, {"data_parallel_size=0", "≥ 1"});
  bad([](StepReceipt& x) { x.microbatches = 0; }, {"microbatches=0", "≥ 1"});
  bad([](StepReceipt& x) { x.accumulation_steps = 0; }, {"accumulation_steps=0", "≥ 1"});
  bad([](StepReceipt& x) { x.optimizer = ""; }, {"optimizer", "blank"});
  expect_mentions(message_of<InvalidInput>([&] {
                    StepReceipt::from_json(R"({"step": 1.5, "loss": 0, "local_examples": 1,
                      "local_tokens": 0, "microbatches": 1, "accumulation_steps": 1,
                      "data_parallel_size": 1, "optimizer": "em", "precision": "float32"})");
                  }),
                  {"step=1.5", "exact integer"});
}

TEST(Receipt, OneJsonLineRoundTripsExactly) {
  StepReceipt r{.step = 7,
                .loss = 1.0 / 3.0,
                .local_examples = 250,
                .local_tokens = 33,  // every counter off its default, so a field left unread shows
                .microbatches = 2,
                .accumulation_steps = 3,
                .data_parallel_size = 4,
                .optimizer = "em",
                .precision = "float64",
                .collective_bytes = 4096};
  r.extra["reason"] = std::string("converging");
  r.extra["delta"] = 1e-7;
  r.extra["iters"] = std::int64_t{12};
  r.extra["final"] = false;
  r.extra["none"] = nullptr;
  const std::string line = r.to_json_line();
  EXPECT_EQ(line.find('\n'), std::string::npos);
  StepReceipt back = StepReceipt::from_json(line);
  EXPECT_EQ(back, r);
  EXPECT_EQ(back.to_json_line(), line);
  EXPECT_EQ(r.global_examples(), 1000);
  r.global_examples_observed = 999;
  EXPECT_EQ(r.global_examples(), 999);
}

// Each built-in describes itself under the name it is registered by; the JSON form lists axes
// and each incompatible set sorted (the reference's as_dict), whatever order they were given in.
TEST(ContractBackends, CapabilitiesCarryTheirNameAndSortedLists) {
  for (const std::string& n : available_training_backends()) EXPECT_EQ(get_training_backend(n)->capabilities().name, n);
  BackendCapabilities c;
  c.name = "probe";
  // tp before cp in the axes' fixed order, after it alphabetically.
  c.axes = {ParallelAxis::tp, ParallelAxis::cp};
  c.incompatible_axis_sets = {{ParallelAxis::tp, ParallelAxis::cp}};
  const auto doc = nlohmann::json::parse(c.to_json());
  const auto sorted = [](std::vector<std::string> v) {
    std::sort(v.begin(), v.end());
    return v;
  };
  const auto set = doc.at("incompatible_axis_sets").at(0).get<std::vector<std::string>>();
  EXPECT_EQ(set, (std::vector<std::string>{"cp", "tp"}));
  EXPECT_EQ(doc.at("axes").get<std::vector<std::string>>(), sorted(doc.at("axes").get<std::vector<std::string>>()));
}

TEST(ContractBackends, BuiltinsDescribeWhatTheyExecute) {
  std::vector<std::string> names = available_training_backends();
  for (const char* n : {"gloo", "lightning_fabric", "mpi", "nccl", "ray_train", "single"}) {
    EXPECT_NE(std::find(names.begin(), names.end(), n), names.end()) << n;
  }
  ParallelPlan dp4({.dp_replicate = 4});
  ParallelPlan tp2({.dp_replicate = 2, .tp = 2});
  ParallelPlan pp2({.dp_replicate = 2, .pp = 2});
  // The EM communicators run data groups and component shards (tp); Ray Train data groups only.
  for (const char* n : {"gloo", "mpi", "nccl"}) {
    const BackendCapabilities& caps = get_training_backend(n)->capabilities();
    EXPECT_NO_THROW(caps.validate(dp4, "fp64")) << n;
    EXPECT_NO_THROW(caps.validate(tp2, "fp32")) << n;
    expect_mentions(message_of<UnrealizedModelPlacement>([&] { caps.validate(pp2); }),
                    {n, "does not execute parallel axes pp", "dp_replicate, tp"});
  }
  const BackendCapabilities& ray = get_training_backend("ray_train")->capabilities();
  EXPECT_NO_THROW(ray.validate(dp4, "fp64"));
  expect_mentions(message_of<UnrealizedModelPlacement>([&] { ray.validate(tp2); }),
                  {"ray_train", "does not execute parallel axes tp", "dp_replicate"});
  const BackendCapabilities& single = get_training_backend("single")->capabilities();
  EXPECT_NO_THROW(single.validate(ParallelPlan()));
  expect_mentions(message_of<UnrealizedModelPlacement>([&] { single.validate(dp4); }),
                  {"at most world_size=1", "world_size=4"});
  const BackendCapabilities& fabric = get_training_backend("Lightning-Fabric")->capabilities();
  EXPECT_NO_THROW(fabric.validate(ParallelPlan({.dp_shard = 4}), "bf16"));
  expect_mentions(message_of<UnrealizedModelPlacement>([&] { fabric.validate(tp2); }), {"tp"});
  expect_mentions(
      message_of<UnrealizedModelPlacement>([&] { fabric.validate(ParallelPlan({.dp_replicate = 2, .dp_shard = 2})); }),
      {"cannot combine"});
  expect_mentions(message_of<InvalidInput>([&] { fabric.validate(dp4, "fp8"); }), {"precision='fp8'", "bf16"});
  EXPECT_NE(get_training_backend("ray_train")->capabilities().execution.find("one worker per plan rank"),
            std::string::npos);
  const std::string gloo = get_training_backend("gloo")->capabilities().to_json();
  EXPECT_NE(gloo.find(R"("axes":["dp_replicate","tp"])"), std::string::npos) << gloo;
  EXPECT_NE(gloo.find(R"("precisions":["fp32","fp64","tf32"])"), std::string::npos) << gloo;
  EXPECT_NE(fabric.to_json().find(R"("incompatible_axis_sets":[["dp_replicate","dp_shard"]])"), std::string::npos);
  // What each needs installed or built: the Python packages a launcher imports, the build
  // options of mixle's own communicators; one process needs nothing.
  using Names = std::vector<std::string>;
  EXPECT_EQ(fabric.requirements, Names{"lightning"});
  EXPECT_EQ(get_training_backend("ray_train")->capabilities().requirements, Names{"ray[train]"});
  EXPECT_EQ(single.requirements, Names{});
  for (const char* n : {"gloo", "mpi", "nccl"}) {
    const Names needs = get_training_backend(n)->capabilities().requirements;
    ASSERT_FALSE(needs.empty()) << n;
    EXPECT_TRUE(needs[0].starts_with("mixle built with")) << n << ": " << needs[0];
  }
}

namespace {
class FakeBackend final : public TrainingBackend {
 public:
  explicit FakeBackend(std::string name) { caps_.name = std::move(name); }
  const BackendCapabilities& capabilities() const override { return caps_; }

 private:
  BackendCapabilities caps_;
};
int g_factory_calls = 0;
std::shared_ptr<const TrainingBackend> fake_factory() {
  ++g_factory_calls;
  return std::make_shared<FakeBackend>("lazy");
}
std::shared_ptr<const TrainingBackend> other_factory() { return std::make_shared<FakeBackend>("other"); }
std::shared_ptr<const TrainingBackend> null_factory() { return nullptr; }
}  // namespace

TEST(ContractBackends, RegistryCollisionsLazyFactoriesAndKeys) {
  EXPECT_EQ(training_backend_key("  My-Backend "), "my_backend");
  register_training_backend("test-lazy", &fake_factory);
  register_training_backend("TEST_LAZY", &fake_factory);  // identical factory: no-op
  EXPECT_EQ(g_factory_calls, 0);                          // lazy until asked for
  auto first = get_training_backend("test_lazy");
  auto second = get_training_backend("Test-Lazy");
  EXPECT_EQ(g_factory_calls, 1);  // called once, then cached
  EXPECT_EQ(first, second);
  EXPECT_EQ(first->capabilities().name, "lazy");
  expect_mentions(message_of<InvalidInput>([] { register_training_backend("test_lazy", &other_factory); }),
                  {"'test_lazy'", "already registered", "override"});
  EXPECT_EQ(get_training_backend("test_lazy"), first);  // the original stays
  register_training_backend("test_lazy", &other_factory, /*override_existing=*/true);
  EXPECT_EQ(get_training_backend("test_lazy")->capabilities().name, "other");
  auto instance = std::make_shared<FakeBackend>("inst");
  register_training_backend("test_inst", instance);
  register_training_backend("test_inst", instance);  // same object: fine
  expect_mentions(
      message_of<InvalidInput>([] { register_training_backend("test_inst", std::make_shared<FakeBackend>("x")); }),
      {"already registered"});
  expect_mentions(message_of<InvalidInput>([] { register_training_backend("  ", &fake_factory); }), {"blank"});
  register_training_backend("test_null", &null_factory);
  expect_mentions(message_of<InvalidInput>([] { get_training_backend("test_null"); }), {"returned no backend"});
  expect_mentions(message_of<InvalidInput>([] { get_training_backend("horovod"); }),
                  {"'horovod'", "not registered", "gloo"});
  expect_mentions(message_of<InvalidInput>([] { register_training_backend("gloo", &fake_factory); }),
                  {"'gloo'", "already registered"});
  // Nothing to register: a null instance or factory is refused by name.
  expect_mentions(message_of<InvalidInput>(
                      [] { register_training_backend("test_none", std::shared_ptr<const TrainingBackend>()); }),
                  {"'test_none' is null", "a backend instance"});
  expect_mentions(
      message_of<InvalidInput>([] { register_training_backend("test_none", TrainingBackendFactory(nullptr)); }),
      {"'test_none' factory is null", "a function returning the backend"});
  expect_mentions(message_of<InvalidInput>([] { get_training_backend("test_none"); }), {"not registered"});
}

TEST(ContractLaunchers, LightningFabricOwnsDataParallelismOnly) {
  FabricLaunch ddp = lightning_fabric_launch(ParallelPlan({.dp_replicate = 4}));
  EXPECT_EQ(ddp.strategy, "ddp");
  EXPECT_EQ(ddp.devices, 4);
  FabricLaunch fsdp = lightning_fabric_launch(ParallelPlan({.dp_shard = 8}), 4, 2);
  EXPECT_EQ(fsdp.strategy, "fsdp");
  const FabricLaunch one_per_node = lightning_fabric_launch(ParallelPlan({.dp_shard = 4}), 1, 4);  // the least count
  EXPECT_EQ(one_per_node.devices, 1);
  EXPECT_EQ(one_per_node.num_nodes, 4);
  EXPECT_EQ(lightning_fabric_launch(ParallelPlan({.dp_shard = 2})).strategy, "fsdp");  // the least sharding
  expect_mentions(message_of<InvalidInput>([] { lightning_fabric_launch(ParallelPlan({.dp_replicate = 4}), 0, 1); }),
                  {"devices=0 is invalid", "≥ 1"});
  expect_mentions(message_of<InvalidInput>([] { lightning_fabric_launch(ParallelPlan({.dp_replicate = 4}), 4, 0); }),
                  {"num_nodes=0 is invalid", "≥ 1"});
  expect_mentions(
      message_of<UnrealizedModelPlacement>([] { lightning_fabric_launch(ParallelPlan({.dp_replicate = 2, .tp = 2})); }),
      {"only owns data parallelism", "tp"});
  expect_mentions(message_of<UnrealizedModelPlacement>(
                      [] { lightning_fabric_launch(ParallelPlan({.dp_replicate = 2, .dp_shard = 2})); }),
                  {"explicit strategy"});
  EXPECT_EQ(lightning_fabric_launch(ParallelPlan({.dp_replicate = 2, .dp_shard = 2}), {}, 1, "hsdp").strategy, "hsdp");
  expect_mentions(message_of<InvalidInput>([] { lightning_fabric_launch(ParallelPlan({.dp_replicate = 4}), 3, 1); }),
                  {"devices=3", "world_size=4"});
  // The product it names is the launch's whole process count: three a node on two nodes.
  expect_mentions(message_of<InvalidInput>([] { lightning_fabric_launch(ParallelPlan({.dp_replicate = 4}), 3, 2); }),
                  {"devices=3 × num_nodes=2 = 6 processes", "world_size=4"});
  expect_mentions(message_of<InvalidInput>([] { lightning_fabric_launch(ParallelPlan({.dp_replicate = 4}), {}, 2); }),
                  {"\"auto\"", "num_nodes=2"});
}

TEST(ContractLaunchers, RayTrainOneWorkerPerRankAndGpuConflicts) {
  RayScaling s = ray_train_scaling(ParallelPlan({.dp_replicate = 2, .tp = 2}), true, {{"GPU", 1}});
  EXPECT_EQ(s.num_workers, 4);
  expect_mentions(message_of<InvalidInput>([] {
                    ray_train_scaling(ParallelPlan(), true, {{"GPU", 0}});
                  }),
                  {"use_gpu=true", "GPU]=0"});
  expect_mentions(message_of<InvalidInput>([] {
                    ray_train_scaling(ParallelPlan(), false, {{"GPU", 1}});
                  }),
                  {"use_gpu=false", "GPU]=1"});
  EXPECT_EQ(ray_train_scaling(ParallelPlan(), false, {{"GPU", 0}}).num_workers, 1);  // a GPU entry of 0 is none
  expect_mentions(message_of<InvalidInput>([] {
                    ray_train_scaling(ParallelPlan(), false, {{"CPU", -1}});
                  }),
                  {"CPU]=-1", "≥ 0"});
}
