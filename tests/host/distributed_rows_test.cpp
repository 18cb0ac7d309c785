// fit_distributed(Dataset, …): every rank passes rows it holds in memory (as the Python package's
// distributed fits do). Real processes under `mixle launch` on 127.0.0.1: uneven and empty
// shares give every rank the one-process model, each rank reports its own place, rows and
// resume point, and ranks whose columns disagree fail naming the rank.
#include "common/require.hpp"
#include "host/fit_process_util.hpp"

#include <mixle/data.hpp>
#include <mixle/fit.hpp>
#include <mixle/model.hpp>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace mixle::test {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;

// As in distributed_fit_test.cpp: world sizes add the same block sums in another order.
constexpr double kWorldSizeRtol = 1e-9;
const std::string kCli = MIXLE_CLI_PATH;
const std::string kProbe = MIXLE_FIT_ROWS_PROBE_PATH;

/// Runs the probe on `nproc` ranks under `mixle launch`; returns the process.
Process launch_probe(const TempDir& dir, const fs::path& data, int nproc, const std::string& first_share,
                     const std::vector<std::string>& extra, const std::string& log) {
  std::vector<std::string> argv{kCli,          "launch",          "--nproc",  std::to_string(nproc), "--", kProbe,
                                data.string(), dir.path.string(), first_share};
  for (const auto& e : extra) argv.push_back(e);
  return run_process(argv, {}, dir.path / log, 180s);
}

nlohmann::json rank_result(const TempDir& dir, int rank) {
  return nlohmann::json::parse(read_file(dir.path / ("rank" + std::to_string(rank) + ".json")));
}

/// The one-process fit of every row with the probe's options, as the model's numbers.
std::vector<double> one_process_model(const fs::path& data, int max_iter) {
  FitOptions o;
  o.components = 3;
  o.layout = "gaussian_diag:0-3,categorical:3-4:3,poisson:4-5";
  o.seed = 11;
  o.max_iter = max_iter;
  o.tol = 0.0;
  o.threads = 1;
  o.precision = "fp64";
  return flatten(nlohmann::json::parse(model_to_json(fit(read_data(data.string()), o).model)));
}

double max_relative_difference(const std::vector<double>& a, const std::vector<double>& b) {
  EXPECT_EQ(a.size(), b.size());
  double worst = 0.0;
  for (std::size_t i = 0; i < std::min(a.size(), b.size()); ++i)
    worst = std::max(worst, std::abs(a[i] - b[i]) / std::max(std::abs(a[i]), 1e-300));
  return worst;
}

TEST(DistributedRows, UnevenAndEmptySharesGiveEveryRankTheOneProcessModel) {
  MIXLE_SKIP_UNLESS_BUILT_WITH(MIXLE_HAVE_GLOO, "gloo");
  TempDir dir;
  const fs::path data = make_mixed_records(dir, 9000);
  const std::vector<double> one = one_process_model(data, 30);
  // 3 ranks: rank 0 holds 20 % of the rows (1800), ranks 1 and 2 split the rest (3600 each).
  // Then 2 ranks with rank 0 empty: rank 1 holds everything.
  struct Case {
    int nproc;
    std::string share;
    std::vector<std::size_t> first, local;
  };
  for (const Case& c : {Case{3, "0.2", {0, 1800, 5400}, {1800, 3600, 3600}}, Case{2, "0", {0, 0}, {0, 9000}}}) {
    for (int r = 0; r < c.nproc; ++r) fs::remove(dir.path / ("rank" + std::to_string(r) + ".json"));
    Process p = launch_probe(dir, data, c.nproc, c.share, {}, "w" + std::to_string(c.nproc) + ".log");
    ASSERT_EQ(p.exit_code(), 0) << p.output();
    const std::string model0 = rank_result(dir, 0)["model"].dump();
    for (int r = 0; r < c.nproc; ++r) {
      const auto j = rank_result(dir, r);
      EXPECT_EQ(j["rank"], r);
      EXPECT_EQ(j["world_size"], c.nproc);
      EXPECT_EQ(j["comm"], "gloo");
      EXPECT_EQ(j["device"], "cpu");
      EXPECT_EQ(j["first_row"], c.first[static_cast<std::size_t>(r)]) << "rank " << r;
      EXPECT_EQ(j["local_rows"], c.local[static_cast<std::size_t>(r)]) << "rank " << r;
      EXPECT_EQ(j["resumed_from_iteration"], 0);
      EXPECT_EQ(j["iterations"], 30);
      EXPECT_EQ(j["parallel"], "data parallel");
      EXPECT_EQ(j["model"].dump(), model0) << "every rank ends with the same model";
    }
    EXPECT_LT(max_relative_difference(one, flatten(rank_result(dir, 0)["model"])), kWorldSizeRtol)
        << c.nproc << " ranks";
  }
}

