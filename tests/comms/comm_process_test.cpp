// Real-process tests of the gloo and mpi communicators on 127.0.0.1: the probe program
// (tests/comms/probe/main.cpp) runs as every rank, under `mixle launch`, mpirun, or as processes
// this test starts itself with torchrun's variables (so that no launcher masks how the surviving
// ranks react to a dead one). Every wait is bounded, so a hang fails the test instead of the suite.
#include "common/require.hpp"
#include "comms/process_util.hpp"
#include "comms/socket.hpp"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace mixle::test {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

// A dead or hung peer must be reported well within this (the collective timeout is 2–3 s here).
constexpr double kFailureDetectionBudgetSeconds = 15.0;

bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

// Starts `n` probe ranks as torchrun would, with per-rank extra variables, and waits for all.
std::vector<Process> run_ranks(int n, const std::vector<std::string>& probe_args, const TempDir& dir,
                               const std::function<void(int, Env&)>& per_rank = {}, int allowed_to_hang = -1) {
  const int port = comms::find_free_port();
  std::vector<Process> ranks;
  for (int r = 0; r < n; ++r) {
    Env env{{"RANK", std::to_string(r)},          {"LOCAL_RANK", std::to_string(r)},
            {"WORLD_SIZE", std::to_string(n)},    {"LOCAL_WORLD_SIZE", std::to_string(n)},
            {"MASTER_ADDR", "127.0.0.1"},         {"MASTER_PORT", std::to_string(port)},
            {"TORCHELASTIC_RUN_ID", "proc-test"}, {"TORCHELASTIC_USE_AGENT_STORE", "False"}};
    if (per_rank) per_rank(r, env);
    std::vector<std::string> argv{MIXLE_PROBE_PATH};
    argv.insert(argv.end(), probe_args.begin(), probe_args.end());
    ranks.push_back(Process::start(argv, env, dir.path / ("rank" + std::to_string(r) + ".log")));
  }
  wait_all(ranks, Clock::now() + 40s, allowed_to_hang);
  return ranks;
}

class GlooProcesses : public ::testing::TestWithParam<int> {
 protected:
  void SetUp() override { MIXLE_SKIP_UNLESS_BUILT_WITH(MIXLE_HAVE_GLOO, "gloo"); }
};

TEST_P(GlooProcesses, CollectivesUnderMixleLaunch) {
  const int n = GetParam();
  TempDir dir;
  Process p = run_process({MIXLE_CLI_PATH, "launch", "--nproc", std::to_string(n), "--", MIXLE_PROBE_PATH, "--comm",
                           "gloo", "--timeout-ms", "20000"},
                          {}, dir.path / "launch.log", 40s);
  std::string out = p.output();
  ASSERT_EQ(p.exit_code(), 0) << out;
  for (int r = 0; r < n; ++r)
    EXPECT_TRUE(contains(out, "probe: rank " + std::to_string(r) + "/" + std::to_string(n) + " gloo ok")) << out;
}
INSTANTIATE_TEST_SUITE_P(WorldSizes, GlooProcesses, ::testing::Values(2, 3, 4));

// Sub-communicators of a world of 4: pairs r/2, parities r%2, reversed and equal keys, a nested
// split; the probe checks membership, ranks and exact collectives in each (probe/main.cpp).
TEST(GlooSplit, SubCommunicatorsUnderMixleLaunch) {
  MIXLE_SKIP_UNLESS_BUILT_WITH(MIXLE_HAVE_GLOO, "gloo");
  TempDir dir;
  Process p = run_process({MIXLE_CLI_PATH, "launch", "--nproc", "4", "--", MIXLE_PROBE_PATH, "--comm", "gloo",
                           "--scenario", "split", "--timeout-ms", "20000"},
                          {}, dir.path / "launch.log", 60s);
  std::string out = p.output();
  ASSERT_EQ(p.exit_code(), 0) << out;
  for (int r = 0; r < 4; ++r)
    EXPECT_TRUE(contains(out, "probe: rank " + std::to_string(r) + "/4 gloo split ok")) << out;
}

