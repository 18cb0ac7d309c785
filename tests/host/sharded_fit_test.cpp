// Component-sharded EM with real processes on 127.0.0.1: `mixle launch --nproc 4 -- mixle fit
// --shard-components G` equals the one-process fit at G = 1, 2, 4, each rank holds only its
// shard's parameters, and a Resources file whose devices cannot hold the whole model makes the
// planner cut it and the fit run sharded. Every wait is bounded.
#include "common/cpu_resources.hpp"
#include "common/require.hpp"
#include "host/fit_process_util.hpp"
#include "comms/socket.hpp"

#include <mixle/data.hpp>
#include <mixle/plan/placement.hpp>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <fstream>
#include <sstream>

namespace mixle::test {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;

// fp64 on both sides: the unsharded E-step normalises each row over all K components inside
// the kernels; the sharded one combines the shards' per-row log-likelihoods gathered from the
// group and folds exp(l − log p(x)) (accumulate_normalised) — equal maths, different rounding
// order, so models agree to ~1e-15 per iteration. At fp32 the two paths round differently by
// design, so only fp64 admits a tight bound.
constexpr double kShardRtol = 1e-9;

const std::string kCli = MIXLE_CLI_PATH;
const std::string kLayout = "gaussian_diag:0-3,categorical:3-4:3,poisson:4-5";

/// Draws `rows` rows of a 4-component mixed record into dir/data.npy.
fs::path make_data(const TempDir& dir, int rows) {
  return generate_data(dir, R"({"format":"mixle-model","version":1,"weights":[0.4,0.3,0.2,0.1],"parts":[
    {"family":"gaussian_diag","columns":[0,3],"mean":[[0,0,0],[3,3,0],[0,4,-3],[-4,1,2]],"var":[[1,1,1],[0.5,2,1],[1,0.3,2],[1,1,0.5]]},
    {"family":"categorical","columns":[3,4],"categories":3,"prob":[[0.8,0.1,0.1],[0.1,0.8,0.1],[0.1,0.1,0.8],[0.4,0.3,0.3]]},
    {"family":"poisson","columns":[4,5],"rate":[[1],[6],[15],[3]]}]})",
                       rows);
}

std::vector<std::string> fit_args(const fs::path& data, const fs::path& out, int max_iter = 30,
                                  const std::string& tol = "1e-7") {
  return {kCli,           "fit",   "--data",      data.string(), "--layout",   kLayout,
          "--components", "4",     "--seed",      "11",          "--max-iter", std::to_string(max_iter),
          "--tol",        tol,     "--precision", "fp64",        "--threads",  "1",
          "--quiet",      "--out", out.string()};
}

Process launch(int nproc, std::vector<std::string> extra, const fs::path& data, const fs::path& out,
               const fs::path& log) {
  std::vector<std::string> argv{kCli, "launch", "--nproc", std::to_string(nproc), "--"};
  for (const auto& a : fit_args(data, out)) argv.push_back(a);
  for (auto& a : extra) argv.push_back(std::move(a));
  return run_process(argv, {}, log, 180s);
}

/// The integers after `label` on the line that starts with it.
std::vector<std::uint64_t> numbers_after(const std::string& output, const std::string& label) {
  std::vector<std::uint64_t> out;
  const auto at = output.find(label);
  if (at == std::string::npos) return out;
  std::istringstream line(output.substr(at + label.size(), output.find('\n', at) - at - label.size()));
  std::uint64_t v;
  while (line >> v) out.push_back(v);
  return out;
}

/// The rest of the line that starts with `label` ("(missing)" when there is none).
std::string line_after(const std::string& output, const std::string& label) {
  const auto at = output.find(label);
  if (at == std::string::npos) return "(missing)";
  return output.substr(at + label.size(), output.find('\n', at) - at - label.size());
}

/// Bytes of the fixed state (parameters and statistics) of the fits' model with K components,
/// × the planner's safety factor 1.25: what a device must hold besides any rows.
double fixed_state(std::size_t K) {
  plan::ModelSummary m;
  m.components = K;
  m.parts = {{"gaussian_diag", 3, 0}, {"categorical", 1, 3}, {"poisson", 1, 0}};
  return static_cast<double>(m.parameter_bytes() + m.statistic_bytes()) * 1.25;
}

