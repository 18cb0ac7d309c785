// `mixle launch`: torchrun-compatible variables, exit-status propagation, a failing rank failing
// the group (SIGTERM, then SIGKILL after the grace period) and signal forwarding. Real processes.
#include "common/require.hpp"
#include "comms/process_util.hpp"

#include <gtest/gtest.h>

#include <regex>
#include <set>
#include <sstream>

namespace mixle::test {
namespace {

using namespace std::chrono_literals;

bool contains(const std::string& s, const std::string& needle) { return s.find(needle) != std::string::npos; }

Process launch(const std::vector<std::string>& args, const TempDir& dir, std::chrono::seconds timeout = 30s,
               const Env& env = {}) {
  std::vector<std::string> argv{MIXLE_CLI_PATH, "launch"};
  argv.insert(argv.end(), args.begin(), args.end());
  return run_process(argv, env, dir.path / "launch.log", timeout);
}

// The launcher runs inside an environment that holds another group's variables (a launch
// nested in a torchrun job): each rank sees its own values, not the inherited ones.
TEST(LaunchCli, SetsTorchrunVariablesForEveryRank) {
  TempDir dir;
  std::string script = "env > " + dir.path.string() + "/env.$RANK";
  Process p = launch({"--nproc", "3", "--master-port", "29877", "--", "sh", "-c", script}, dir, 30s,
                     {{"RANK", "7"},
                      {"LOCAL_RANK", "7"},
                      {"WORLD_SIZE", "9"},
                      {"MASTER_PORT", "1234"},
                      {"TORCHELASTIC_RESTART_COUNT", "5"}});
  ASSERT_EQ(p.exit_code(), 0) << p.output();
  std::set<std::string> run_ids;
  for (int r = 0; r < 3; ++r) {
    std::string env = read_file(dir.path / ("env." + std::to_string(r)));
    auto has = [&](const std::string& kv) {
      EXPECT_TRUE(contains(env, "\n" + kv + "\n") || env.rfind(kv + "\n", 0) == 0) << kv;
    };
    has("RANK=" + std::to_string(r));
    has("LOCAL_RANK=" + std::to_string(r));
    has("WORLD_SIZE=3");
    has("LOCAL_WORLD_SIZE=3");
    has("GROUP_RANK=0");
    has("MASTER_ADDR=127.0.0.1");
    has("MASTER_PORT=29877");
    has("TORCHELASTIC_USE_AGENT_STORE=False");
    has("GROUP_WORLD_SIZE=1");
    has("ROLE_RANK=" + std::to_string(r));
    has("ROLE_WORLD_SIZE=3");
    has("TORCHELASTIC_RESTART_COUNT=0");
    has("TORCHELASTIC_MAX_RESTARTS=0");
    auto pos = env.find("TORCHELASTIC_RUN_ID=");
    ASSERT_NE(pos, std::string::npos);
    run_ids.insert(env.substr(pos, env.find('\n', pos) - pos));
  }
  ASSERT_EQ(run_ids.size(), 1u);  // one run id shared by the group
  // "mixle-" and 24 random hex digits (96 bits: two launches on one store never collide).
  EXPECT_TRUE(std::regex_match(*run_ids.begin(), std::regex("TORCHELASTIC_RUN_ID=mixle-[0-9a-f]{24}")))
      << *run_ids.begin();
}

// As torchrun: a group of two or more ranks gets OMP_NUM_THREADS=1 unless it is set already;
// a single rank keeps the machine's default.
TEST(LaunchCli, OneOpenMpThreadPerRankOnlyWhenThereAreSeveral) {
  TempDir dir;
  auto omp_threads = [&](const std::string& nproc, const std::string& preset) {
    const std::string file = dir.path.string() + "/omp." + nproc + "." + preset;
    std::vector<std::string> argv{"env"};
    if (preset.empty())
      argv.insert(argv.end(), {"-u", "OMP_NUM_THREADS"});
    else
      argv.push_back("OMP_NUM_THREADS=" + preset);
    argv.insert(argv.end(), {MIXLE_CLI_PATH, "launch", "--nproc", nproc, "--", "sh", "-c",
                             "echo \"${OMP_NUM_THREADS-unset}\" > " + file + ".$RANK"});
    Process p = run_process(argv, {}, dir.path / "launch.log", 30s);
    EXPECT_EQ(p.exit_code(), 0) << p.output();
    return read_file(file + ".0");
  };
  EXPECT_EQ(omp_threads("2", ""), "1\n");
  EXPECT_EQ(omp_threads("1", ""), "unset\n");
  EXPECT_EQ(omp_threads("2", "4"), "4\n");
}

/// The socket lines of /proc/net/tcp (a copy in `table`), each split into its fields: sl, local
/// address:port (hex), remote, state (0A: listening), …, inode (the tenth); the heading (no ':' in its second field)
/// left out.
std::vector<std::vector<std::string>> tcp_rows(const std::string& table) {
  std::vector<std::vector<std::string>> rows;
  std::istringstream lines(table);
  std::string line;
  while (std::getline(lines, line)) {
    std::istringstream in(line);
    std::vector<std::string> fields;
    for (std::string f; in >> f;) fields.push_back(f);
    if (fields.size() > 9 && fields[1].find(':') != std::string::npos) rows.push_back(fields);
  }
  return rows;
}

/// The port of a row's local address.
int local_port(const std::vector<std::string>& row) {
  return std::stoi(row[1].substr(row[1].find(':') + 1), nullptr, 16);
}

/// The row of the socket with inode `inode` in `table`; empty when none.
std::vector<std::string> tcp_socket(const std::string& table, const std::string& inode) {
  for (const std::vector<std::string>& row : tcp_rows(table))
    if (row[9] == inode) return row;
  return {};
}

// Without --master-port the launcher binds a free port itself and hands the listening socket to
// rank 0 (MIXLE_STORE_FD), which serves the store on it: no other process can take the port
// between the choice and the store. The other ranks get no descriptor, not even one the launcher
// inherited from an outer launch.
TEST(LaunchCli, PicksAFreeMasterPortAndHandsItsSocketToRankZero) {
  TempDir dir;
  const std::string d = dir.path.string();
  const std::string script = "fd=${MIXLE_STORE_FD-none}; echo \"$MASTER_PORT $fd\" > " + d +
                             "/rank.$RANK; if [ \"$fd\" != none ]; then readlink /proc/$$/fd/$fd >> " + d +
                             "/rank.$RANK; cat /proc/net/tcp /proc/net/tcp6 > " + d +
                             "/tcp.$RANK 2>/dev/null; fi; true";
  Process p = launch({"--nproc", "2", "--", "sh", "-c", script}, dir, 30s, {{"MIXLE_STORE_FD", "7"}});
  ASSERT_EQ(p.exit_code(), 0) << p.output();
  std::istringstream zero(read_file(dir.path / "rank.0"));
  int port = 0;
  std::string fd, link;
  zero >> port >> fd >> link;
  ASSERT_GT(port, 0);
  ASSERT_NE(fd, "none") << "rank 0 was handed no socket";
  const std::regex socket_link("socket:\\[([0-9]+)\\]");
  std::smatch inode;
  ASSERT_TRUE(std::regex_match(link, inode, socket_link)) << "descriptor " << fd << " is " << link;
  // That socket listens on MASTER_PORT.
  const std::vector<std::string> row = tcp_socket(read_file(dir.path / "tcp.0"), inode[1]);
  ASSERT_FALSE(row.empty()) << "socket " << inode[1] << " is not a TCP socket";
  EXPECT_EQ(local_port(row), port) << row[1];
  EXPECT_EQ(row[3], "0A") << "not listening";
  EXPECT_EQ(read_file(dir.path / "rank.1"), std::to_string(port) + " none\n");
  // A port given on the command line is rank 0's to bind: no socket is handed over.
  Process given = launch({"--nproc", "1", "--master-port", "29878", "--", "sh", "-c", script}, dir);
  ASSERT_EQ(given.exit_code(), 0) << given.output();
  EXPECT_EQ(read_file(dir.path / "rank.0"), "29878 none\n");
}

// The launcher keeps no copy of the handed socket once the ranks are started: when rank 0 lets
// go of it (here it closes it; a rank 0 that dies does the same), nothing listens on the port any
// more, so a rank still connecting is refused at once instead of queueing on a socket nobody serves.
TEST(LaunchCli, OnlyRankZeroHoldsTheStoreSocket) {
  TempDir dir;
  const std::string d = dir.path.string();
  const std::string script =
      "if [ \"$RANK\" = 0 ]; then eval \"exec $MIXLE_STORE_FD<&-\"; touch " + d + "/closed; else while [ ! -e " + d +
      "/closed ]; do sleep 0.02; done; echo $MASTER_PORT > " + d + "/port; cat /proc/net/tcp > " + d + "/tcp; fi";
  Process p = launch({"--nproc", "2", "--", "sh", "-c", script}, dir);
  ASSERT_EQ(p.exit_code(), 0) << p.output();
  const int port = std::stoi(read_file(dir.path / "port"));
  const std::vector<std::vector<std::string>> rows = tcp_rows(read_file(dir.path / "tcp"));
  for (const std::vector<std::string>& row : rows)
    EXPECT_FALSE(local_port(row) == port && row[3] == "0A") << "something still listens on the store port: " << row[1];
}

// A launcher started with its standard input closed binds the store's port on descriptor 0 and
// hands rank 0 that number: descriptor 0 is a descriptor like any other, and rank 0 serves on it
// (binding the port anew would fail while the socket holds it) — here a gloo group forms.
TEST(LaunchCli, AStoreSocketOnDescriptorZeroIsServed) {
  MIXLE_SKIP_UNLESS_BUILT_WITH(MIXLE_HAVE_GLOO, "gloo");
  TempDir dir;
  const std::string fd_file = (dir.path / "store_fd").string();
  Process p = run_process({"sh",
                           "-c",
                           "exec 0<&-; exec \"$@\"",
                           "sh",
                           MIXLE_CLI_PATH,
                           "launch",
                           "--nproc",
                           "2",
                           "--",
                           "sh",
                           "-c",
                           "[ \"$RANK\" = 0 ] && echo \"$MIXLE_STORE_FD\" > " + fd_file + "; exec \"$@\"",
                           "sh",
                           MIXLE_CLI_PATH,
                           "bench",
                           "--comm",
                           "--comm-type",
                           "gloo",
                           "--min-bytes",
                           "8",
                           "--max-bytes",
                           "8",
                           "--iters",
                           "1",
                           "--warmup",
                           "0"},
                          {}, dir.path / "launch.log", 60s);
  ASSERT_EQ(p.exit_code(), 0) << p.output();
  EXPECT_EQ(read_file(dir.path / "store_fd"), "0\n");
}

// Without --nproc the group is one rank, as torchrun's default.
TEST(LaunchCli, OneRankByDefault) {
  TempDir dir;
  const std::string file = dir.path.string() + "/world";
  Process p = launch({"--", "sh", "-c", "echo \"$RANK of $WORLD_SIZE\" >> " + file}, dir);
  ASSERT_EQ(p.exit_code(), 0) << p.output();
  EXPECT_EQ(read_file(file), "0 of 1\n");
}

TEST(LaunchCli, ExitsZeroWhenAllRanksSucceed) {
  TempDir dir;
  EXPECT_EQ(launch({"--nproc", "4", "--", "true"}, dir).exit_code(), 0);
  // A grace period of 0 (SIGKILL right after SIGTERM) is allowed.
  EXPECT_EQ(launch({"--nproc", "1", "--grace-period", "0", "--", "true"}, dir).exit_code(), 0);
}

TEST(LaunchCli, FailingRankFailsTheGroupAndIsNamed) {
  TempDir dir;
  // Rank 2 exits 7; the others would sleep for a minute unless stopped.
  Process p = launch({"--nproc", "3", "--", "sh", "-c", "if [ $RANK = 2 ]; then exit 7; fi; sleep 60"}, dir);
  std::string out = p.output();
  EXPECT_EQ(p.exit_code(), 7) << out;
  EXPECT_TRUE(contains(out, "rank 2")) << out;
  EXPECT_TRUE(contains(out, "exited with status 7")) << out;
  // Without --max-restarts there were none to use up: the failure says nothing of restarts.
  EXPECT_FALSE(contains(out, "restart")) << out;
  EXPECT_LT(p.seconds(), 10.0);
}

TEST(LaunchCli, KilledRankIsReportedWithItsSignal) {
  TempDir dir;
  Process p = launch({"--nproc", "2", "--", "sh", "-c", "if [ $RANK = 1 ]; then kill -9 $$; fi; sleep 60"}, dir);
  std::string out = p.output();
  EXPECT_EQ(p.exit_code(), 128 + 9) << out;
  EXPECT_TRUE(contains(out, "rank 1")) << out;
  EXPECT_TRUE(contains(out, "signal 9")) << out;
}

// --max-restarts: a failed rank restarts the whole group, as torchrun's agent does: every rank
// of the new group sees TORCHELASTIC_RESTART_COUNT one higher, the same run id and
// TORCHELASTIC_MAX_RESTARTS; a group that then succeeds ends the launch with 0.
TEST(LaunchCli, AFailedRankRestartsTheWholeGroup) {
  TempDir dir;
  // Rank 1 fails in the first two starts, once rank 0 has recorded that start; rank 0 would wait
  // a minute there unless stopped.
  const std::string starts = dir.path.string() + "/starts.";
  const std::string script = "echo $TORCHELASTIC_RESTART_COUNT $TORCHELASTIC_MAX_RESTARTS $TORCHELASTIC_RUN_ID >> " +
                             starts +
                             "$RANK; "
                             "if [ $TORCHELASTIC_RESTART_COUNT -lt 2 ]; then if [ $RANK = 1 ]; then "
                             "until grep -q \"^$TORCHELASTIC_RESTART_COUNT \" " +
                             starts + "0 2>/dev/null; do sleep 0.01; done; exit 3; fi; sleep 60; fi";
  Process p = launch({"--nproc", "2", "--max-restarts", "3", "--", "sh", "-c", script}, dir);
  const std::string out = p.output();
  ASSERT_EQ(p.exit_code(), 0) << out;
  EXPECT_TRUE(contains(out, "restarting the group (restart 1 of 3, TORCHELASTIC_RESTART_COUNT=1)")) << out;
  EXPECT_TRUE(contains(out, "restarting the group (restart 2 of 3, TORCHELASTIC_RESTART_COUNT=2)")) << out;
  EXPECT_FALSE(contains(out, "restart 3 of 3")) << out;
  for (int r = 0; r < 2; ++r) {
    std::istringstream starts(read_file(dir.path / ("starts." + std::to_string(r))));
    std::string run_id;
    for (int expected = 0; expected < 3; ++expected) {
      int count = -1, max = -1;
      std::string id;
      ASSERT_TRUE(starts >> count >> max >> id) << "rank " << r << " start " << expected;
      EXPECT_EQ(count, expected) << "rank " << r;
      EXPECT_EQ(max, 3) << "rank " << r;
      if (run_id.empty()) run_id = id;
      EXPECT_EQ(id, run_id) << "a restarted group keeps the run id";
    }
    int more = 0;
    EXPECT_FALSE(starts >> more) << "rank " << r << " started more than three times";
  }
}

// With no restarts left the launcher fails as without them, naming the rank.
TEST(LaunchCli, AGroupOutOfRestartsFailsNamingTheRank) {
  TempDir dir;
  const std::string script =
      "echo x >> " + dir.path.string() + "/starts.$RANK; if [ $RANK = 1 ]; then exit 3; fi; sleep 60";
  Process p = launch({"--nproc", "2", "--max-restarts", "1", "--", "sh", "-c", script}, dir);
  const std::string out = p.output();
  EXPECT_EQ(p.exit_code(), 3) << out;
  EXPECT_TRUE(contains(out, "failed: rank 1 exited with status 3 (no restarts left)")) << out;
  EXPECT_EQ(read_file(dir.path / "starts.1"), "x\nx\n");  // two starts (rank 0 may be stopped before it writes)
}

TEST(LaunchCli, RankIgnoringSigtermIsKilledAfterTheGracePeriod) {
  TempDir dir;
  Process p = launch({"--nproc", "2", "--grace-period", "1", "--", "sh", "-c",
                      "if [ $RANK = 0 ]; then sleep 0.3; exit 1; fi; trap '' TERM; sleep 60"},
                     dir);
  std::string out = p.output();
  EXPECT_EQ(p.exit_code(), 1) << out;
  EXPECT_TRUE(contains(out, "sending SIGKILL")) << out;
  EXPECT_GE(p.seconds(), 1.3) << "SIGKILL before the grace period after rank 0's failure at 0.3 s";
  EXPECT_LT(p.seconds(), 10.0);
}

TEST(LaunchCli, ForwardsSigtermToTheRanks) {
  TempDir dir;
  std::string d = dir.path.string();
  std::string script = "trap 'echo term > " + d + "/term.$RANK; exit 0' TERM; touch " + d +
                       "/ready.$RANK; while true; do sleep 0.05; done";
  Process p =
      Process::start({MIXLE_CLI_PATH, "launch", "--nproc", "2", "--", "sh", "-c", script}, {}, dir.path / "launch.log");
  auto deadline = std::chrono::steady_clock::now() + 10s;
  while (!(std::filesystem::exists(dir.path / "ready.0") && std::filesystem::exists(dir.path / "ready.1")) &&
         std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(20ms);
  p.signal(SIGTERM);
  ASSERT_TRUE(p.wait_until(std::chrono::steady_clock::now() + 15s)) << p.output();
  EXPECT_EQ(p.exit_code(), 128 + SIGTERM) << p.output();
  EXPECT_TRUE(std::filesystem::exists(dir.path / "term.0"));
  EXPECT_TRUE(std::filesystem::exists(dir.path / "term.1"));
}

// An interrupted launch whose ranks ignore the forwarded signal kills them once the grace
// period is over, as it does after a failed rank.
TEST(LaunchCli, AnInterruptedLaunchKillsRanksIgnoringTheSignalAfterTheGracePeriod) {
  TempDir dir;
  const std::string d = dir.path.string();
  Process p = Process::start({MIXLE_CLI_PATH, "launch", "--nproc", "2", "--grace-period", "1", "--", "sh", "-c",
                              "trap '' TERM; touch " + d + "/ready.$RANK; sleep 60"},
                             {}, dir.path / "launch.log");
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (!(std::filesystem::exists(dir.path / "ready.0") && std::filesystem::exists(dir.path / "ready.1")) &&
         std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(20ms);
  const auto interrupted = std::chrono::steady_clock::now();
  p.signal(SIGTERM);
  ASSERT_TRUE(p.wait_until(interrupted + 20s)) << "the ranks were not killed: " << p.output();
  EXPECT_EQ(p.exit_code(), 128 + SIGTERM) << p.output();
  EXPECT_TRUE(contains(p.output(), "sending SIGKILL")) << p.output();
  const double after = std::chrono::duration<double>(p.ended - interrupted).count();
  EXPECT_GE(after, 1.0) << "SIGKILL before the grace period was over";
  EXPECT_LT(after, 10.0);
}

TEST(LaunchCli, MissingCommandIsAUsageError) {
  TempDir dir;
  EXPECT_EQ(launch({"--nproc", "2"}, dir).exit_code(), 2);
  EXPECT_EQ(launch({"--nproc", "0", "--", "true"}, dir).exit_code(), 2);
}

// --max-restarts takes 0 to 1000 (a bound against a typo that would restart a group forever).
TEST(LaunchCli, MaxRestartsIsBoundedAtOneThousand) {
  TempDir dir;
  EXPECT_EQ(launch({"--nproc", "1", "--max-restarts", "1000", "--", "true"}, dir).exit_code(), 0);
  Process p = launch({"--nproc", "1", "--max-restarts", "1001", "--", "true"}, dir);
  EXPECT_EQ(p.exit_code(), 2) << p.output();
  EXPECT_TRUE(contains(p.output(), "--max-restarts")) << p.output();
}

// --master-port takes every TCP port, 1 to 65535, and passes it on as MASTER_PORT.
TEST(LaunchCli, MasterPortTakesEveryTcpPort) {
  TempDir dir;
  const std::string file = dir.path.string() + "/port";
  for (const char* port : {"1", "65535"}) {
    Process p = launch({"--master-port", port, "--", "sh", "-c", "echo $MASTER_PORT > " + file}, dir);
    ASSERT_EQ(p.exit_code(), 0) << port << ": " << p.output();
    EXPECT_EQ(read_file(file), std::string(port) + "\n");
  }
  for (const char* port : {"0", "65536"}) {
    Process p = launch({"--master-port", port, "--", "true"}, dir);
    EXPECT_EQ(p.exit_code(), 2) << port << ": " << p.output();
    EXPECT_TRUE(contains(p.output(), "--master-port")) << p.output();
  }
}

TEST(LaunchCli, UnrunnableCommandFails) {
  TempDir dir;
  Process p = launch({"--nproc", "2", "--", "/nonexistent/program", "--its-argument"}, dir);
  EXPECT_EQ(p.exit_code(), 127) << p.output();
  // The rank that failed first names the program it could not run (not its argument) and why;
  // the other may be stopped before it gets as far.
  EXPECT_TRUE(contains(p.output(), ": cannot run '/nonexistent/program': No such file or directory")) << p.output();
  EXPECT_FALSE(contains(p.output(), "--its-argument'")) << p.output();
}

}  // namespace
}  // namespace mixle::test
