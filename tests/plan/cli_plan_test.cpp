// `mixle resources` and `mixle plan` end to end: real processes, output parsed back.
#include <mixle/data.hpp>
#include <mixle/model.hpp>
#include <mixle/plan.hpp>

#include "plan/test_util.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <sys/wait.h>
#include <unistd.h>

using namespace mixle::plan;
namespace fs = std::filesystem;

namespace {

struct CliRun {
  int code = -1;
  std::string out;  // stdout
  std::string err;  // stderr
};

class PlanCli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("mixle_plan_cli_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  void write(const std::string& name, const std::string& text) const { std::ofstream(path(name)) << text; }

  /// Runs `env mixle args`, capturing stdout and stderr.
  CliRun run(const std::string& args, const std::string& env = "") const {
    const std::string err_file = path("stderr.txt");
    const std::string cmd =
        "env -u WORLD_SIZE -u OMPI_COMM_WORLD_SIZE -u PMI_SIZE -u PMIX_SIZE "
        "-u MPI_LOCALNRANKS " +
        env + " " + MIXLE_CLI_PATH + " " + args + " 2>" + err_file;
    CliRun r;
    FILE* pipe = ::popen(cmd.c_str(), "r");
    if (!pipe) return r;
    char buf[4096];
    std::size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, pipe)) > 0) r.out.append(buf, n);
    const int status = ::pclose(pipe);
    r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    std::ifstream in(err_file);
    r.err.assign(std::istreambuf_iterator<char>(in), {});
    return r;
  }

  fs::path dir_;
};

}  // namespace

namespace {

/// The placement table of `mixle plan` output: the lines from its header ("device  rows …") to
/// the next blank line.
std::vector<std::string> placement_table(const std::string& out) {
  std::vector<std::string> lines;
  std::istringstream in(out);
  std::string line;
  bool inside = false;
  while (std::getline(in, line)) {
    if (line.rfind("device ", 0) == 0 && line.find("rows") != std::string::npos) inside = true;
    if (inside && line.empty()) break;
    if (inside) lines.push_back(line);
  }
  return lines;
}

}  // namespace

TEST_F(PlanCli, ResourcesFromMpiPrintsRoundTrippableJson) {
  CliRun r = run("resources --from-mpi", "OMPI_COMM_WORLD_SIZE=3");
  ASSERT_EQ(r.code, 0) << r.err;
  Resources res = Resources::from_json(r.out);
  ASSERT_EQ(res.size(), 3u);
  EXPECT_EQ(res.devices()[2].name, "mpi:2");
}

TEST_F(PlanCli, ResourcesDiscoverWritesAtomicallyToOut) {
  CliRun r = run("resources --discover --cpu-workers 2 --no-cuda --out " + path("res.json"));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(r.out.empty());
  Resources res = Resources::load(path("res.json"));
  ASSERT_EQ(res.size(), 2u);
  EXPECT_EQ(res.devices()[1].name, "cpu:1");
  EXPECT_GE(res.devices()[0].compute_units.value_or(0), 1);
}