/// A Resources file of `ranks` CPU devices, cpu:0…, each of `bytes` memory.
void write_resources(const fs::path& path, std::uint64_t bytes, int ranks = 2) {
  std::ofstream(path) << cpu_devices(ranks, bytes).to_json();
}

/// `mixle plan --shard-components` for the fits' model over `resources`: what it says a run
/// on one rank per device does.
std::string planned_run(const TempDir& dir, const fs::path& data, const fs::path& resources) {
  Process plan = run_process({kCli, "plan", "--data", data.string(), "--layout", kLayout, "--components", "4",
                              "--precision", "float64", "--resources", resources.string(), "--shard-components"},
                             {}, dir.path / "plan.log", 60s);
  EXPECT_EQ(plan.exit_code(), 0) << plan.output();
  return line_after(plan.output(), "Run on one rank per device: ");
}

/// The value of the summary's "mean log-likelihood per row:" line (NaN when it is missing).
double mean_loglik_printed(const std::string& out) {
  const std::string label = "mean log-likelihood per row: ";
  const auto at = out.find(label);
  return at == std::string::npos ? std::nan("") : std::stod(out.substr(at + label.size()));
}

TEST(ShardedFit, LaunchShardedMatchesOneProcessFp64) {
  MIXLE_SKIP_UNLESS_BUILT_WITH(MIXLE_HAVE_GLOO, "gloo");
  TempDir dir;
  const fs::path data = make_data(dir, 20000);
  Process one = run_process(fit_args(data, dir.path / "one.json"), {}, dir.path / "one.log", 120s);
  ASSERT_EQ(one.exit_code(), 0) << one.output();
  const std::uint64_t model_bytes = numbers_after(one.output(), "model parameter bytes:").at(0);
  ASSERT_GT(model_bytes, 0u);
  // The whole model's statistics: the header (Σ log-likelihood, rows) and K blocks of equal size.
  const std::uint64_t statistic_bytes = numbers_after(one.output(), "resident statistic bytes per rank:").at(0);
  ASSERT_GT(statistic_bytes, 16u);
  // world 4: 2 data groups × 2 component shards, 1 × 4, and data parallel (G = 1).
  for (int G : {2, 4, 1}) {
    const std::string name = "g" + std::to_string(G);
    const fs::path receipts = dir.path / (name + ".jsonl");
    Process p = launch(4, {"--shard-components", std::to_string(G), "--receipts", receipts.string()}, data,
                       dir.path / (name + ".json"), dir.path / (name + ".log"));
    ASSERT_EQ(p.exit_code(), 0) << p.output();
    // Every receipt records the step's collectives: the statistics all-reduced over the data
    // groups (none when there is one) and, sharded, the per-row log-likelihoods gathered over
    // the component shards (tp).
    std::istringstream lines(read_file(receipts));
    std::string line;
    int steps = 0;
    while (std::getline(lines, line)) {
      const auto extra = nlohmann::json::parse(line).at("extra");
      EXPECT_EQ(extra.at("update.em_statistics.payload"), "sufficient_statistic");
      EXPECT_EQ(extra.at("update.em_statistics.collective"), 4 / G > 1 ? "all_reduce" : "none");
      EXPECT_EQ(extra.at("update.em_statistics.mesh_axes"), 4 / G > 1 ? "dp_replicate" : "");
      EXPECT_EQ(extra.at("update.em_statistics.state_layout"), G > 1 ? "sharded" : "replicated");
      EXPECT_EQ(extra.contains("update.shard_log_likelihoods.collective"), G > 1);
      EXPECT_EQ(extra.contains("update.em_scalars.collective"), G > 1);
      if (G > 1) {
        EXPECT_EQ(extra.at("update.shard_log_likelihoods.collective"), "all_gather");
        EXPECT_EQ(extra.at("update.shard_log_likelihoods.mesh_axes"), "tp");
        // Gathered, not summed: exact by contract (every rank combines the same bytes).
        EXPECT_EQ(extra.at("update.shard_log_likelihoods.contract_exact"), true);
        // The global scalars go over the whole world: both axes when there are two data groups.
        EXPECT_EQ(extra.at("update.em_scalars.payload"), "sufficient_statistic");
        EXPECT_EQ(extra.at("update.em_scalars.collective"), "all_reduce");
        EXPECT_EQ(extra.at("update.em_scalars.mesh_axes"), 4 / G > 1 ? "dp_replicate,tp" : "tp");
        EXPECT_EQ(extra.at("update.em_scalars.state_layout"), "replicated");
        EXPECT_EQ(extra.at("update.em_scalars.contract_exact"), true);
        EXPECT_EQ(extra.at("update.em_scalars.exact"), false);
      }
      ++steps;
    }
    EXPECT_GT(steps, 1) << "G = " << G;
    const std::string out = p.output();
    EXPECT_NE(out.find("on 4 rank(s) (gloo"), std::string::npos) << out;
    // The line says why: the flag that asked for this mesh.
    EXPECT_NE(
        out.find(G > 1 ? "parallel: component sharded: " + std::to_string(4 / G) + " data group(s) × " +
                             std::to_string(G) + " component shards (--shard-components " + std::to_string(G) + ")"
                       : "parallel: data parallel (--shard-components 1)"),
        std::string::npos)
        << out;
    // Both paths say how this rank holds its rows: these few, resident under the default budget.
    EXPECT_EQ(line_after(out, "\nrows: ").rfind("resident (", 0), 0u) << "G = " << G << "\n" << out;
    EXPECT_LT(max_relative_difference(dir.path / "one.json", dir.path / (name + ".json")), kShardRtol) << "G = " << G;
    // The final model's log-likelihood, scored once more after the last iteration, is the
    // one-process fit's (printed to 6 decimals).
    EXPECT_NEAR(mean_loglik_printed(out), mean_loglik_printed(one.output()), 2e-6) << "G = " << G << "\n" << out;
    // Every rank holds K/G components' parameters (K = 4 divides evenly): exactly 1/G of the model.
    EXPECT_EQ(numbers_after(out, "model parameter bytes:").at(0), model_bytes);
    const auto resident = numbers_after(out, "resident parameter bytes per rank:");
    ASSERT_EQ(resident.size(), 4u) << out;
    for (std::uint64_t b : resident)
      EXPECT_EQ(b * static_cast<std::uint64_t>(G), model_bytes) << "G = " << G << "\n" << out;
    // And the statistics of its K/G components: the header plus 1/G of the components' blocks.
    const auto statistics = numbers_after(out, "resident statistic bytes per rank:");
    ASSERT_EQ(statistics.size(), 4u) << out;
    for (std::uint64_t b : statistics)
      EXPECT_EQ((b - 16) * static_cast<std::uint64_t>(G), statistic_bytes - 16) << "G = " << G << "\n" << out;
    // The summary counts the payload rank 0 handed to collectives: never nothing on 4 ranks.
    const auto at = out.find(" collective bytes");
    ASSERT_NE(at, std::string::npos) << out;
    const auto begin = out.rfind(' ', at - 1) + 1;
    EXPECT_GT(std::stoull(out.substr(begin, at - begin)), 0u) << "G = " << G << "\n" << out;
    if (G > 1)  // G = 1 runs the data-parallel path, which times them
      EXPECT_EQ(out.find(" collective bytes in "), std::string::npos)
          << "the sharded path does not time its collectives\n"
          << out;
    // Each update's bytes are its communicator's count for the step; together they are the
    // receipt's collective bytes. They are the step's payloads: the statistics all-reduced over
    // the data groups (the header and this rank's components,
    // plus the error slot without sharding; none with one data group), the per-row
    // log-likelihoods gathered over the G shards (at this K one chunk, as long as the largest
    // data group's rows rounded up to a 128-row block, plus an error slot) and the four global
    // scalars (non-empty mass, log-likelihood, rows, error mark).
    std::istringstream again(read_file(receipts));
    while (std::getline(again, line)) {
      const auto receipt = nlohmann::json::parse(line);
      const auto& extra = receipt.at("extra");
      std::uint64_t sum = 0;
      for (const auto& [key, value] : extra.items())
        if (key.starts_with("update.") && key.ends_with(".bytes")) {
          EXPECT_GE(value.get<std::int64_t>(), 0) << key << ": " << line;
          sum += value.get<std::uint64_t>();
        }
      EXPECT_EQ(sum, receipt.at("collective_bytes").get<std::uint64_t>()) << line;
      // Initialisation runs on the world communicator: step 0's world counts (the data-parallel
      // statistics, the sharded scalars) include it; the mesh groups' counts never do.
      const bool initialised = receipt.at("step").get<int>() == 0;
      const std::uint64_t reduced = extra.at("update.em_statistics.bytes").get<std::uint64_t>();
      if (G == 1) {
        if (!initialised) EXPECT_EQ(reduced, statistic_bytes + 8) << line;
        continue;
      }
      EXPECT_EQ(reduced, 4 / G > 1 ? statistics[0] : 0u) << line;
      if (!initialised) EXPECT_EQ(extra.at("update.em_scalars.bytes").get<std::uint64_t>(), 32u) << line;
      const auto gathered = extra.at("update.shard_log_likelihoods.bytes").get<std::uint64_t>();
      const auto rows = receipt.at("local_examples").get<std::uint64_t>();
      EXPECT_EQ(gathered % (8 * static_cast<std::uint64_t>(G)), 0u) << line;
      EXPECT_GE(gathered / (8 * static_cast<std::uint64_t>(G)), rows + 1) << line;
      EXPECT_LE(gathered / (8 * static_cast<std::uint64_t>(G)), rows + 256) << line;
    }
  }
}

