// Every refusal of the plan layer that no other test reached (scripts/coverage listed them):
// each names the field and the value, and says what would be accepted. A validation branch that
// no test takes is a place a broken check would pass unnoticed.
#include <mixle/error.hpp>
#include <mixle/plan.hpp>

#include "plan/json_fields.hpp"
#include "plan/test_util.hpp"

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <limits>

using namespace mixle::plan;
using mixle::InvalidInput;
using mixle::MemoryError;
using mixle::plan::testing::device;
using mixle::plan::testing::expect_mentions;
using mixle::plan::testing::gmm;
using mixle::plan::testing::message_of;
namespace fs = std::filesystem;

namespace {

fs::path scratch(const std::string& name) {
  fs::path dir = fs::temp_directory_path() / ("mixle-plan-refusals-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  return dir / name;
}

}  // namespace

TEST(JsonFields, ReadersNameTheFieldTheValueAndWhatIsAccepted) {
  using namespace detail;
  expect_mentions(message_of<InvalidInput>([] { parse_object("{\"a\": ", "the test document"); }),
                  {"the test document is not valid JSON", "expected a JSON object"});
  // Found by scripts/fuzz: a number past double's range escaped as a JSON library exception.
  expect_mentions(message_of<InvalidInput>([] { parse_object(R"({"a": 2.6e03418132})", "the test document"); }),
                  {"the test document is not valid JSON", "overflow"});
  // The JSON reader stops at a NUL as at the end of the text; a Resources file padded with zeros
  // is refused, not read as its first part.
  expect_mentions(
      message_of<InvalidInput>([] { parse_object(std::string_view("{}\0{\"x\"", 7), "the test document"); }),
      {"the test document: a NUL byte at byte offset 2 (of 7)"});
  expect_mentions(message_of<InvalidInput>([] { parse_object("[1, 2]", "the test document"); }),
                  {"the test document must be a JSON object", "got [1,2]"});
  const Json doc = parse_object(R"({"big": 9223372036854775808, "word": "x", "blank": "  ", "number": 3,
                                    "flag": true, "nothing": null})",
                                "doc");
  expect_mentions(message_of<InvalidInput>([&] { as_int(doc["big"], "big", 0); }),
                  {"big=9223372036854775808", "too large", "below 2^63"});
  expect_mentions(message_of<InvalidInput>([&] { as_number(doc["word"], "word"); }),
                  {"word=\"x\"", "not a number", "a finite number"});
  expect_mentions(message_of<InvalidInput>([&] { as_number(Json(std::numeric_limits<double>::infinity()), "inf"); }),
                  {"inf=", "not finite"});
  expect_mentions(message_of<InvalidInput>([&] { as_string(doc["number"], "number"); }), {"number=3", "not a string"});
  expect_mentions(message_of<InvalidInput>([&] { as_string(doc["blank"], "blank"); }), {"blank=\"  \"", "is blank"});
  EXPECT_EQ(as_string(doc["blank"], "blank", true), "  ");
  expect_mentions(message_of<InvalidInput>([&] { as_bool(doc["number"], "number"); }),
                  {"number=3", "not a boolean", "true or false"});
  // A field that is absent or null: the fallback when there is one, else "missing" with its path.
  for (const char* field : {"absent", "nothing"}) {
    EXPECT_EQ(get_int(doc, "ctx", field, 0, 7), 7);
    EXPECT_EQ(get_uint(doc, "ctx", field, 8u), 8u);
    EXPECT_EQ(get_number(doc, "ctx", field, 2.5), 2.5);
    EXPECT_EQ(get_string(doc, "ctx", field, std::string("fallback")), "fallback");
    EXPECT_FALSE(get_bool(doc, "ctx", field, false));
    EXPECT_FALSE(get_opt_int(doc, "ctx", field, 0).has_value());
    EXPECT_FALSE(get_opt_uint(doc, "ctx", field).has_value());
    const std::string path = std::string("missing field ctx.") + field;
    expect_mentions(message_of<InvalidInput>([&] { get_int(doc, "ctx", field, 0); }), {path, "required"});
    expect_mentions(message_of<InvalidInput>([&] { get_uint(doc, "ctx", field); }), {path});
    expect_mentions(message_of<InvalidInput>([&] { get_number(doc, "ctx", field); }), {path});
    expect_mentions(message_of<InvalidInput>([&] { get_string(doc, "ctx", field); }), {path});
    expect_mentions(message_of<InvalidInput>([&] { get_bool(doc, "ctx", field); }), {path});
  }
  EXPECT_EQ(get_opt_int(doc, "ctx", "number", 0), 3);
  EXPECT_EQ(get_opt_uint(doc, "ctx", "number"), 3u);
  EXPECT_TRUE(get_bool(doc, "ctx", "flag"));
}