TEST_F(PlanCli, ResourcesFromDaskAndSparkFiles) {
  write("dask.json", R"({"workers": {"tcp://b:1": {"nthreads": 4}, "tcp://a:1": {"nthreads": 2}}})");
  CliRun d = run("resources --from-dask " + path("dask.json"));
  ASSERT_EQ(d.code, 0) << d.err;
  EXPECT_EQ(Resources::from_json(d.out).devices()[0].name, "dask:tcp://a:1");
  write("spark.json", R"({"defaultParallelism": 5, "executorMemory": 5000})");
  CliRun s = run("resources --from-spark " + path("spark.json"));
  ASSERT_EQ(s.code, 0) << s.err;
  EXPECT_EQ(Resources::from_json(s.out).devices()[4].memory_bytes, 1000u);
}

TEST_F(PlanCli, ResourcesUsageAndTopologyErrors) {
  EXPECT_EQ(run("resources --discover --from-mpi").code, 2);  // one source at most
  EXPECT_EQ(run("resources --discover --cpu-workers 0").code, 2);
  CliRun t = run("resources --from-torchrun", "WORLD_SIZE=2 RANK=0 LOCAL_RANK=0 GROUP_RANK=0");
  EXPECT_EQ(t.code, 1);
  EXPECT_NE(t.err.find("LOCAL_WORLD_SIZE"), std::string::npos) << t.err;
}

TEST_F(PlanCli, PlanJsonMatchesTheLibrary) {
  Resources res({DeviceSpec{.name = "slow", .throughput = 1}, DeviceSpec{.name = "fast", .throughput = 3}});
  res.save(path("res.json"));
  CliRun r = run("plan --rows 100 --family gaussian_diag --components 5 --dims 2 --resources " + path("res.json") +
                 " --shard-components --json");
  ASSERT_EQ(r.code, 0) << r.err;
  const nlohmann::json doc = nlohmann::json::parse(r.out);
  Placement p = Placement::from_json(doc.at("placement").dump());
  PlanOptions o{.rows = 100, .model = ModelSummary{5, {{"gaussian_diag", 2, 0}}}};
  EXPECT_EQ(p, plan(res, o));
  ASSERT_EQ(p.shards.size(), 2u);
  EXPECT_EQ(p.shards[0].size(), 25u);
  ASSERT_EQ(doc.at("model_shards").size(), 2u);
  EXPECT_EQ(doc["model_shards"][0]["component_stop"], 1);
  EXPECT_EQ(doc["model_shards"][1]["component_stop"], 5);
  // The model fits both devices: a run on one rank per device is data parallel.
  EXPECT_EQ(doc.at("run").at("kind"), "plain");
  EXPECT_EQ(doc["run"].at("shard_components"), 1);
}

// A model no device holds whole: `mixle plan --shard-components` shows what the run does with
// it (the component split model_sharding_plan gives, the rows placed beside the largest shard)
// instead of refusing; a device cut into many pieces is shown by its first and last two.
TEST_F(PlanCli, PlanShowsTheShardedRunOfAModelNoDeviceHolds) {
  std::vector<DeviceSpec> devices;
  for (int r = 0; r < 4; ++r)
    devices.push_back(DeviceSpec{.name = "cpu:" + std::to_string(r), .memory_bytes = 40000000});
  const Resources res(devices);
  res.save(path("res.json"));
  const std::string args = "plan --rows 100000 --family gaussian_diag --components 100000 --dims 16 --resources " +
                           path("res.json") + " --shard-components";
  EXPECT_EQ(run(args.substr(0, args.find(" --shard-components"))).code, 1) << "the whole model fits no device";
  CliRun j = run(args + " --json");
  ASSERT_EQ(j.code, 0) << j.err;
  const nlohmann::json doc = nlohmann::json::parse(j.out);
  const ModelSummary model{100000, {{"gaussian_diag", 16, 0}}};
  const std::vector<ModelShard> shards = model_sharding_plan(model, res);
  ASSERT_EQ(doc.at("model_shards").size(), shards.size());
  for (std::size_t i = 0; i < shards.size(); ++i)
    EXPECT_EQ(ModelShard::from_json(doc["model_shards"][i].dump()), shards[i]);
  EXPECT_EQ(doc.at("run").at("kind"), "sharded");
  EXPECT_EQ(doc["run"].at("shard_components"), shards.size());
  const Placement placement = Placement::from_json(doc.at("placement").dump());
  EXPECT_EQ(placement.total_rows, 100000u);
  EXPECT_EQ(placement.model_bytes, shards.front().parameter_bytes) << "rows planned beside one shard";
  ASSERT_GT(placement.shards.size(), 8u) << "40 MB holds the working set of a few hundred rows at a time";

  CliRun t = run(args);
  ASSERT_EQ(t.code, 0) << t.err;
  EXPECT_EQ(t.out.rfind("Run on one rank per device: component sharded: 1 data group(s) × " +
                            std::to_string(shards.size()) + " component shards (the model does not fit one device",
                        0),
            0u)
      << t.out;
  const std::string hidden = "... " + std::to_string(placement.shards.size() - 4) + " more pieces, rows [" +
                             std::to_string(placement.shards[2].start) + ", " +
                             std::to_string(placement.shards[placement.shards.size() - 3].stop) + ")";
  EXPECT_NE(t.out.find(hidden), std::string::npos) << t.out;
  EXPECT_NE(t.out.find("[" + std::to_string(placement.shards.back().start) + ", 100000)"), std::string::npos) << t.out;
  // The placement table: its header, two pieces, the count, two pieces — every line as wide as
  // the header.
  const std::vector<std::string> table = placement_table(t.out);
  ASSERT_EQ(table.size(), 6u) << t.out;
  for (const std::string& line : table) EXPECT_EQ(line.size(), table[0].size()) << "\"" << line << "\"\n" << t.out;
  EXPECT_EQ(table[3].find("cpu:0"), 0u) << t.out;
  EXPECT_NE(table[3].find(hidden), std::string::npos) << t.out;
}

// Seven pieces on one device are all shown; from eight, the first and last two and a count.
TEST_F(PlanCli, PlanTableShowsSevenPiecesOfADeviceAndCountsTheMiddleOfEight) {
  Resources({DeviceSpec{.name = "cpu:0"}}).save(path("res.json"));
  const std::string args =
      "plan --rows 8000 --family gaussian_diag --components 2 --resources " + path("res.json") + " --num-chunks ";
  CliRun seven = run(args + "7");
  ASSERT_EQ(seven.code, 0) << seven.err;
  EXPECT_EQ(placement_table(seven.out).size(), 8u) << seven.out;
  EXPECT_EQ(seven.out.find("more pieces"), std::string::npos) << seven.out;
  CliRun eight = run(args + "8");
  ASSERT_EQ(eight.code, 0) << eight.err;
  const std::vector<std::string> table = placement_table(eight.out);
  ASSERT_EQ(table.size(), 6u) << eight.out;
  EXPECT_NE(table[3].find("... 4 more pieces, rows [2000, 6000)"), std::string::npos) << eight.out;
  EXPECT_NE(table[4].find("[6000, 7000)"), std::string::npos) << eight.out;
}

// Every placement option reaches plan(): the command's JSON is the placement plan() makes from
// the same options, each one off its default.
TEST_F(PlanCli, PlanPassesEveryPlacementOption) {
  Resources({DeviceSpec{.name = "cpu:0"}, DeviceSpec{.name = "cpu:1", .throughput = 3.0}}).save(path("res.json"));
  CliRun r = run("plan --rows 10000 --family gaussian_diag --components 2 --resources " + path("res.json") +
                 " --json --num-chunks 3 --sub-chunks 4 --rows-per-chunk 1000 --safety-factor 1.5 --dtype f64"
                 " --precision float64");
  ASSERT_EQ(r.code, 0) << r.err;
  PlanOptions options;
  options.rows = 10000;
  options.model = ModelSummary{2, {{"gaussian_diag", 1, 0}}};
  options.data_dtype_bytes = 8;
  options.precision = "float64";
  options.num_chunks = 3;
  options.sub_chunks = 4;
  options.rows_per_chunk = 1000;
  options.safety_factor = 1.5;
  const Placement expected = plan(Resources::load(path("res.json")), options);
  EXPECT_EQ(Placement::from_json(nlohmann::json::parse(r.out).at("placement").dump()), expected) << r.out;
  EXPECT_EQ(expected.shards.size(), 3u);
  EXPECT_EQ(expected.shards[0].sub_chunks, 4u);
}

TEST_F(PlanCli, PlanReadsTheModelFile) {
  Resources::single_cpu().save(path("res.json"));
  write("model.json", R"({"format": "mixle-model", "version": 1, "weights": [0.5, 0.25, 0.25],
      "parts": [{"family": "gaussian_diag", "columns": [0, 2],
                 "mean": [[0, 0], [1, 1], [2, 2]], "var": [[1, 1], [1, 1], [1, 1]]},
                {"family": "categorical", "columns": [2, 3], "categories": 3,
                 "prob": [[0.5, 0.5, 0], [0.2, 0.3, 0.5], [1, 0, 0]]}]})");
  CliRun r = run("plan --rows 10 --model " + path("model.json") + " --resources " + path("res.json") +
                 " --json --safety-factor 1");
  ASSERT_EQ(r.code, 0) << r.err;
  Placement p = Placement::from_json(nlohmann::json::parse(r.out).at("placement").dump());
  ModelSummary expected{3, {{"gaussian_diag", 2, 0}, {"categorical", 1, 3}}};
  EXPECT_EQ(p.model_bytes, expected.parameter_bytes());
  EXPECT_EQ(p.statistic_bytes, expected.statistic_bytes());
  EXPECT_EQ(p.encoded_row_bytes, 3 * 4);
  EXPECT_EQ(p.transient_row_bytes, 3 * 4);
  // The same shape as a layout gives the same bytes.
  CliRun layout = run("plan --rows 10 --layout gaussian_diag:0-2,categorical:2-3:3 --components 3 --resources " +
                      path("res.json") + " --json --safety-factor 1");
  ASSERT_EQ(layout.code, 0) << layout.err;
  EXPECT_EQ(Placement::from_json(nlohmann::json::parse(layout.out).at("placement").dump()), p);
  // The table names every shard and its rows.
  CliRun table = run("plan --rows 10 --model " + path("model.json") + " --resources " + path("res.json"));
  ASSERT_EQ(table.code, 0) << table.err;
  EXPECT_NE(table.out.find("cpu:0"), std::string::npos);
  EXPECT_NE(table.out.find("[0, 10)"), std::string::npos);
}