TEST(ShardedFit, MpirunShardedMatchesOneProcessFp64) {
  MIXLE_SKIP_UNLESS_BUILT_WITH(MIXLE_HAVE_MPI, "MPI");
  TempDir dir;
  const fs::path data = make_data(dir, 12000);
  Process one = run_process(fit_args(data, dir.path / "one.json"), {}, dir.path / "one.log", 120s);
  ASSERT_EQ(one.exit_code(), 0) << one.output();
  // 2 data groups × 2 component shards over OpenMPI (its all-reduce is reduce + broadcast, so
  // every rank holds the same bytes — the sharded M-step relies on that as the gloo one does).
  std::vector<std::string> argv{MIXLE_MPIEXEC,
                                "--allow-run-as-root",
                                "--oversubscribe",
                                "--mca",
                                "btl",
                                "self,vader",
                                "--mca",
                                "oob_tcp_if_include",
                                "lo",
                                "-np",
                                "4"};
  for (const auto& a : fit_args(data, dir.path / "mpi.json")) argv.push_back(a);
  argv.push_back("--shard-components");
  argv.push_back("2");
  Process p = run_process(argv, {}, dir.path / "mpi.log", 180s);
  ASSERT_EQ(p.exit_code(), 0) << p.output();
  EXPECT_NE(p.output().find("on 4 rank(s) (mpi"), std::string::npos) << p.output();
  EXPECT_NE(p.output().find("parallel: component sharded: 2 data group(s) × 2 component shards"), std::string::npos)
      << p.output();
  EXPECT_LT(max_relative_difference(dir.path / "one.json", dir.path / "mpi.json"), kShardRtol);
}

