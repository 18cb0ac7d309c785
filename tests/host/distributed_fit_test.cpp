// Distributed EM with real processes on 127.0.0.1: `mixle launch` (gloo) and mpirun (mpi) give
// the single-process model at every world size; a SIGKILLed rank makes the others fail in bounded
// time naming it, leaves an intact checkpoint, and `--resume` at a different world size reaches
// the uninterrupted run's model. Every wait is bounded.
#include "common/require.hpp"
#include "host/fit_process_util.hpp"
#include "comms/socket.hpp"

#include <mixle/model.hpp>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <regex>
#include <sstream>

namespace mixle::test {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
namespace fs = std::filesystem;

// Different world sizes add the same float64 block sums in a different order; EM carries those
// last-bit differences along, so models agree to far better than this (seen: ~3e-16).
constexpr double kWorldSizeRtol = 1e-9;
// Resuming replays iterations on another world size: the same last-bit differences, over more
// iterations of a model still moving (tol 0), stay well inside this.
constexpr double kResumeRtol = 1e-7;
// How long the survivors of a killed rank may take to fail (the run's --timeout is 10 s here).
constexpr double kFailureBudgetSeconds = 70.0;

const std::string kCli = MIXLE_CLI_PATH;
const std::string kLayout = "gaussian_diag:0-3,categorical:3-4:3,poisson:4-5";

std::vector<std::string> fit_args(const fs::path& data, const fs::path& out, int max_iter, const std::string& tol) {
  return {kCli,           "fit", "--data",    data.string(), "--layout",   kLayout,
          "--components", "3",   "--seed",    "11",          "--max-iter", std::to_string(max_iter),
          "--tol",        tol,   "--threads", "1",           "--quiet",    "--out",
          out.string()};
}

TEST(DistributedFit, LaunchGlooMatchesOneProcessAtEveryWorldSize) {
  MIXLE_SKIP_UNLESS_BUILT_WITH(MIXLE_HAVE_GLOO, "gloo");
  TempDir dir;
  const fs::path data = make_mixed_records(dir, 20000);
  Process one = run_process(fit_args(data, dir.path / "w1.json", 50, "1e-6"), {}, dir.path / "w1.log", 120s);
  ASSERT_EQ(one.exit_code(), 0) << one.output();
  for (int n : {2, 3, 4}) {
    const fs::path out = dir.path / ("w" + std::to_string(n) + ".json");
    std::vector<std::string> argv{kCli, "launch", "--nproc", std::to_string(n), "--"};
    for (const auto& a : fit_args(data, out, 50, "1e-6")) argv.push_back(a);
    argv.push_back("--receipts");
    argv.push_back((dir.path / ("r" + std::to_string(n) + ".jsonl")).string());
    Process p = run_process(argv, {}, dir.path / ("w" + std::to_string(n) + ".log"), 180s);
    ASSERT_EQ(p.exit_code(), 0) << p.output();
    EXPECT_NE(p.output().find("on " + std::to_string(n) + " rank(s) (gloo"), std::string::npos) << p.output();
    EXPECT_LT(max_relative_difference(dir.path / "w1.json", out), kWorldSizeRtol) << "world size " << n;
    // One receipt per iteration, each with the data-parallel size and the all-reduce's bytes.
    std::istringstream receipts(read_file(dir.path / ("r" + std::to_string(n) + ".jsonl")));
    std::string line;
    int steps = 0;
    double receipt_seconds = 0.0;
    long long step_one_bytes = 0;
    while (std::getline(receipts, line)) {
      const auto j = nlohmann::json::parse(line);
      EXPECT_EQ(j["step"], steps);
      EXPECT_EQ(j["data_parallel_size"], n);
      // Each receipt counts its own step's bytes: the first also the initialisation's, every
      // later one the same all-reduce of the same statistics.
      const long long bytes = j["collective_bytes"].get<long long>();
      EXPECT_GT(bytes, 0);
      if (steps == 1) step_one_bytes = bytes;
      if (steps > 1) EXPECT_EQ(bytes, step_one_bytes) << "step " << steps;
      EXPECT_EQ(j["global_examples_observed"], 20000);
      // Rank 0 writes the receipts: its own share, about an equal one (shares are whole blocks).
      EXPECT_NEAR(j["local_examples"].get<double>(), 20000.0 / n, 128.0) << "rank 0's rows";
      EXPECT_EQ(j["extra"]["update.em_statistics.collective"], "all_reduce");
      EXPECT_EQ(j["extra"]["update.em_statistics.mesh_axes"], "dp_replicate");
      EXPECT_EQ(j["extra"]["update.em_statistics.contract_exact"], true);
      EXPECT_EQ(j["extra"]["update.em_statistics.exact"], false);
      EXPECT_FALSE(j["extra"].contains("shard_components")) << "a data-parallel fit has no component shards";
      receipt_seconds += j["extra"]["collective_seconds"].get<double>();
      ++steps;
    }
    EXPECT_GT(steps, 1);
    // Each receipt counts its own step's collective time (the first also the initialisation's):
    // together no more than the fit's total, which rank 0 prints to the microsecond.
    std::smatch total;
    const std::string output = p.output();
    ASSERT_TRUE(std::regex_search(output, total, std::regex("collective bytes in ([0-9.]+) s"))) << output;
    EXPECT_LE(receipt_seconds, std::stod(total[1]) + 1e-6);
  }
}

// `--init kmeans` runs Lloyd's iterations over every rank's rows (the centres' sums reduced
// across ranks): two ranks start EM from the one-process initial model, up to the order of the
// float64 sums.
// `--timeout` bounds the rendezvous: rank 0 of a world of two whose peer never starts fails after
// the time it was given (0.4 s, named as 400 ms), not the default minute.
TEST(DistributedFit, TheTimeoutGivenBoundsTheWaitForAMissingPeer) {
  MIXLE_SKIP_UNLESS_BUILT_WITH(MIXLE_HAVE_GLOO, "gloo");
  TempDir dir;
  const fs::path data = make_mixed_records(dir, 200);
  const Env env{{"RANK", "0"},
                {"LOCAL_RANK", "0"},
                {"WORLD_SIZE", "2"},
                {"LOCAL_WORLD_SIZE", "2"},
                {"MASTER_ADDR", "127.0.0.1"},
                {"MASTER_PORT", std::to_string(comms::find_free_port())},
                {"TORCHELASTIC_USE_AGENT_STORE", "False"}};
  auto argv = fit_args(data, dir.path / "alone.json", 5, "0");
  argv.insert(argv.end(), {"--comm", "gloo", "--timeout", "0.4"});
  const auto started = Clock::now();
  Process alone = run_process(argv, env, dir.path / "alone.log", 40s);
  EXPECT_NE(alone.exit_code(), 0);
  EXPECT_LT(std::chrono::duration<double>(Clock::now() - started).count(), 30.0) << alone.output();
  EXPECT_NE(alone.output().find("400 ms"), std::string::npos) << alone.output();
  EXPECT_FALSE(fs::exists(dir.path / "alone.json"));
}

TEST(DistributedFit, KmeansOverEveryRanksRowsMatchesOneProcess) {
  MIXLE_SKIP_UNLESS_BUILT_WITH(MIXLE_HAVE_GLOO, "gloo");
  TempDir dir;
  const fs::path data = make_mixed_records(dir, 30000);  // more rows than k-means++'s sample
  auto args = [&](const fs::path& out) {
    std::vector<std::string> a = fit_args(data, out, 3, "0");
    a.insert(a.end(), {"--init", "kmeans"});
    return a;
  };
  Process one = run_process(args(dir.path / "one.json"), {}, dir.path / "one.log", 120s);
  ASSERT_EQ(one.exit_code(), 0) << one.output();
  std::vector<std::string> argv{kCli, "launch", "--nproc", "2", "--"};
  for (const auto& a : args(dir.path / "two.json")) argv.push_back(a);
  Process two = run_process(argv, {}, dir.path / "two.log", 180s);
  ASSERT_EQ(two.exit_code(), 0) << two.output();
  EXPECT_LT(max_relative_difference(dir.path / "one.json", dir.path / "two.json"), kWorldSizeRtol);
  // And it is not k-means++'s start: Lloyd's steps on all rows moved the centres.
  std::vector<std::string> pp = fit_args(data, dir.path / "pp.json", 3, "0");
  Process plus = run_process(pp, {}, dir.path / "pp.log", 120s);
  ASSERT_EQ(plus.exit_code(), 0) << plus.output();
  EXPECT_GT(max_relative_difference(dir.path / "one.json", dir.path / "pp.json"), 1e-9);
}

// Under a launcher `--backend component_parallel` threads components inside each rank's share
// (it used to make every rank fit the whole file): the model is the two-rank local fit's, bit
// for bit (component threads change no arithmetic), and the run says how it ran. A backend
// that holds every row in one process is refused there, naming what to use instead.
TEST(DistributedFit, ComponentThreadsRunInsideEachRanksShare) {
  MIXLE_SKIP_UNLESS_BUILT_WITH(MIXLE_HAVE_GLOO, "gloo");
  TempDir dir;
  const fs::path data = make_mixed_records(dir, 6000);
  auto launched = [&](const std::string& name, const std::vector<std::string>& extra) {
    std::vector<std::string> argv{kCli, "launch", "--nproc", "2", "--"};
    for (const auto& a : fit_args(data, dir.path / (name + ".json"), 8, "0")) argv.push_back(a);
    argv.insert(argv.end(), extra.begin(), extra.end());
    return run_process(argv, {}, dir.path / (name + ".log"), 120s);
  };
  Process plain = launched("plain", {});
  ASSERT_EQ(plain.exit_code(), 0) << plain.output();
  Process threads = launched("threads", {"--backend", "component_parallel", "--workers", "3"});
  ASSERT_EQ(threads.exit_code(), 0) << threads.output();
  EXPECT_NE(threads.output().find("on 2 rank(s) (gloo"), std::string::npos) << threads.output();
  // The same row split as the plain run: rank 0 prints its share.
  std::smatch rows_plain, rows_threads;
  const std::string plain_output = plain.output(), threads_output = threads.output();
  const std::regex share("this rank's rows \\[0, [0-9]+\\)");
  ASSERT_TRUE(std::regex_search(plain_output, rows_plain, share)) << plain_output;
  ASSERT_TRUE(std::regex_search(threads_output, rows_threads, share)) << threads_output;
  EXPECT_EQ(rows_threads.str(), rows_plain.str());
  EXPECT_NE(threads.output().find("component threads in each rank (3 workers)"), std::string::npos) << threads.output();
  EXPECT_EQ(read_file(dir.path / "threads.json"), read_file(dir.path / "plain.json"));
  Process sharded = launched("sharded", {"--backend", "component_sharded"});
  EXPECT_EQ(sharded.exit_code(), 2) << sharded.output();
  EXPECT_NE(sharded.output().find("--shard-components G"), std::string::npos) << sharded.output();
  Process gpu = launched("gpu", {"--backend", "component_parallel", "--device", "cuda"});
  EXPECT_EQ(gpu.exit_code(), 1) << gpu.output();
  EXPECT_NE(gpu.output().find("threads components on the CPU"), std::string::npos) << gpu.output();
  // One launched rank, one report of its error (this refusal comes before the fit starts, so it
  // is main's report; a rank failing inside the fit prints its own and main must not repeat it).
  std::vector<std::string> one{kCli, "launch", "--nproc", "1", "--"};
  for (const auto& a : fit_args(data, dir.path / "one.json", 8, "0")) one.push_back(a);
  for (const char* a : {"--backend", "component_parallel", "--device", "cuda"}) one.push_back(a);
  Process alone = run_process(one, {}, dir.path / "one.log", 120s);
  EXPECT_EQ(alone.exit_code(), 1) << alone.output();
  std::size_t printed = 0;
  for (std::size_t at = 0; (at = alone.output().find("threads components on the CPU", at)) != std::string::npos; ++at)
    ++printed;
  EXPECT_EQ(printed, 1u) << alone.output();
}

TEST(DistributedFit, CalibratedThroughputSplitsRows) {
  MIXLE_SKIP_UNLESS_BUILT_WITH(MIXLE_HAVE_GLOO, "gloo");
  TempDir dir;
  const fs::path data = make_mixed_records(dir, 12800);
  // Two ranks whose devices were calibrated at 1000 and 3000 rows/s: rank 0 gets a quarter of
  // the rows (rounded to the 128-row blocks: 3200 is a multiple already).
  std::ofstream(dir.path / "resources.json") << R"({"devices":[
    {"name":"rank:0","kind":"cpu","throughput":1000.0},{"name":"rank:1","kind":"cpu","throughput":3000.0}]})";
  std::vector<std::string> argv{kCli, "launch", "--nproc", "2", "--"};
  for (const auto& a : fit_args(data, dir.path / "out.json", 5, "0")) argv.push_back(a);
  argv.push_back("--resources");
  argv.push_back((dir.path / "resources.json").string());
  Process p = run_process(argv, {}, dir.path / "fit.log", 120s);
  ASSERT_EQ(p.exit_code(), 0) << p.output();
  EXPECT_NE(p.output().find("this rank's rows [0, 3200)"), std::string::npos) << p.output();
}