// The registry's distributed backend (aliases torchrun, mpi) through the plain library calls:
// fit(rows, backend "torchrun") on each rank, and fit of the handle encoded_data(rows, backend
// "mpi") makes, give every rank the one-process model, as fit_distributed does.
TEST(DistributedRows, TheDistributedBackendFitsEachRanksRowsThroughFitAndThroughAHandle) {
  MIXLE_SKIP_UNLESS_BUILT_WITH(MIXLE_HAVE_GLOO, "gloo");
  TempDir dir;
  const fs::path data = make_mixed_records(dir, 4000);
  const std::vector<double> one = one_process_model(data, 8);
  for (const char* via : {"fit", "handle"}) {
    for (int r = 0; r < 2; ++r) fs::remove(dir.path / ("rank" + std::to_string(r) + ".json"));
    Process p = launch_probe(dir, data, 2, "0.3", {"max_iter=8", std::string("via=") + via},
                             std::string("via-") + via + ".log");
    ASSERT_EQ(p.exit_code(), 0) << p.output();
    EXPECT_EQ(rank_result(dir, 0)["model"].dump(), rank_result(dir, 1)["model"].dump()) << via;
    EXPECT_LT(max_relative_difference(one, flatten(rank_result(dir, 0)["model"])), kWorldSizeRtol) << via;
  }
}

// A rank whose launch environment contradicts its communicator fails before it reads a row: a
// host program that hands over a launch environment numbering the mpirun ranks backwards (MPI
// numbers them the other way) is refused, naming both numbers. (The gloo and nccl
// groups are formed from the launch environment itself, so there they cannot disagree.)
TEST(DistributedRows, ALaunchEnvironmentThatContradictsTheCommunicatorIsRefused) {
  MIXLE_SKIP_UNLESS_BUILT_WITH(MIXLE_HAVE_MPI, "MPI");
  TempDir dir;
  const fs::path data = make_mixed_records(dir, 2000);
  Process p = run_process({MIXLE_MPIEXEC, "--allow-run-as-root", "--oversubscribe", "--mca", "btl", "self,vader",
                           "--mca", "oob_tcp_if_include", "lo", "-np", "2", kProbe, data.string(), dir.path.string(),
                           "0.5", "swap_mpi_rank=1", "max_iter=2"},
                          {}, dir.path / "swapped.log", 120s);
  EXPECT_NE(p.exit_code(), 0) << p.output();
  // mpirun stops the job when the first rank exits, so the other may not get to print its own
  // refusal; each names both numbers.
  const bool rank0 =
      p.output().find("MPI says this is rank 0 of 2 but the launch environment says rank 1 of 2") != std::string::npos;
  const bool rank1 =
      p.output().find("MPI says this is rank 1 of 2 but the launch environment says rank 0 of 2") != std::string::npos;
  EXPECT_TRUE(rank0 || rank1) << p.output();
  EXPECT_FALSE(fs::exists(dir.path / "rank0.json"));
  EXPECT_FALSE(fs::exists(dir.path / "rank1.json"));
}