// The plan command reads model files with the fit's parser: what `mixle fit --init model`
// refuses, `mixle plan` refuses with the same message (the version, parameters, the categorical
// rule), and a layout's categorical part needs its V.
TEST_F(PlanCli, PlanReadsModelsAsTheFitDoes) {
  Resources::single_cpu().save(path("res.json"));
  const std::string tail = " --resources " + path("res.json");
  write("noversion.json", R"({"format": "mixle-model", "weights": [1],
      "parts": [{"family": "poisson", "columns": [0, 1], "rate": [[2]]}]})");
  write("noparams.json", R"({"format": "mixle-model", "version": 1, "weights": [1],
      "parts": [{"family": "poisson", "columns": [0, 1]}]})");
  write("onecat.json", R"({"format": "mixle-model", "version": 1, "weights": [1],
      "parts": [{"family": "categorical", "columns": [0, 1], "categories": 1, "prob": [[1]]}]})");
  for (const char* file : {"noversion.json", "noparams.json"}) {
    SCOPED_TRACE(file);
    std::string fit_error;
    try {
      mixle::load_model(path(file));
    } catch (const mixle::InvalidInput& e) {
      fit_error = e.what();
    }
    ASSERT_FALSE(fit_error.empty());
    CliRun r = run("plan --rows 5 --model " + path(file) + tail);
    EXPECT_EQ(r.code, 1);
    EXPECT_NE(r.err.find(fit_error), std::string::npos) << r.err << "\nfit says: " << fit_error;
  }
  // One category is a valid model for the fit, and so for the plan.
  CliRun one = run("plan --rows 5 --json --model " + path("onecat.json") + tail);
  ASSERT_EQ(one.code, 0) << one.err;
  CliRun nov = run("plan --rows 5 --layout categorical:0-1 --components 2" + tail);
  EXPECT_EQ(nov.code, 1);
  EXPECT_NE(nov.err.find("categories=0"), std::string::npos) << nov.err;
  for (const std::string both :
       {std::string(" --layout poisson:0-1 --family poisson"), " --layout poisson:0-1 --model " + path("onecat.json"),
        " --family poisson --model " + path("onecat.json")}) {
    CliRun r = run("plan --rows 5 --components 2" + both + tail);
    EXPECT_EQ(r.code, 2) << both;
    EXPECT_NE(r.err.find("not several"), std::string::npos) << both << ": " << r.err;
  }
}