class GlooFaults : public ::testing::Test {
 protected:
  void SetUp() override { MIXLE_SKIP_UNLESS_BUILT_WITH(MIXLE_HAVE_GLOO, "gloo"); }
  // Checks that every rank but `victim` failed with exit 3, in time, naming `expected`.
  void expect_survivors_report(const std::vector<Process>& ranks, int victim, const std::string& expected) {
    for (std::size_t r = 0; r < ranks.size(); ++r) {
      if (int(r) == victim) continue;
      std::string out = ranks[r].output();
      EXPECT_TRUE(ranks[r].done) << "rank " << r << " hung:\n" << out;
      EXPECT_EQ(ranks[r].exit_code(), 3) << "rank " << r << " (signal " << ranks[r].term_signal() << "):\n" << out;
      EXPECT_LT(ranks[r].seconds(), kFailureDetectionBudgetSeconds) << "rank " << r;
      EXPECT_TRUE(contains(out, expected)) << "rank " << r << " does not say '" << expected << "':\n" << out;
    }
  }
};

TEST_F(GlooFaults, KilledRankIsNamedByTheOthers) {
  TempDir dir;
  auto ranks = run_ranks(
      3, {"--comm", "gloo", "--scenario", "die", "--victim", "1", "--timeout-ms", "3000"}, dir, [&](int r, Env& env) {
        env["TORCHELASTIC_ERROR_FILE"] = (dir.path / ("error" + std::to_string(r) + ".json")).string();
      });
  EXPECT_EQ(ranks[1].term_signal(), SIGKILL);
  expect_survivors_report(ranks, 1, "lost rank 1");
  // Survivors leave torchelastic's error file (the victim, killed, cannot).
  auto j = nlohmann::json::parse(read_file(dir.path / "error0.json"));
  EXPECT_TRUE(contains(j["message"]["message"].get<std::string>(), "lost rank 1"));
  EXPECT_EQ(j["message"]["extraInfo"]["py_callstack"], "(C++ engine, no Python stack)");
  EXPECT_FALSE(std::filesystem::exists(dir.path / "error1.json"));
}

TEST_F(GlooFaults, KilledRankZeroIsNamedByTheOthers) {
  TempDir dir;
  auto ranks = run_ranks(3, {"--comm", "gloo", "--scenario", "die", "--victim", "0", "--timeout-ms", "3000"}, dir);
  // The survivors cannot reach rank 0's store; they say so, without blaming another rank.
  expect_survivors_report(ranks, 0, "rank 0 is gone (its rendezvous store at");
}

TEST_F(GlooFaults, RankDyingByExceptionIsNamed) {
  TempDir dir;
  auto ranks = run_ranks(3, {"--comm", "gloo", "--scenario", "raise", "--victim", "2", "--timeout-ms", "3000"}, dir);
  EXPECT_EQ(ranks[2].exit_code(), 3);
  expect_survivors_report(ranks, 2, "lost rank 2");
}

TEST_F(GlooFaults, HungRankTimesOutAndIsNamed) {
  TempDir dir;
  // The hung victim is killed once the others have ended; they must not wait for it.
  auto ranks = run_ranks(3, {"--comm", "gloo", "--scenario", "hang", "--victim", "1", "--timeout-ms", "2000"}, dir, {},
                         /*allowed_to_hang=*/1);
  EXPECT_FALSE(ranks[1].done);
  expect_survivors_report(ranks, 1, "rank 1 did not report this failure");
  // The survivors' next collective is refused at once, not waited for again.
  for (int r : {0, 2})
    EXPECT_TRUE(contains(ranks[static_cast<std::size_t>(r)].output(),
                         "the next all-reduce: gloo communicator of rank " + std::to_string(r) +
                             " is unusable after an earlier failure"))
        << ranks[static_cast<std::size_t>(r)].output();
}