// The row split is plan()'s, with the model's bytes, whatever the file's order: a device plan()
// cuts into several pieces (its share does not fit its memory at once) keeps its whole share
// (the pieces' sum, as `mixle plan` prints them), devices that state a global_rank are matched
// to ranks by it, and a file that states ranks for some devices only is refused by name.
TEST(DistributedFit, RowSplitIsThePlansWithMemoryCutDevicesAndRanksByGlobalRank) {
  MIXLE_SKIP_UNLESS_BUILT_WITH(MIXLE_HAVE_GLOO, "gloo");
  TempDir dir;
  const fs::path data = make_mixed_records(dir, 12800);
  // Listed rank 1 first; rank 0's device has room for a few hundred rows at a time.
  std::ofstream(dir.path / "resources.json") << R"({"devices":[
    {"name":"big","kind":"cpu","throughput":3000.0,"global_rank":1},
    {"name":"small","kind":"cpu","throughput":1000.0,"global_rank":0,"memory_bytes":40000}]})";
  Process planned = run_process({kCli, "plan", "--data", data.string(), "--layout", kLayout, "--components", "3",
                                 "--resources", (dir.path / "resources.json").string(), "--json"},
                                {}, dir.path / "plan.log", 60s);
  ASSERT_EQ(planned.exit_code(), 0) << planned.output();
  const auto placement = nlohmann::json::parse(read_file(dir.path / "plan.log")).at("placement");
  std::size_t small_rows = 0, small_pieces = 0;
  for (const auto& shard : placement.at("shards"))
    if (shard.at("device") == "small")
      small_rows += shard.at("stop").get<std::size_t>() - shard.at("start").get<std::size_t>(), ++small_pieces;
  ASSERT_GT(small_pieces, 1u) << "the test needs plan() to cut the small device";
  ASSERT_EQ(small_rows, 3200u);
  std::vector<std::string> argv{kCli, "launch", "--nproc", "2", "--"};
  for (const auto& a : fit_args(data, dir.path / "out.json", 3, "0")) argv.push_back(a);
  argv.push_back("--resources");
  argv.push_back((dir.path / "resources.json").string());
  Process p = run_process(argv, {}, dir.path / "fit.log", 120s);
  ASSERT_EQ(p.exit_code(), 0) << p.output();
  EXPECT_NE(p.output().find("this rank's rows [0, " + std::to_string(small_rows) + ")"), std::string::npos)
      << p.output();
  std::ofstream(dir.path / "partial.json") << R"({"devices":[
    {"name":"a","kind":"cpu","throughput":1.0,"global_rank":1},{"name":"b","kind":"cpu","throughput":1.0}]})";
  argv.back() = (dir.path / "partial.json").string();
  Process partial = run_process(argv, {}, dir.path / "partial.log", 120s);
  EXPECT_EQ(partial.exit_code(), 1) << partial.output();
  EXPECT_NE(partial.output().find("1 of 2 devices state a global_rank"), std::string::npos) << partial.output();
  // Two devices claiming rank 0 (and none rank 1) are refused, naming the second.
  std::ofstream(dir.path / "twice.json") << R"({"devices":[
    {"name":"a","kind":"cpu","throughput":1.0,"global_rank":0},{"name":"b","kind":"cpu","throughput":1.0,"global_rank":0}]})";
  argv.back() = (dir.path / "twice.json").string();
  Process twice = run_process(argv, {}, dir.path / "twice.log", 120s);
  EXPECT_EQ(twice.exit_code(), 1) << twice.output();
  EXPECT_NE(twice.output().find("device 'b' has global_rank 0; accepted: each of 0 … 1 exactly once"),
            std::string::npos)
      << twice.output();
}