// The table: every line of a table has the same width (headers and values padded to the same
// columns), and the defaults --help states are the ones used (chunks of 65536 rows; one
// component per shard at least, so K = 3 over three devices gives three model shards).
TEST_F(PlanCli, PlanTableAlignsAndUsesTheStatedDefaults) {
  Resources({DeviceSpec{.name = "cpu:0"}, DeviceSpec{.name = "cpu:1"}, DeviceSpec{.name = "cpu:2"}})
      .save(path("res.json"));
  const std::string args = "plan --rows 1000 --family gaussian_diag --components 3 --dims 2 --resources " +
                           path("res.json") + " --shard-components";
  CliRun r = run(args);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("chunks of 65536 rows"), std::string::npos) << r.out;
  // Tables are the runs of lines after a blank line (the first line of each is its header).
  std::vector<std::vector<std::string>> tables;
  std::istringstream lines(r.out);
  std::string line;
  bool blank = false;
  while (std::getline(lines, line)) {
    if (line.empty()) {
      blank = true;
      continue;
    }
    if (line.back() == ':') continue;  // a table's title
    if (blank) tables.emplace_back();
    blank = false;
    if (!tables.empty()) tables.back().push_back(line);
  }
  ASSERT_EQ(tables.size(), 2u) << r.out;
  for (const auto& table : tables) {
    ASSERT_GE(table.size(), 2u);
    for (const std::string& row : table) EXPECT_EQ(row.size(), table[0].size()) << "\"" << row << "\"\n" << r.out;
  }
  EXPECT_EQ(tables[1].size(), 4u) << "a header and one model shard per device:\n" << r.out;
  CliRun j = run(args + " --json");
  ASSERT_EQ(j.code, 0) << j.err;
  EXPECT_EQ(nlohmann::json::parse(j.out).at("model_shards").size(), 3u);
}