TEST_F(GlooFaults, KilledRankIsNamedInWorldNumberingBySubCommunicators) {
  TempDir dir;
  // Victim 3 is rank 1 of the pair {2, 3}: its partner must name it by world rank (3), not pair
  // rank (1). Ranks 0 and 1 wait in a world barrier the victim never reaches.
  auto ranks =
      run_ranks(4, {"--comm", "gloo", "--scenario", "split-die", "--victim", "3", "--timeout-ms", "3000"}, dir);
  EXPECT_EQ(ranks[3].term_signal(), SIGKILL);
  expect_survivors_report(ranks, 3, "lost ");
  const std::string partner = ranks[2].output();
  EXPECT_TRUE(contains(partner, "on rank 0 of 2 (world rank 2)")) << partner;
  EXPECT_TRUE(contains(partner, "lost world rank 3")) << partner;
  for (int r : {0, 1})
    EXPECT_TRUE(contains(ranks[std::size_t(r)].output(), "lost rank 3")) << ranks[std::size_t(r)].output();
}

TEST_F(GlooFaults, HungRankIsNamedInWorldNumberingBySubCommunicators) {
  TempDir dir;
  auto ranks = run_ranks(4, {"--comm", "gloo", "--scenario", "split-hang", "--victim", "3", "--timeout-ms", "2000"},
                         dir, {}, /*allowed_to_hang=*/3);
  EXPECT_FALSE(ranks[3].done);
  expect_survivors_report(ranks, 3, "did not report this failure");
  const std::string partner = ranks[2].output();
  EXPECT_TRUE(contains(partner, "on rank 0 of 2 (world rank 2)")) << partner;
  EXPECT_TRUE(contains(partner, "world rank 3 did not report this failure")) << partner;
}

TEST_F(GlooFaults, RankWithWrongTokenIsRefused) {
  TempDir dir;
  auto ranks = run_ranks(2, {"--comm", "gloo", "--timeout-ms", "2000"}, dir, [](int r, Env& env) {
    if (r == 1) env["MIXLE_RUN_TOKEN"] = "some-other-job";
  });
  EXPECT_EQ(ranks[1].exit_code(), 3);
  EXPECT_TRUE(contains(ranks[1].output(), "wrong run token")) << ranks[1].output();
  EXPECT_EQ(ranks[0].exit_code(), 3);  // its peer never arrives: a bounded rendezvous failure
  EXPECT_LT(ranks[0].seconds(), kFailureDetectionBudgetSeconds);
}

TEST_F(GlooFaults, AgentOwnedMasterPortMovesTheStoreUpOne) {
  // Stand in for the torchrun agent: something already listens on MASTER_PORT, and
  // TORCHELASTIC_USE_AGENT_STORE=True tells rank 0 to host our store on MASTER_PORT+1.
  comms::FileDescriptor agent;
  int port = 0;
  for (int attempt = 0; attempt < 20 && !agent.valid(); ++attempt) {
    port = comms::find_free_port();
    if (port >= 65535) continue;
    try {
      comms::FileDescriptor probe_next = comms::listen_on("127.0.0.1", port + 1);  // is +1 free too?
      probe_next.reset();
      agent = comms::listen_on("127.0.0.1", port);
    } catch (const std::exception&) {}
  }
  ASSERT_TRUE(agent.valid());
  TempDir dir;
  auto ranks = run_ranks(2, {"--comm", "gloo", "--timeout-ms", "10000"}, dir, [&](int, Env& env) {
    env["MASTER_PORT"] = std::to_string(port);
    env["TORCHELASTIC_USE_AGENT_STORE"] = "True";
  });
  for (int r = 0; r < 2; ++r) EXPECT_EQ(ranks[std::size_t(r)].exit_code(), 0) << ranks[std::size_t(r)].output();
}

// ---- MPI ---------------------------------------------------------------------------------------