TEST(ShardedFit, ManyComponentsPerShardMatchOneProcessFp64) {
  MIXLE_SKIP_UNLESS_BUILT_WITH(MIXLE_HAVE_GLOO, "gloo");
  // K_c = 160 components per shard over 10000-row groups: the fold's per-row normaliser
  // (the whole mixture's log-likelihood) must give the unsharded fit with many components.
  TempDir dir;
  const fs::path data = make_data(dir, 20000);
  auto args = [&](const fs::path& out) {
    return std::vector<std::string>{kCli,           "fit",
                                    "--data",       data.string(),
                                    "--family",     "gaussian_diag",
                                    "--layout",     "gaussian_diag:0-3",
                                    "--components", "320",
                                    "--init",       "select",
                                    "--init-p",     "1",
                                    "--seed",       "3",
                                    "--max-iter",   "6",
                                    "--tol",        "0",
                                    "--precision",  "fp64",
                                    "--threads",    "1",
                                    "--quiet",      "--out",
                                    out.string()};
  };
  Process one = run_process(args(dir.path / "one.json"), {}, dir.path / "one.log", 120s);
  ASSERT_EQ(one.exit_code(), 0) << one.output();
  std::vector<std::string> argv{kCli, "launch", "--nproc", "4", "--"};
  for (const auto& a : args(dir.path / "g2.json")) argv.push_back(a);
  argv.push_back("--shard-components");
  argv.push_back("2");
  Process p = run_process(argv, {}, dir.path / "g2.log", 180s);
  ASSERT_EQ(p.exit_code(), 0) << p.output();
  EXPECT_NE(p.output().find("component sharded: 2 data group(s) × 2 component shards"), std::string::npos)
      << p.output();
  EXPECT_LT(max_relative_difference(dir.path / "one.json", dir.path / "g2.json"), kShardRtol);
}