TEST(JsonFields, AtomicWriteRefusesAFolderAndKeepsWhatWasThere) {
  using namespace detail;
  const fs::path folder = scratch("a-folder");
  fs::create_directories(folder / "inside");
  expect_mentions(message_of<InvalidInput>([&] { write_text_atomic(folder.string() + "/", "x"); }),
                  {"names a folder", "a file path"});
  // The target is a non-empty folder: the rename fails, the folder is untouched and no temporary
  // file is left beside it.
  const std::string message = message_of<mixle::Error>([&] { write_text_atomic(folder.string(), "x"); });
  expect_mentions(message, {"cannot replace", folder.string()});
  EXPECT_TRUE(fs::is_directory(folder / "inside"));
  for (const auto& entry : fs::directory_iterator(folder.parent_path())) {
    EXPECT_EQ(entry.path().filename().string().find("a-folder.tmp"), std::string::npos) << entry.path();
  }
  const fs::path file = scratch("written.json");
  write_text_atomic(file.string(), "first");
  write_text_atomic(file.string(), "second");
  EXPECT_EQ(read_text(file.string()), "second");
  fs::remove_all(folder.parent_path());
}

// A write that fails part-way (here the file-size limit; a full disk alike) is refused, and the
// file that was there stays whole. The text is smaller than the stream's buffer, so nothing
// reaches the disk until the write flushes: the failure must be seen before the rename.
TEST(JsonFields, AtomicWriteThatFailsKeepsTheFileThatWasThere) {
  using namespace detail;
  const fs::path file = scratch("kept.json");
  const std::string before = "{\"a\": 1}\n";
  write_text_atomic(file.string(), before);
  const pid_t pid = ::fork();
  if (pid == 0) {                   // the limit applies to this child only
    std::signal(SIGXFSZ, SIG_IGN);  // a write past the limit then fails with EFBIG
    rlimit limit{};
    if (::getrlimit(RLIMIT_FSIZE, &limit) != 0) ::_exit(2);
    limit.rlim_cur = 64;  // the hard limit stays: lowering the soft one needs no privilege
    if (::setrlimit(RLIMIT_FSIZE, &limit) != 0) ::_exit(2);
    try {
      write_text_atomic(file.string(), std::string(1000, 'x'));
    } catch (const mixle::Error& e) {
      ::_exit(std::string(e.what()).find("failed") != std::string::npos ? 0 : 4);
    }
    ::_exit(3);  // no error
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "2: no file-size limit could be set; 3: the failed write was not refused; 4: "
                                       "its message does not say it failed";
  EXPECT_EQ(read_text(file.string()), before);
  for (const auto& entry : fs::directory_iterator(file.parent_path())) {
    EXPECT_EQ(entry.path().filename().string().find("kept.json.tmp"), std::string::npos) << entry.path();
  }
  fs::remove_all(file.parent_path());
}

TEST(PlacementRefusals, ByteCountsSafetyFactorAndShardShapes) {
  Resources r({device("a", 1), device("b", 1)});
  const Placement p = plan(r, {.rows = 10, .model = gmm(2, 1)});
  ASSERT_NO_THROW(p.validate());
  auto refused = [&](auto edit, std::vector<std::string> fragments) {
    Placement q = p;
    edit(q);
    expect_mentions(message_of<InvalidInput>([&] { q.validate(); }), fragments);
  };
  refused([](Placement& q) { q.encoded_row_bytes = std::nan(""); }, {"encoded_row_bytes=nan", "non-negative"});
  refused([](Placement& q) { q.encoded_row_bytes = -1; }, {"encoded_row_bytes=-1", "non-negative"});
  refused([](Placement& q) { q.transient_row_bytes = -2; }, {"transient_row_bytes=-2", "non-negative"});
  refused([](Placement& q) { q.transient_row_bytes = std::numeric_limits<double>::infinity(); },
          {"transient_row_bytes=inf"});
  refused([](Placement& q) { q.safety_factor = 0; }, {"safety_factor=0", "> 0"});
  refused([](Placement& q) { q.safety_factor = std::nan(""); }, {"safety_factor=nan"});
  refused([](Placement& q) { q.shards[0].start = 6; }, {"a[6:5]", "start > stop"});
  refused([](Placement& q) { q.shards[1].sub_chunks = 0; }, {"b[5:10]", "sub_chunks=0"});
  refused([](Placement& q) { q.shards.clear(); }, {"total_rows=10", "has no shards"});
  // Zero rows: one [0:0] shard, nothing else.
  Placement none = plan(r, {.rows = 0, .model = gmm(2, 1)});
  ASSERT_NO_THROW(none.validate());
  Placement nonzero = none;
  nonzero.shards[0].stop = 3;
  expect_mentions(message_of<InvalidInput>([&] { nonzero.validate(); }), {"total_rows=0", "[0:3]", "only [0:0]"});
  Placement two = none;
  two.shards.push_back(two.shards[0]);
  expect_mentions(message_of<InvalidInput>([&] { two.validate(); }), {"total_rows=0 has 2 shards", "one shard"});
}

TEST(PlacementRefusals, JsonShardsMustBeAListOfDeclaredDevices) {
  Resources r({device("a", 1), device("b", 1)});
  const std::string text = plan(r, {.rows = 10, .model = gmm(2, 1)}).to_json();
  std::string not_list = text;
  const auto at = not_list.find("\"shards\":");
  ASSERT_NE(at, std::string::npos);
  not_list.insert(at + 9, "{\"x\":1},\"ignored\":");
  expect_mentions(message_of<InvalidInput>([&] { Placement::from_json(not_list); }),
                  {"shards={\"x\":1}", "not a list"});
  std::string stranger = text;
  const auto name = stranger.find("\"device\":\"b\"");
  ASSERT_NE(name, std::string::npos);
  stranger.replace(name, 12, "\"device\":\"z\"");
  expect_mentions(message_of<InvalidInput>([&] { Placement::from_json(stranger); }),
                  {"shards[1].device='z'", "not in declared resources"});
}

// Messages show a value's JSON up to 80 characters, and cut a longer one there.
TEST(JsonFieldRefusals, ALongValueIsCutAtEightyCharacters) {
  const std::string eighty(78, 'x');  // a JSON string of 80 characters with its quotes
  EXPECT_EQ(detail::describe(detail::Json(eighty)), "\"" + eighty + "\"");
  EXPECT_EQ(detail::describe(detail::Json(eighty + "y")), "\"" + eighty + "y…");
}

TEST(PlannerRefusals, DtypeColumnsAndARowThatFitsNowhere) {
  Resources r({device("a", 1)});
  expect_mentions(message_of<InvalidInput>([&] { plan(r, {.rows = 10, .model = gmm(2, 3), .data_dtype_bytes = 2}); }),
                  {"data_dtype_bytes=2", "4 (float32 data) or 8 (float64 data)"});
  expect_mentions(message_of<InvalidInput>([&] { plan(r, {.rows = 10, .model = gmm(2, 3), .columns = 2}); }),
                  {"columns=2", "the 3 columns", "columns ≥ Σ part dims"});
  // A summary that describes no model is refused as the model, before any placement is sized.
  expect_mentions(message_of<InvalidInput>([&] { plan(r, {.rows = 10, .model = gmm(0, 3)}); }),
                  {"model components=0 is invalid", "K ≥ 1"});
  expect_mentions(message_of<InvalidInput>([&] { plan(r, {.rows = 10, .model = gmm(2, 0)}); }),
                  {"model part 0: dims=0 is invalid"});
  EXPECT_NO_THROW(plan(r, {.rows = 10, .model = gmm(2, 3), .columns = 5}));
  EXPECT_NO_THROW(plan(r, {.rows = 10, .model = gmm(2, 3), .columns = 3}));  // exactly the parts' columns
  // Room for the model's fixed state but not for one row beside it.
  const ModelSummary model = gmm(2, 3);
  const std::uint64_t fixed = model.parameter_bytes() + model.statistic_bytes();
  Resources tight({device("tight", 1, fixed + 1)});
  expect_mentions(message_of<MemoryError>([&] { plan(tight, {.rows = 10, .model = model, .safety_factor = 1.0}); }),
                  {"one row needs", "device 'tight'", "memory_bytes=" + std::to_string(fixed + 1),
                   "+ encoded 12 +"});  // one row of 3 float32 columns (the default data dtype)
  // Exactly the fixed state leaves no byte for rows: the fixed state is what does not fit.
  Resources exact({device("exact", 1, fixed)});
  expect_mentions(message_of<MemoryError>([&] { plan(exact, {.rows = 10, .model = model, .safety_factor = 1.0}); }),
                  {"fixed model/statistic state requires " + std::to_string(fixed) + " bytes", "device 'exact'"});
}

TEST(ContractRefusals, LayoutsAndUpdatesNameTheBlankOrMisshapenField) {
  ParameterLayout blank_axis{"w", {4}, {{" ", "shard(0)"}}, std::nullopt, StateLayout::sharded};
  expect_mentions(message_of<InvalidInput>([&] { blank_axis.validate(); }), {"parameter layout 'w'", "blank entry"});
  ParameterLayout blank_placement{"w", {4}, {{"tp", ""}}, std::nullopt, StateLayout::sharded};
  expect_mentions(message_of<InvalidInput>([&] { blank_placement.validate(); }), {"('tp', '')", "blank entry"});
  ParameterLayout blank_group{"w", {4}, {}, std::string("\t"), StateLayout::replicated};
  expect_mentions(message_of<InvalidInput>([&] { blank_group.validate(); }), {"shared_group=", "is blank"});
  ParameterLayout grouped{"w", {4}, {}, std::string("experts"), StateLayout::replicated};
  EXPECT_NO_THROW(grouped.validate());
  EXPECT_EQ(ParameterLayout::from_json(grouped.to_json()), grouped);
  expect_mentions(
      message_of<InvalidInput>([] { ParameterLayout::from_json(R"({"logical_id": "w", "global_shape": 4})"); }),
      {"global_shape=4", "not a list"});
  expect_mentions(message_of<InvalidInput>([] {
                    ParameterLayout::from_json(R"({"logical_id": "w", "global_shape": [], "placements": ["tp"]})");
                  }),
                  {"placements=[\"tp\"]", "not an object"});

  DistributedUpdate u;
  u.node_id = "  ";
  expect_mentions(message_of<InvalidInput>([&] { u.validate(); }), {"node_id='  '", "is blank"});
  u.node_id = "stats";
  u.numerics_evidence_id = " ";
  u.numerics_sample_count = 3;
  expect_mentions(message_of<InvalidInput>([&] { u.validate(); }), {"numerics_evidence_id=' '", "is blank"});
  u.numerics_evidence_id.reset();
  u.numerics_sample_count = 0;
  std::string null_notes = u.to_json();  // no notes: written as [], read as absent or null too
  ASSERT_NE(null_notes.find("\"notes\":[]"), std::string::npos) << null_notes;
  null_notes.replace(null_notes.find("\"notes\":[]"), 10, "\"notes\":null");
  EXPECT_EQ(DistributedUpdate::from_json(null_notes), u);
  u.notes = {"first note", ""};
  EXPECT_EQ(DistributedUpdate::from_json(u.to_json()), u);  // notes round-trip, blank ones too
  std::string axes = u.to_json();
  axes.replace(axes.find("\"mesh_axes\":[]"), 14, "\"mesh_axes\":\"dp_replicate\"");
  expect_mentions(message_of<InvalidInput>([&] { DistributedUpdate::from_json(axes); }),
                  {"mesh_axes=\"dp_replicate\"", "not a list"});
}

TEST(CalibrationRefusals, RecordsTimingsAndCatalogVersions) {
  DeviceCalibration ok{"cpu", true, {0.5}, 100.0, std::nullopt};
  EXPECT_NO_THROW(ok.validate());
  DeviceCalibration with_error = ok;
  with_error.error = "late";
  expect_mentions(message_of<InvalidInput>([&] { with_error.validate(); }),
                  {"success=true with error='late'", "no error on success"});
  expect_mentions(message_of<InvalidInput>([] { throughput_from_timings(10, {}); }), {"elapsed_seconds is empty"});
  CalibrationRecord record;
  record.model_type = "gaussian_diag";
  record.workload = "em";
  record.timestamp = 1.0;
  EXPECT_NO_THROW(record.validate());
  CalibrationRecord uncanonical = record;
  uncanonical.workload = "EM";
  expect_mentions(message_of<InvalidInput>([&] { uncanonical.validate(); }),
                  {"workload='EM'", "not canonical", "accepted: em"});
  CalibrationRecord early = record;
  early.timestamp = -1;
  expect_mentions(message_of<InvalidInput>([&] { early.validate(); }), {"timestamp=-1", "since the epoch"});
  CalibrationRecord anonymous = record;
  anonymous.estimator_type = " ";  // load() refuses a blank name, so append() must too
  expect_mentions(message_of<InvalidInput>([&] { CalibrationCatalog().append(anonymous); }),
                  {"estimator_type=' '", "is blank"});
  CalibrationCatalog catalog;
  catalog.append(record);
  std::string text = catalog.to_json();
  const auto version = text.find("\"version\":1");
  ASSERT_NE(version, std::string::npos);
  text.replace(version, 11, "\"version\":2");
  expect_mentions(message_of<InvalidInput>([&] { CalibrationCatalog::from_json(text); }),
                  {"version=2", "not supported; accepted: 1"});
  // Loading names the file as well as the field.
  const fs::path file = scratch("catalog.json");
  std::ofstream(file) << text;
  expect_mentions(message_of<InvalidInput>([&] { CalibrationCatalog::load(file.string()); }),
                  {"calibration catalog '" + file.string() + "'", "version=2"});
  catalog.save(file.string());
  EXPECT_EQ(CalibrationCatalog::load(file.string()), catalog);
  fs::remove_all(file.parent_path());
}

TEST(ReceiptRefusals, ExtrasAreFiniteScalarsInAnObject) {
  StepReceipt r{
      .step = 1, .loss = 0.5, .local_examples = 10, .local_tokens = 3, .optimizer = "em", .precision = "float32"};
  r.data_parallel_size = 4;
  EXPECT_EQ(r.global_tokens(), 12);  // local × data-parallel size, unless observed
  r.global_tokens_observed = 11;
  EXPECT_EQ(r.global_tokens(), 11);
  r.extra["delta"] = std::numeric_limits<double>::infinity();
  expect_mentions(message_of<InvalidInput>([&] { r.validate(); }), {"extra.delta", "not finite"});
  r.extra["delta"] = 1e-3;
  EXPECT_NO_THROW(r.validate());
  const std::string line = r.to_json_line();
  std::string list = line;
  list.replace(list.find("\"extra\":{"), 9, "\"extra\":[1],\"ignored\":{");
  expect_mentions(message_of<InvalidInput>([&] { StepReceipt::from_json(list); }), {"extra=[1]", "not an object"});
  std::string nested = line;
  nested.replace(nested.find("\"delta\":"), 8, "\"nested\":[1,2],\"delta\":");
  expect_mentions(message_of<InvalidInput>([&] { StepReceipt::from_json(nested); }),
                  {"extra.nested=[1,2]", "not a scalar"});
}

// The observed global counts are counts: 0 (a step no rank saw an example of) is one, −1 is not.
TEST(ReceiptRefusals, ObservedGlobalCountsMayBeZeroButNotNegative) {
  StepReceipt r{.step = 0, .loss = 0.0, .local_examples = 0, .local_tokens = 0, .optimizer = "em", .precision = "fp64"};
  r.global_examples_observed = 0;
  r.global_tokens_observed = 0;
  EXPECT_NO_THROW(r.validate());
  r.global_examples_observed = -1;
  expect_mentions(message_of<InvalidInput>([&] { r.validate(); }),
                  {"global_examples_observed=-1", "accepted: an integer ≥ 0"});
  r.global_examples_observed = 0;
  r.global_tokens_observed = -1;
  expect_mentions(message_of<InvalidInput>([&] { r.validate(); }),
                  {"global_tokens_observed=-1", "accepted: an integer ≥ 0"});
}

TEST(ShardPlanRefusals, MinimumsEmptyRangesAndShrinkingToK) {
  Resources three({device("big", 4), device("small1", 1), device("small2", 1)});
  expect_mentions(
      message_of<InvalidInput>([&] { model_sharding_plan(gmm(6, 1), three, {.min_components_per_shard = 0}); }),
      {"min_components_per_shard=0", "≥ 1"});
  // Throughput asks for 4 + 1 + 1 components of 6, the minimum raises the small ones to 2: the
  // largest gives back until the ranges cover exactly K.
  const std::vector<ModelShard> shards = model_sharding_plan(gmm(6, 1), three, {.min_components_per_shard = 2});
  ASSERT_EQ(shards.size(), 3u);
  std::uint64_t cursor = 0;
  for (const ModelShard& s : shards) {
    EXPECT_EQ(s.component_start, cursor);
    EXPECT_EQ(s.num_components(), 2u) << s.device.name;
    cursor = s.component_stop;
  }
  EXPECT_EQ(cursor, 6u);
  ModelShard empty = shards[0];
  empty.component_stop = empty.component_start;
  expect_mentions(message_of<InvalidInput>([&] { empty.validate(); }), {"big[0:0]", "empty component range"});
  // A shard whose parameters and statistics take exactly the device's memory fits; a byte less does not.
  ModelShard exact = shards[1];
  exact.device.memory_bytes = exact.parameter_bytes + exact.statistic_bytes;
  EXPECT_NO_THROW(exact.validate());
  exact.device.memory_bytes = *exact.device.memory_bytes - 1;
  expect_mentions(message_of<MemoryError>([&] { exact.validate(); }), {"small1[2:4]", "over the capacity"});
}

TEST(LauncherRefusals, TorchrunSlurmDaskAndSparkNameTheVariable) {
  expect_mentions(message_of<InvalidInput>([] {
                    Resources::from_torchrun(Environment{{"RANK", "3"}});
                  }),
                  {"RANK=3 is outside a world of 1", "accepted: 0"});
  EXPECT_EQ(Resources::from_torchrun(Environment{{"RANK", "0"}}).size(), 1u);
  const Environment four{{"SLURM_NTASKS", "4"}, {"SLURM_PROCID", "1"}, {"SLURM_LOCALID", "1"}, {"SLURM_NODEID", "0"}};
  Environment odd = four;
  odd["SLURM_NTASKS_PER_NODE"] = "3";
  expect_mentions(message_of<InvalidInput>([&] { Resources::from_slurm(odd); }),
                  {"SLURM_NTASKS_PER_NODE=3 does not divide SLURM_NTASKS=4", "SLURM_TASKS_PER_NODE"});
  Environment none_per_node = four;  // 0 tasks a node divides nothing
  none_per_node["SLURM_NTASKS_PER_NODE"] = "0";
  expect_mentions(message_of<InvalidInput>([&] { Resources::from_slurm(none_per_node); }),
                  {"SLURM_NTASKS_PER_NODE=0 is out of range", "an integer ≥ 1"});
  expect_mentions(message_of<InvalidInput>([&] { Resources::from_slurm(four); }),
                  {"SLURM_NTASKS=4 but neither SLURM_TASKS_PER_NODE nor SLURM_NTASKS_PER_NODE is set"});
  Environment beyond = four;
  beyond["SLURM_TASKS_PER_NODE"] = "2(x2)";
  beyond["SLURM_PROCID"] = "4";
  expect_mentions(message_of<InvalidInput>([&] { Resources::from_slurm(beyond); }),
                  {"SLURM_PROCID=4 is outside the world", "SLURM_NTASKS=4"});
  // A node with no tasks is no node of the job: its count, like its repeat, must be ≥ 1.
  for (const char* layout : {"2,0,2", "0(x2),4", "2(x0),4"}) {
    Environment empty_node = four;
    empty_node["SLURM_TASKS_PER_NODE"] = layout;
    expect_mentions(message_of<InvalidInput>([&] { Resources::from_slurm(empty_node); }),
                    {"SLURM_TASKS_PER_NODE=0 is out of range", "accepted: an integer ≥ 1"});
  }
  const Environment alone{{"SLURM_NTASKS", "1"}, {"SLURM_PROCID", "0"}, {"SLURM_LOCALID", "0"}, {"SLURM_NODEID", "0"}};
  EXPECT_EQ(Resources::from_slurm(alone).size(), 1u);  // one task needs no per-node counts
  expect_mentions(message_of<InvalidInput>([] { Resources::from_dask(R"({"workers": {"tcp://a:1": 4}})"); }),
                  {"workers[tcp://a:1]=4", "not an object"});
  expect_mentions(message_of<InvalidInput>(
                      [] { Resources::from_spark(R"({"defaultParallelism": 2, "executorMemory": "99999999999t"})"); }),
                  {"executorMemory='99999999999t' is too large"});
}

TEST(ResourcesRefusals, DevicesAreObjectsWithCanonicalPrecisions) {
  DeviceSpec d = device("cpu:0", 1);
  d.precision = "fp32";
  expect_mentions(message_of<InvalidInput>([&] { d.validate(); }),
                  {"precision='fp32' is not canonical", "accepted: 'float32'"});
  d.precision = "float32";
  EXPECT_NO_THROW(d.validate());
  EXPECT_EQ(Resources::from_specs({d}), Resources({d}));
  expect_mentions(message_of<InvalidInput>([] { Resources::from_json(R"({"devices": ["cpu:0"]})"); }),
                  {"devices[0]=\"cpu:0\"", "not an object"});
}

// A model whose sizes overflow 64 bits is refused, never planned from a wrapped-around count:
// a gaussian_full part of 2^33 columns (D² = 2^66 values), and one of 2^31 (D² = 2^62 values,
// whose float64 bytes are 2^65). Just inside, 2^30 columns plan to their exact size.
TEST(ModelSummaryRefusals, SizesOverSixtyFourBitsAreRefused) {
  ModelSummary m;
  m.components = 1;
  m.parts = {PartSummary{"gaussian_full", std::size_t{1} << 33, 0}};
  expect_mentions(message_of<InvalidInput>([&] { (void)m.parameter_bytes(); }),
                  {"parameter count overflows 64 bits", "too large to plan"});
  expect_mentions(message_of<InvalidInput>([&] { (void)m.statistic_bytes(); }),
                  {"statistic count overflows 64 bits", "too large to plan"});
  m.parts = {PartSummary{"gaussian_full", std::size_t{1} << 31, 0}};
  expect_mentions(message_of<InvalidInput>([&] { (void)m.parameter_bytes(); }), {"overflows 64 bits"});
  m.parts = {PartSummary{"gaussian_full", std::size_t{1} << 30, 0}};
  const std::uint64_t D = std::uint64_t{1} << 30;
  EXPECT_EQ(m.parameter_values_per_component(), 1 + D + D * D);  // weight, mean, covariance
  EXPECT_EQ(m.parameter_bytes(), 8 * (1 + D + D * D));
}