// Byte counts in the table use the largest binary unit that keeps the number at least 1,
// up to PiB: a device of 2^62 bytes (4 EiB) shows as 4096.0 PiB.
TEST_F(PlanCli, PlanTableBytesStopAtPiB) {
  Resources({DeviceSpec{.name = "huge", .memory_bytes = std::uint64_t{1} << 62},
             DeviceSpec{.name = "small", .memory_bytes = std::uint64_t{3} << 30}})
      .save(path("res.json"));
  CliRun r = run("plan --rows 100 --family poisson --components 2 --resources " + path("res.json"));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("4096.0 PiB"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("3.0 GiB"), std::string::npos) << r.out;
}

// --categories sizes a one-part categorical model: K weights and K·V probabilities (8 bytes
// each), and statistics of 2 header values, K masses and K·V counts.
TEST_F(PlanCli, CategoriesSizeAOnePartCategoricalModel) {
  Resources::single_cpu().save(path("res.json"));
  CliRun r = run("plan --rows 100 --family categorical --components 2 --categories 7 --resources " + path("res.json"));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("fixed: model " + std::to_string(8 * (2 + 2 * 7)) + " B + statistics " +
                       std::to_string(8 * (2 + 2 + 2 * 7)) + " B"),
            std::string::npos)
      << r.out;
}