TEST(ShardedFit, SmallDeviceMemoryMakesThePlannerCutTheModel) {
  MIXLE_SKIP_UNLESS_BUILT_WITH(MIXLE_HAVE_GLOO, "gloo");
  TempDir dir;
  const fs::path data = make_data(dir, 20000);
  Process one = run_process(fit_args(data, dir.path / "one.json"), {}, dir.path / "one.log", 120s);
  ASSERT_EQ(one.exit_code(), 0) << one.output();
  // Devices that hold half the model's fixed state and some rows, but not the whole model.
  const auto memory = static_cast<std::uint64_t>((fixed_state(4) + fixed_state(2)) / 2);
  write_resources(dir.path / "resources.json", memory);
  Process p = launch(2, {"--resources", (dir.path / "resources.json").string()}, data, dir.path / "auto.json",
                     dir.path / "auto.log");
  ASSERT_EQ(p.exit_code(), 0) << p.output();
  EXPECT_NE(p.output().find("parallel: component sharded: 1 data group(s) × 2 component shards"), std::string::npos)
      << p.output();
  EXPECT_NE(p.output().find("does not fit one device"), std::string::npos) << p.output();
  EXPECT_LT(max_relative_difference(dir.path / "one.json", dir.path / "auto.json"), kShardRtol);
  // `mixle plan` prints the run's own choice, word for word.
  EXPECT_EQ(planned_run(dir, data, dir.path / "resources.json"), line_after(p.output(), "parallel: "));
  // Stepwise EM runs data parallel: a run the planner shards is refused, down to one row a step.
  Process stepwise = launch(2, {"--resources", (dir.path / "resources.json").string(), "--batch-size", "1"}, data,
                            dir.path / "stepwise.json", dir.path / "stepwise.log");
  EXPECT_NE(stepwise.exit_code(), 0) << stepwise.output();
  EXPECT_NE(stepwise.output().find("stepwise EM (batch_size 1) runs data parallel"), std::string::npos)
      << stepwise.output();
  EXPECT_NE(stepwise.output().find("does not fit one device"), std::string::npos) << stepwise.output();
  EXPECT_FALSE(fs::exists(dir.path / "stepwise.json"));

  // Four devices that each hold one component but not two: four shards of one component.
  write_resources(dir.path / "four.json", static_cast<std::uint64_t>((fixed_state(1) + fixed_state(2)) / 2), 4);
  Process four = launch(4, {"--resources", (dir.path / "four.json").string()}, data, dir.path / "four-out.json",
                        dir.path / "four.log");
  ASSERT_EQ(four.exit_code(), 0) << four.output();
  EXPECT_NE(four.output().find("parallel: component sharded: 1 data group(s) × 4 component shards"), std::string::npos)
      << four.output();
  EXPECT_LT(max_relative_difference(dir.path / "one.json", dir.path / "four-out.json"), kShardRtol);
  EXPECT_EQ(planned_run(dir, data, dir.path / "four.json"), line_after(four.output(), "parallel: "));

  // Devices too small for even half the model: refused, naming why — no silent fallback.
  write_resources(dir.path / "tiny.json", static_cast<std::uint64_t>(fixed_state(1)));
  Process tiny = launch(2, {"--resources", (dir.path / "tiny.json").string()}, data, dir.path / "tiny-out.json",
                        dir.path / "tiny.log");
  EXPECT_NE(tiny.exit_code(), 0) << tiny.output();
  EXPECT_NE(tiny.output().find("does not fit"), std::string::npos) << tiny.output();
  EXPECT_FALSE(fs::exists(dir.path / "tiny-out.json"));
}

// `mixle plan --shard-components` plans a component-sharded run's rows in the precision asked
// for: the working set of a float64 run takes 8 bytes a value, of a float32 run 4.
TEST(ShardedFit, PlanOfAShardedRunUsesThePrecisionAskedFor) {
  TempDir dir;
  const fs::path data = make_data(dir, 2000);
  // Two devices that hold half the model's fixed state, but not all of it: two shards.
  write_resources(dir.path / "resources.json", static_cast<std::uint64_t>((fixed_state(4) + fixed_state(2)) / 2));
  for (const auto& [precision, bytes] : {std::pair<std::string, int>{"float64", 8}, {"float32", 4}}) {
    SCOPED_TRACE(precision);
    Process plan =
        run_process({kCli, "plan", "--data", data.string(), "--layout", kLayout, "--components", "4", "--precision",
                     precision, "--resources", (dir.path / "resources.json").string(), "--shard-components", "--json"},
                    {}, dir.path / ("plan-" + precision + ".log"), 60s);
    ASSERT_EQ(plan.exit_code(), 0) << plan.output();
    const auto doc = nlohmann::json::parse(plan.output());
    EXPECT_EQ(doc.at("run").at("shard_components"), 2) << doc.dump();
    EXPECT_EQ(doc.at("placement").at("dtype_bytes"), bytes) << doc.dump();
  }
}