// The launch variables handed over in DistributedOptions::launch_environment, with the process
// environment stripped of them (as a Dask or Spark task shares its process): the same group forms.
TEST(DistributedRows, LaunchVariablesCanBeGivenInsteadOfTheEnvironment) {
  MIXLE_SKIP_UNLESS_BUILT_WITH(MIXLE_HAVE_GLOO, "gloo");
  TempDir dir;
  const fs::path data = make_mixed_records(dir, 3000);
  Process p = launch_probe(dir, data, 2, "0.5", {"explicit_env=1", "max_iter=5"}, "explicit.log");
  ASSERT_EQ(p.exit_code(), 0) << p.output();
  for (int r = 0; r < 2; ++r) {
    const auto j = rank_result(dir, r);
    EXPECT_EQ(j["rank"], r);
    EXPECT_EQ(j["world_size"], 2);
    EXPECT_EQ(j["comm"], "gloo");
    EXPECT_EQ(j["first_row"], r * 1500);
  }
  EXPECT_EQ(rank_result(dir, 0)["model"].dump(), rank_result(dir, 1)["model"].dump());
}

// Rank 0 with MASTER_PORT 0: its store binds a port the OS picks and on_store_port publishes it
// (here through a file) before the group forms; the others join on that port.
TEST(DistributedRows, RankZeroCanPickTheRendezvousPortAndPublishIt) {
  MIXLE_SKIP_UNLESS_BUILT_WITH(MIXLE_HAVE_GLOO, "gloo");
  TempDir dir;
  const fs::path data = make_mixed_records(dir, 3000);
  Process p = launch_probe(dir, data, 3, "0.5", {"explicit_env=1", "publish_port=1", "max_iter=5"}, "port.log");
  ASSERT_EQ(p.exit_code(), 0) << p.output();
  const int port = std::stoi(read_file(dir.path / "port"));
  EXPECT_GT(port, 0);
  EXPECT_LT(port, 65536);
  for (int r = 0; r < 3; ++r) EXPECT_EQ(rank_result(dir, r)["world_size"], 3) << "rank " << r;
  EXPECT_EQ(rank_result(dir, 0)["model"].dump(), rank_result(dir, 2)["model"].dump());
}

TEST(DistributedRows, AResumedFitReportsWhereItResumedOnEveryRank) {
  MIXLE_SKIP_UNLESS_BUILT_WITH(MIXLE_HAVE_GLOO, "gloo");
  TempDir dir;
  const fs::path data = make_mixed_records(dir, 4000);
  const fs::path ckpt = dir.path / "ckpt";
  Process first = launch_probe(dir, data, 2, "0.5", {"checkpoint=" + ckpt.string(), "max_iter=4"}, "first.log");
  ASSERT_EQ(first.exit_code(), 0) << first.output();
  // The checkpoint of iteration 4; continue it to 9 iterations.
  Process resumed = launch_probe(dir, data, 2, "0.5", {"resume=" + ckpt.string(), "max_iter=9"}, "resumed.log");
  ASSERT_EQ(resumed.exit_code(), 0) << resumed.output();
  for (int r = 0; r < 2; ++r) {
    const auto j = rank_result(dir, r);
    EXPECT_EQ(j["resumed_from_iteration"], 4) << "rank " << r;
    EXPECT_EQ(j["iterations"], 9) << "rank " << r;
    // The resumed run initialised nothing: the first run's initialisation is not counted again.
    EXPECT_EQ(j["init_seconds"], 0.0) << "rank " << r;
  }
  EXPECT_LT(max_relative_difference(one_process_model(data, 9), flatten(rank_result(dir, 1)["model"])), 1e-7);
}

TEST(DistributedRows, RanksWithDifferentColumnsFailNamingTheRank) {
  MIXLE_SKIP_UNLESS_BUILT_WITH(MIXLE_HAVE_GLOO, "gloo");
  TempDir dir;
  const fs::path data = make_mixed_records(dir, 600);
  Process p = launch_probe(dir, data, 2, "0.5", {"drop_column_on=1"}, "columns.log");
  EXPECT_NE(p.exit_code(), 0);
  // Every rank says the same, whichever fails first: each rank's width.
  EXPECT_NE(p.output().find("columns per rank: rank 0: 5, rank 1: 4"), std::string::npos) << p.output();
}

}  // namespace
}  // namespace mixle::test