// --data reads the rows, the element type and (for a one-part model without --dims) the columns
// from the file's header — never its values — and excludes --rows.
TEST_F(PlanCli, PlanTakesRowsDtypeAndColumnsFromTheDataFile) {
  Resources::single_cpu().save(path("res.json"));
  std::vector<double> values(123 * 3, 0.5);
  mixle::write_matrix(path("d.npy"), values.data(), 123, 3);
  CliRun r = run("plan --data " + path("d.npy") + " --family gaussian_diag --components 2 --resources " +
                 path("res.json") + " --json");
  ASSERT_EQ(r.code, 0) << r.err;
  const Placement p = Placement::from_json(nlohmann::json::parse(r.out).at("placement").dump());
  PlanOptions o{.rows = 123, .model = ModelSummary{2, {{"gaussian_diag", 3, 0}}}, .data_dtype_bytes = 8};
  EXPECT_EQ(p, plan(Resources::single_cpu(), o));
  CliRun both = run("plan --rows 5 --data " + path("d.npy") + " --family gaussian_diag --components 2 --resources " +
                    path("res.json"));
  EXPECT_EQ(both.code, 2);
  EXPECT_NE(both.err.find("either --rows N or --data FILE"), std::string::npos) << both.err;
}

TEST_F(PlanCli, PlanErrorsExitWithTheRightCodes) {
  Resources::single_cpu({.memory_bytes = 1}).save(path("tiny.json"));
  Resources::single_cpu().save(path("res.json"));
  // Usage: no model, both models, no rows → 2.
  EXPECT_EQ(run("plan --rows 5 --resources " + path("res.json")).code, 2);
  EXPECT_EQ(run("plan --family poisson --components 2 --resources " + path("res.json")).code, 2);
  write("m.json", R"({"format": "mixle-model", "version": 1, "weights": [1],
      "parts": [{"family": "poisson", "columns": [0, 1], "rate": [[1]]}]})");
  EXPECT_EQ(run("plan --rows 5 --model " + path("m.json") + " --family poisson --components 2 --resources " +
                path("res.json"))
                .code,
            2);
  // A Resources file that is not there is a usage error naming it.
  const CliRun missing = run("plan --rows 5 --family poisson --components 2 --resources " + path("absent.json"));
  EXPECT_EQ(missing.code, 2);
  EXPECT_NE(missing.err.find(path("absent.json")), std::string::npos) << missing.err;
  // An option's value out of its range is a usage error too, naming the option.
  CliRun sf = run("plan --rows 5 --family poisson --components 2 --safety-factor -1 --resources " + path("res.json"));
  EXPECT_EQ(sf.code, 2);
  EXPECT_NE(sf.err.find("--safety-factor: -1 is not above 0"), std::string::npos) << sf.err;
  // Bad files and impossible plans → 1 with a message.
  CliRun mem = run("plan --rows 5 --family poisson --components 2 --resources " + path("tiny.json"));
  EXPECT_EQ(mem.code, 1);
  EXPECT_NE(mem.err.find("fixed model/statistic state"), std::string::npos) << mem.err;
  write("none.json", R"({"format": "mixle-model", "version": 1, "weights": [1], "parts": []})");
  CliRun none = run("plan --rows 5 --model " + path("none.json") + " --resources " + path("res.json"));
  EXPECT_EQ(none.code, 1);
  EXPECT_NE(none.err.find("\"parts\" is empty"), std::string::npos) << none.err;
  write("bad.json", R"({"format": "mixle-model", "version": 1, "weights": [1],
      "parts": [{"family": "poisson", "columns": [3, 1], "rate": [[1]]}]})");
  CliRun bad = run("plan --rows 5 --model " + path("bad.json") + " --resources " + path("res.json"));
  EXPECT_EQ(bad.code, 1);
  EXPECT_NE(bad.err.find("parts[0]: \"columns\" [3, 1) is empty"), std::string::npos) << bad.err;
}