// Two data groups × two component shards: data group g runs on the device of its first rank,
// g·2. With rank 2's device three times as fast as rank 0's, group 0 (ranks 0 and 1) takes a
// quarter of the rows — rank 0 prints its range.
TEST(ShardedFit, EachDataGroupTakesTheShareOfItsFirstRanksDevice) {
  MIXLE_SKIP_UNLESS_BUILT_WITH(MIXLE_HAVE_GLOO, "gloo");
  TempDir dir;
  const fs::path data = make_data(dir, 20000);
  std::vector<plan::DeviceSpec> devices;
  for (int r = 0; r < 4; ++r) {
    plan::DeviceSpec d;
    d.name = "cpu:" + std::to_string(r);
    d.throughput = r < 2 ? 1.0 : 3.0;
    devices.push_back(d);
  }
  std::ofstream(dir.path / "resources.json") << plan::Resources(devices).to_json();
  Process p = launch(4, {"--shard-components", "2", "--resources", (dir.path / "resources.json").string()}, data,
                     dir.path / "out.json", dir.path / "out.log");
  ASSERT_EQ(p.exit_code(), 0) << p.output();
  const std::string label = "this rank's rows [0, ";
  const auto at = p.output().find(label);
  ASSERT_NE(at, std::string::npos) << p.output();
  const double end = std::stod(p.output().substr(at + label.size()));
  EXPECT_NEAR(end, 5000.0, 128.0) << p.output();  // a quarter of 20,000, aligned to 128-row blocks
}

TEST(ShardedFit, AnImpossibleRowInOneDataGroupStopsEveryRankNamingIt) {
  MIXLE_SKIP_UNLESS_BUILT_WITH(MIXLE_HAVE_GLOO, "gloo");
  // 2 data groups × 2 shards; only data group 1's rows hold the impossible row (category 2 has
  // probability 0 in every component of the initial model, and pseudo-count 0 keeps it so).
  // Group 0 never sees it in its own gathers: the failure must still reach every rank through
  // the world's reduce, without anyone waiting for a timeout.
  TempDir dir;
  const std::size_t rows = 4000;
  std::vector<double> values(rows * 2);
  for (std::size_t i = 0; i < rows; ++i) values[2 * i] = static_cast<double>(i % 7) * 0.5, values[2 * i + 1] = i % 2;
  values[2 * 3500 + 1] = 2.0;
  const fs::path data = dir.path / "impossible.npy";
  write_matrix(data.string(), values.data(), rows, 2);
  const fs::path init = dir.path / "init.json";
  std::ofstream(init) << R"({"format":"mixle-model","version":1,"weights":[0.5,0.5],"parts":[
      {"family":"gaussian_diag","columns":[0,1],"mean":[[0],[3]],"var":[[1],[1]]},
      {"family":"categorical","columns":[1,2],"categories":3,"prob":[[0.5,0.5,0],[0.2,0.8,0]]}]})";
  const auto start = std::chrono::steady_clock::now();
  Process p = run_process({kCli,
                           "launch",
                           "--nproc",
                           "4",
                           "--",
                           kCli,
                           "fit",
                           "--data",
                           data.string(),
                           "--init",
                           init.string(),
                           "--pseudo-count",
                           "0",
                           "--threads",
                           "1",
                           "--quiet",
                           "--timeout",
                           "60",
                           "--shard-components",
                           "2",
                           "--out",
                           (dir.path / "out.json").string()},
                          {}, dir.path / "impossible.log", 120s);
  EXPECT_NE(p.exit_code(), 0) << p.output();
  EXPECT_LT(std::chrono::steady_clock::now() - start, 45s) << "the ranks waited for the 60 s timeout";
  EXPECT_NE(p.output().find("rows 3500"), std::string::npos) << p.output();
  EXPECT_FALSE(fs::exists(dir.path / "out.json"));
}