std::vector<std::string> mpirun(int n, std::vector<std::string> probe_args) {
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
                                std::to_string(n),
                                MIXLE_PROBE_PATH};
  argv.insert(argv.end(), probe_args.begin(), probe_args.end());
  return argv;
}

class MpiProcesses : public ::testing::TestWithParam<int> {
 protected:
  void SetUp() override { MIXLE_SKIP_UNLESS_BUILT_WITH(MIXLE_HAVE_MPI, "MPI"); }
};

TEST_P(MpiProcesses, CollectivesUnderMpirunGiveIdenticalBytes) {
  const int n = GetParam();
  TempDir dir;
  Process p = run_process(mpirun(n, {"--comm", "mpi", "--timeout-ms", "20000"}), {}, dir.path / "mpi.log", 50s);
  std::string out = p.output();
  ASSERT_EQ(p.exit_code(), 0) << out;
  for (int r = 0; r < n; ++r)
    EXPECT_TRUE(contains(out, "probe: rank " + std::to_string(r) + "/" + std::to_string(n) + " mpi ok")) << out;
}
INSTANTIATE_TEST_SUITE_P(WorldSizes, MpiProcesses, ::testing::Values(1, 2, 4));

// A reduction larger than one MPI call's count is split into chunks; MIXLE_MPI_MAX_CHUNK shrinks
// the chunk so that the probe's 1000-, 4099- and 2^20-element reductions and its broadcasts cross
// several chunk boundaries, with a partial last chunk, and must still give every rank the right bytes.
TEST(MpiChunks, CollectivesSplitIntoManyCallsGiveTheSameBytes) {
  MIXLE_SKIP_UNLESS_BUILT_WITH(MIXLE_HAVE_MPI, "MPI");
  TempDir dir;
  std::vector<std::string> argv = mpirun(3, {"--comm", "mpi", "--timeout-ms", "20000"});
  argv.insert(argv.begin() + 1, {"-x", "MIXLE_MPI_MAX_CHUNK"});
  Process p = run_process(argv, {{"MIXLE_MPI_MAX_CHUNK", "333"}}, dir.path / "mpi.log", 60s);
  std::string out = p.output();
  ASSERT_EQ(p.exit_code(), 0) << out;
  for (int r = 0; r < 3; ++r) EXPECT_TRUE(contains(out, "probe: rank " + std::to_string(r) + "/3 mpi ok")) << out;
}

// An application that already made a communicator (so MPI is initialised) makes another: it joins
// the running MPI instead of initialising it twice.
TEST(MpiInit, ASecondCommunicatorJoinsTheRunningMpi) {
  MIXLE_SKIP_UNLESS_BUILT_WITH(MIXLE_HAVE_MPI, "MPI");
  TempDir dir;
  Process p = run_process(mpirun(2, {"--comm", "mpi", "--timeout-ms", "20000", "--scenario", "second"}), {},
                          dir.path / "mpi.log", 50s);
  std::string out = p.output();
  ASSERT_EQ(p.exit_code(), 0) << out;
  for (int r = 0; r < 2; ++r)
    EXPECT_TRUE(contains(out, "probe: rank " + std::to_string(r) + "/2 mpi second ok")) << out;
}