TEST(DistributedFit, MpirunMatchesOneProcess) {
  MIXLE_SKIP_UNLESS_BUILT_WITH(MIXLE_HAVE_MPI, "MPI");
  TempDir dir;
  const fs::path data = make_mixed_records(dir, 20000);
  Process one = run_process(fit_args(data, dir.path / "w1.json", 50, "1e-6"), {}, dir.path / "w1.log", 120s);
  ASSERT_EQ(one.exit_code(), 0) << one.output();
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
  for (const auto& a : fit_args(data, dir.path / "m4.json", 50, "1e-6")) argv.push_back(a);
  Process p = run_process(argv, {}, dir.path / "m4.log", 180s);
  ASSERT_EQ(p.exit_code(), 0) << p.output();
  EXPECT_NE(p.output().find("on 4 rank(s) (mpi"), std::string::npos) << p.output();
  EXPECT_LT(max_relative_difference(dir.path / "w1.json", dir.path / "m4.json"), kWorldSizeRtol);
}

// The interrupted-fit tests: 120,000 rows and kIterations iterations (tol 0: exactly that many),
// long enough for a rank to be killed mid-fit.
constexpr int kIterations = 200;

/// The uninterrupted reference fit, as one process, into `out`.
bool fit_uninterrupted(const fs::path& data, const fs::path& out) {
  Process ref = run_process(fit_args(data, out, kIterations, "0"), {}, out.string() + ".log", 240s);
  EXPECT_EQ(ref.exit_code(), 0) << ref.output();
  return ref.exit_code() == 0;
}