TEST(ShardedFit, ShardComponentsMustDivideTheWorld) {
  MIXLE_SKIP_UNLESS_BUILT_WITH(MIXLE_HAVE_GLOO, "gloo");
  TempDir dir;
  const fs::path data = make_data(dir, 2000);
  Process p = launch(3, {"--shard-components", "2"}, data, dir.path / "bad.json", dir.path / "bad.log");
  EXPECT_NE(p.exit_code(), 0) << p.output();
  EXPECT_NE(p.output().find("--shard-components 2 with 3 rank(s)"), std::string::npos) << p.output();
}

TEST(ShardedFit, KilledRankFailsTheOthersAndTheGlobalCheckpointResumesAtAnotherG) {
  MIXLE_SKIP_UNLESS_BUILT_WITH(MIXLE_HAVE_GLOO, "gloo");
  using Clock = std::chrono::steady_clock;
  TempDir dir;
  const fs::path data = make_data(dir, 60000);
  constexpr int kIterations = 150;
  Process ref = run_process(fit_args(data, dir.path / "ref.json", kIterations, "0"), {}, dir.path / "ref.log", 240s);
  ASSERT_EQ(ref.exit_code(), 0) << ref.output();
  // Four ranks as torchrun starts them (2 data groups × 2 shards); rank 3 is SIGKILLed once a
  // checkpoint (the gathered global model) exists.
  const fs::path ckpt = dir.path / "ckpt";
  const int port = comms::find_free_port();
  std::vector<Process> ranks;
  for (int r = 0; r < 4; ++r) {
    Env env{{"RANK", std::to_string(r)},
            {"LOCAL_RANK", std::to_string(r)},
            {"WORLD_SIZE", "4"},
            {"LOCAL_WORLD_SIZE", "4"},
            {"MASTER_ADDR", "127.0.0.1"},
            {"MASTER_PORT", std::to_string(port)},
            {"TORCHELASTIC_RUN_ID", "shard-fault-test"},
            {"TORCHELASTIC_USE_AGENT_STORE", "False"}};
    auto argv = fit_args(data, dir.path / "killed.json", kIterations, "0");
    for (const char* a : {"--shard-components", "2", "--checkpoint-dir", ckpt.c_str(), "--timeout", "10"})
      argv.push_back(a);
    ranks.push_back(Process::start(argv, env, dir.path / ("rank" + std::to_string(r) + ".log")));
  }
  const auto deadline = Clock::now() + 120s;
  while (!fs::exists(ckpt / "checkpoint.json") && Clock::now() < deadline && !ranks[0].poll())
    std::this_thread::sleep_for(5ms);
  ASSERT_TRUE(fs::exists(ckpt / "checkpoint.json")) << ranks[0].output();
  ranks[3].signal(SIGKILL);
  const auto killed_at = Clock::now();
  wait_all(ranks, killed_at + 70s);
  for (int r : {0, 1, 2}) {
    EXPECT_TRUE(ranks[r].done) << "rank " << r << " hung:\n" << ranks[r].output();
    EXPECT_NE(ranks[r].exit_code(), 0) << ranks[r].output();
  }
  EXPECT_FALSE(fs::exists(dir.path / "killed.json")) << "no model may be written by a failed run";
  const auto checkpoint = nlohmann::json::parse(read_file(ckpt / "checkpoint.json"));
  ASSERT_LT(checkpoint["iteration"].get<int>(), kIterations) << "the run finished before the kill; make it longer";
  // The checkpoint holds the global model (all 4 components), so 3 ranks re-shard it 3 ways.
  std::vector<std::string> argv{kCli, "launch", "--nproc", "3", "--"};
  for (const auto& a : fit_args(data, dir.path / "resumed.json", kIterations, "0")) argv.push_back(a);
  for (const char* a : {"--shard-components", "3", "--resume"}) argv.push_back(a);
  argv.push_back(ckpt.string());
  Process resumed = run_process(argv, {}, dir.path / "resumed.log", 240s);
  ASSERT_EQ(resumed.exit_code(), 0) << resumed.output();
  EXPECT_NE(resumed.output().find("resumed after iteration"), std::string::npos) << resumed.output();
  EXPECT_LT(max_relative_difference(dir.path / "ref.json", dir.path / "resumed.json"), 1e-7);
}

}  // namespace
}  // namespace mixle::test