TEST(MpiChunks, AMalformedChunkSizeIsNamed) {
  MIXLE_SKIP_UNLESS_BUILT_WITH(MIXLE_HAVE_MPI, "MPI");
  TempDir dir;
  std::vector<std::string> argv = mpirun(1, {"--comm", "mpi", "--timeout-ms", "20000"});
  argv.insert(argv.begin() + 1, {"-x", "MIXLE_MPI_MAX_CHUNK"});
  // 0, past 2^30, not a number; and a negative number strtoull would wrap around to 1.
  for (const char* bad : {"0", "1073741825", "12x", "-18446744073709551615"}) {
    Process p = run_process(argv, {{"MIXLE_MPI_MAX_CHUNK", bad}}, dir.path / "mpi.log", 40s);
    EXPECT_NE(p.exit_code(), 0) << bad;
    EXPECT_TRUE(contains(p.output(),
                         std::string("MIXLE_MPI_MAX_CHUNK='") + bad + "': expected an integer from 1 to 1073741824"))
        << p.output();
  }
  // Both ends of the range are taken (1: every element its own call).
  for (const char* good : {"1", "1073741824"}) {
    Process p = run_process(argv, {{"MIXLE_MPI_MAX_CHUNK", good}}, dir.path / "mpi.log", 40s);
    EXPECT_EQ(p.exit_code(), 0) << good << "\n" << p.output();
  }
}

TEST(MpiSplit, SubCommunicatorsUnderMpirun) {
  MIXLE_SKIP_UNLESS_BUILT_WITH(MIXLE_HAVE_MPI, "MPI");
  TempDir dir;
  Process p = run_process(mpirun(4, {"--comm", "mpi", "--scenario", "split", "--timeout-ms", "20000"}), {},
                          dir.path / "mpi.log", 60s);
  std::string out = p.output();
  ASSERT_EQ(p.exit_code(), 0) << out;
  for (int r = 0; r < 4; ++r) EXPECT_TRUE(contains(out, "probe: rank " + std::to_string(r) + "/4 mpi split ok")) << out;
}

class MpiFaults : public ::testing::Test {
 protected:
  void SetUp() override { MIXLE_SKIP_UNLESS_BUILT_WITH(MIXLE_HAVE_MPI, "MPI"); }
};

TEST_F(MpiFaults, KilledRankEndsTheJob) {
  TempDir dir;
  Process p = run_process(mpirun(3, {"--comm", "mpi", "--scenario", "die", "--victim", "1", "--timeout-ms", "3000"}),
                          {}, dir.path / "mpi.log", 40s);
  EXPECT_TRUE(p.done) << p.output();
  EXPECT_NE(p.exit_code(), 0) << p.output();
  EXPECT_LT(p.seconds(), kFailureDetectionBudgetSeconds) << p.output();
  EXPECT_TRUE(contains(p.output(), "rank 1")) << p.output();  // mpirun names the dead rank
}

TEST_F(MpiFaults, HungRankTimesOutItsSubCommunicatorPartner) {
  TempDir dir;
  // Victim 3 hangs; its pair partner (world rank 2, pair rank 0) times out in the pair all-reduce.
  Process p =
      run_process(mpirun(4, {"--comm", "mpi", "--scenario", "split-hang", "--victim", "3", "--timeout-ms", "2000"}), {},
                  dir.path / "mpi.log", 40s);
  std::string out = p.output();
  EXPECT_TRUE(p.done) << out;
  EXPECT_NE(p.exit_code(), 0) << out;
  EXPECT_LT(p.seconds(), kFailureDetectionBudgetSeconds) << out;
  EXPECT_TRUE(contains(out, "on rank 0 of 2 (world rank 2) did not complete within 2000 ms")) << out;
}

TEST_F(MpiFaults, HungRankTimesOutTheOthers) {
  TempDir dir;
  Process p = run_process(mpirun(3, {"--comm", "mpi", "--scenario", "hang", "--victim", "1", "--timeout-ms", "2000"}),
                          {}, dir.path / "mpi.log", 40s);
  std::string out = p.output();
  EXPECT_TRUE(p.done) << out;
  EXPECT_NE(p.exit_code(), 0) << out;
  EXPECT_LT(p.seconds(), kFailureDetectionBudgetSeconds) << out;
  EXPECT_TRUE(contains(out, "did not complete within 2000 ms")) << out;
  // The survivors' next collective is refused at once, not waited for again.
  EXPECT_TRUE(contains(out, "the next all-reduce: mpi communicator is unusable after an earlier failure")) << out;
}

}  // namespace
}  // namespace mixle::test