TEST(DistributedFit, KilledRankFailsTheOthersAndResumeAtAnotherWorldSizeFinishes) {
  MIXLE_SKIP_UNLESS_BUILT_WITH(MIXLE_HAVE_GLOO, "gloo");
  TempDir dir;
  const fs::path data = make_mixed_records(dir, 120000);
  ASSERT_TRUE(fit_uninterrupted(data, dir.path / "ref.json"));

  // Three ranks as torchrun starts them; rank 1 is SIGKILLed once a checkpoint exists.
  const fs::path ckpt = dir.path / "ckpt";
  const int port = comms::find_free_port();
  std::vector<Process> ranks;
  for (int r = 0; r < 3; ++r) {
    Env env{{"RANK", std::to_string(r)},
            {"LOCAL_RANK", std::to_string(r)},
            {"WORLD_SIZE", "3"},
            {"LOCAL_WORLD_SIZE", "3"},
            {"MASTER_ADDR", "127.0.0.1"},
            {"MASTER_PORT", std::to_string(port)},
            {"TORCHELASTIC_RUN_ID", "fit-fault-test"},
            {"TORCHELASTIC_USE_AGENT_STORE", "False"},
            {"TORCHELASTIC_ERROR_FILE", (dir.path / ("error" + std::to_string(r) + ".json")).string()}};
    auto argv = fit_args(data, dir.path / "killed.json", kIterations, "0");
    for (const char* a : {"--checkpoint-dir", "--timeout"})
      argv.push_back(a), argv.push_back(a[2] == 'c' ? ckpt.string() : "10");
    ranks.push_back(Process::start(argv, env, dir.path / ("rank" + std::to_string(r) + ".log")));
  }
  const auto deadline = Clock::now() + 120s;
  while (!fs::exists(ckpt / "checkpoint.json") && Clock::now() < deadline && !ranks[0].poll())
    std::this_thread::sleep_for(5ms);
  ASSERT_TRUE(fs::exists(ckpt / "checkpoint.json")) << ranks[0].output();
  ranks[1].signal(SIGKILL);
  const auto killed_at = Clock::now();
  wait_all(ranks, killed_at + std::chrono::seconds(static_cast<int>(kFailureBudgetSeconds)));
  for (int r : {0, 2}) {
    EXPECT_TRUE(ranks[r].done) << "rank " << r << " hung:\n" << ranks[r].output();
    EXPECT_NE(ranks[r].exit_code(), 0) << ranks[r].output();
    EXPECT_LT(std::chrono::duration<double>(ranks[r].ended - killed_at).count(), kFailureBudgetSeconds);
    EXPECT_NE(ranks[r].output().find("rank 1"), std::string::npos) << "rank " << r << " does not name rank 1:\n"
                                                                   << ranks[r].output();
  }
  EXPECT_FALSE(fs::exists(dir.path / "killed.json")) << "no model may be written by a failed run";
  // The checkpoint is whole (atomic writes) and names an iteration short of the end.
  const auto checkpoint = nlohmann::json::parse(read_file(ckpt / "checkpoint.json"));
  const int done = checkpoint["iteration"].get<int>();
  EXPECT_EQ(checkpoint["world_size"].get<int>(), 3) << "the world that wrote it";
  ASSERT_GE(done, 1);
  ASSERT_LT(done, kIterations) << "the run finished before the kill; make it longer";

  // Resume on two ranks.
  std::vector<std::string> argv{kCli, "launch", "--nproc", "2", "--"};
  for (const auto& a : fit_args(data, dir.path / "resumed.json", kIterations, "0")) argv.push_back(a);
  argv.push_back("--resume");
  argv.push_back(ckpt.string());
  Process resumed = run_process(argv, {}, dir.path / "resumed.log", 240s);
  ASSERT_EQ(resumed.exit_code(), 0) << resumed.output();
  EXPECT_NE(resumed.output().find("resumed after iteration " + std::to_string(done)), std::string::npos)
      << resumed.output();
  EXPECT_LT(max_relative_difference(dir.path / "ref.json", dir.path / "resumed.json"), kResumeRtol);
}

// Elastic: under `mixle launch --max-restarts 1` a rank SIGKILLed mid-fit fails the group, the
// launcher starts it again with TORCHELASTIC_RESTART_COUNT=1, and every rank of the new group
// resumes from --checkpoint-dir by itself — finishing with the uninterrupted fit's model.
TEST(DistributedFit, AnElasticRestartResumesFromTheCheckpointAndFinishes) {
  MIXLE_SKIP_UNLESS_BUILT_WITH(MIXLE_HAVE_GLOO, "gloo");
  TempDir dir;
  const fs::path data = make_mixed_records(dir, 120000);
  ASSERT_TRUE(fit_uninterrupted(data, dir.path / "ref.json"));

  const fs::path ckpt = dir.path / "ckpt";
  // Rank 1 of the first start runs the fit in the background and SIGKILLs it once a checkpoint
  // exists (at most 60 s of waiting); every other start runs the fit as it is.
  const std::string script =
      "if [ \"$TORCHELASTIC_RESTART_COUNT\" = 0 ] && [ \"$RANK\" = 1 ]; then \"$@\" & pid=$!; i=0; "
      "while [ ! -e '" +
      (ckpt / "checkpoint.json").string() +
      "' ] && [ $i -lt 1200 ]; do sleep 0.05; i=$((i+1)); done; kill -9 $pid; wait $pid; exit 137; fi; exec \"$@\"";
  std::vector<std::string> argv{kCli, "launch", "--nproc", "2", "--max-restarts", "1", "--", "sh", "-c", script, "sh"};
  for (const auto& a : fit_args(data, dir.path / "elastic.json", kIterations, "0")) argv.push_back(a);
  for (const char* a : {"--checkpoint-dir", "--timeout"})
    argv.push_back(a), argv.push_back(a[2] == 'c' ? ckpt.string() : "10");
  Process elastic = run_process(argv, {}, dir.path / "elastic.log", 300s);
  const std::string out = elastic.output();
  ASSERT_EQ(elastic.exit_code(), 0) << out;
  EXPECT_NE(out.find("rank 1"), std::string::npos) << out;
  EXPECT_NE(out.find("restarting the group (restart 1 of 1"), std::string::npos) << out;
  const std::regex resumed("resumed after iteration ([0-9]+)");
  std::smatch m;
  ASSERT_TRUE(std::regex_search(out, m, resumed)) << "the restarted group did not resume:\n" << out;
  EXPECT_LT(std::stoi(m[1]), kIterations) << "the first start finished before the kill; make it longer";
  EXPECT_LT(max_relative_difference(dir.path / "ref.json", dir.path / "elastic.json"), kResumeRtol);
}

}  // namespace
}  // namespace mixle::test
