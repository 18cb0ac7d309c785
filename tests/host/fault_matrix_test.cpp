// The fault matrix: a 3-rank fit (real processes on 127.0.0.1, started as torchrun starts them,
// rank 0 owning the store) in which one rank dies (SIGKILL) or hangs (SIGSTOP) at each phase —
// initialisation, a statistics all-reduce, half-way through writing a checkpoint (rank 0, the
// writer), after the last EM iteration — through the failpoints of comms/failpoint.hpp. In every
// cell each survivor exits non-zero within --timeout + kBoundSeconds of the fault, the dead rank
// is named by every survivor, no model file is written, and the checkpoint on disk loads; a
// resume from it reaches the uninterrupted model. docs/testing.md states the measured times.
#include "common/require.hpp"
#include "comms/socket.hpp"
#include "host/checkpoint.hpp"
#include "host/fit_process_util.hpp"

#include <gtest/gtest.h>

#include <csignal>
#include <fstream>
#include <sstream>

namespace mixle::test {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
namespace fs = std::filesystem;

constexpr int kTimeoutSeconds = 3;    // the runs' --timeout
constexpr double kBoundSeconds = 10;  // what a survivor may take past it (measured: docs/testing.md)
constexpr int kIterations = 30;
const std::string kCli = MIXLE_CLI_PATH;

std::vector<std::string> fit_args(const fs::path& data, const fs::path& out) {
  return {
      kCli,      "fit",   "--data",    data.string(), "--layout",    "gaussian_diag:0-3,categorical:3-4:3,poisson:4-5",
      "-k",      "3",     "--seed",    "11",          "--max-iter",  std::to_string(kIterations),
      "--tol",   "0",     "--threads", "1",           "--precision", "fp64",
      "--quiet", "--out", out.string()};
}

/// Whether process `pid` is stopped (state T in /proc/PID/stat).
bool stopped(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto paren = text.rfind(')');
  return paren != std::string::npos && paren + 2 < text.size() && text[paren + 2] == 'T';
}

struct Cell {
  std::string phase;
  int rank;
  bool hang;  // SIGSTOP instead of SIGKILL
  int nth;    // the N-th time the failpoint is reached
};

/// Runs one cell in `dir` (data in dir/data.npy, checkpoints in dir/ckpt-…); checks what every
/// cell must show and returns the checkpoint folder.
fs::path run_cell(const TempDir& dir, const Cell& cell, std::vector<double>& survivor_seconds) {
  const std::string name = cell.phase + "-" + std::to_string(cell.rank) + (cell.hang ? "-stop" : "-kill");
  SCOPED_TRACE(name);
  const fs::path ckpt = dir.path / ("ckpt-" + name), out = dir.path / (name + ".json");
  const int port = comms::find_free_port();
  std::vector<Process> ranks;
  for (int r = 0; r < 3; ++r) {
    Env env{{"RANK", std::to_string(r)},
            {"LOCAL_RANK", std::to_string(r)},
            {"WORLD_SIZE", "3"},
            {"LOCAL_WORLD_SIZE", "3"},
            {"MASTER_ADDR", "127.0.0.1"},
            {"MASTER_PORT", std::to_string(port)},
            {"TORCHELASTIC_RUN_ID", "fault-matrix"},
            {"TORCHELASTIC_USE_AGENT_STORE", "False"},
            {"MIXLE_FAILPOINT", cell.phase + "@" + std::to_string(cell.rank) + (cell.hang ? ":stop" : ":kill") + "#" +
                                    std::to_string(cell.nth)}};
    auto argv = fit_args(dir.path / "data.npy", out);
    for (const std::string& a :
         std::vector<std::string>{"--checkpoint-dir", ckpt.string(), "--timeout", std::to_string(kTimeoutSeconds)})
      argv.push_back(a);
    ranks.push_back(Process::start(argv, env, dir.path / (name + "-rank" + std::to_string(r) + ".log")));
  }
  // The fault's time: the victim's death, or the moment it is seen stopped.
  Process& victim = ranks[static_cast<std::size_t>(cell.rank)];
  auto fault = Clock::now();
  const auto deadline = Clock::now() + 60s;
  while (Clock::now() < deadline) {
    if (cell.hang ? stopped(victim.pid) : victim.poll()) break;
    std::this_thread::sleep_for(2ms);
  }
  fault = cell.hang ? Clock::now() : victim.ended;
  const bool faulted = cell.hang ? stopped(victim.pid) : victim.done;
  wait_all(ranks, fault + std::chrono::seconds(kTimeoutSeconds + 2 * static_cast<int>(kBoundSeconds)),
           cell.hang ? cell.rank : -1);
  EXPECT_TRUE(faulted) << "the failpoint did not fire:\n" << victim.output();
  if (!cell.hang) EXPECT_EQ(victim.term_signal(), SIGKILL) << victim.output();
  for (int r = 0; r < 3; ++r) {
    if (r == cell.rank) continue;
    const Process& s = ranks[static_cast<std::size_t>(r)];
    SCOPED_TRACE("survivor rank " + std::to_string(r));
    EXPECT_TRUE(s.done) << "hung:\n" << s.output();
    EXPECT_NE(s.exit_code(), 0) << s.output();
    const double seconds = std::chrono::duration<double>(s.ended - fault).count();
    survivor_seconds.push_back(seconds);
    EXPECT_LT(seconds, kTimeoutSeconds + kBoundSeconds) << s.output();
    EXPECT_NE(s.output().find("rank " + std::to_string(cell.rank)), std::string::npos)
        << "does not name rank " << cell.rank << ":\n"
        << s.output();
  }
  std::printf("%-26s survivors exited after", name.c_str());
  for (std::size_t i = survivor_seconds.size() - 2; i < survivor_seconds.size(); ++i)
    std::printf(" %.2f s", survivor_seconds[i]);
  std::printf("\n");
  EXPECT_FALSE(fs::exists(out)) << "a failed run wrote a model";
  if (fs::exists(ckpt / "checkpoint.json")) EXPECT_NO_THROW(host::load_checkpoint(ckpt.string()));
  return ckpt;
}

/// The uninterrupted fit as one process, then the data for the cells.
class FaultMatrix : public ::testing::Test {
 protected:
  void SetUp() override {
    MIXLE_SKIP_UNLESS_BUILT_WITH(MIXLE_HAVE_GLOO, "gloo");
    const fs::path data = make_mixed_records(dir_, 6000);
    fs::rename(data, dir_.path / "data.npy");
    Process ref =
        run_process(fit_args(dir_.path / "data.npy", dir_.path / "ref.json"), {}, dir_.path / "ref.log", 120s);
    ASSERT_EQ(ref.exit_code(), 0) << ref.output();
  }
  void TearDown() override {
    if (seconds_.empty()) return;
    std::ostringstream text;
    double most = 0;
    for (double s : seconds_) most = std::max(most, s);
    text << seconds_.size() << " survivors exited within " << most << " s of the fault";
    RecordProperty("survivor_seconds_max", text.str());
    std::printf("%s\n", text.str().c_str());
  }

  /// Resumes `ckpt` on three ranks under `mixle launch` and expects the uninterrupted model.
  void expect_resume_reaches_the_reference(const fs::path& ckpt) {
    ASSERT_TRUE(fs::exists(ckpt / "checkpoint.json"));
    std::vector<std::string> argv{kCli, "launch", "--nproc", "3", "--"};
    const fs::path out = ckpt.string() + "-resumed.json";
    for (const auto& a : fit_args(dir_.path / "data.npy", out)) argv.push_back(a);
    argv.push_back("--resume");
    argv.push_back(ckpt.string());
    Process resumed = run_process(argv, {}, ckpt.string() + "-resumed.log", 120s);
    ASSERT_EQ(resumed.exit_code(), 0) << resumed.output();
    EXPECT_NE(resumed.output().find("resumed after iteration"), std::string::npos) << resumed.output();
    EXPECT_LT(max_relative_difference(dir_.path / "ref.json", out), 1e-9);
  }

  TempDir dir_;
  std::vector<double> seconds_;
};

TEST_F(FaultMatrix, ARankLostAtInitialisation) {
  for (const int rank : {0, 1, 2})
    for (const bool hang : {false, true}) run_cell(dir_, {"initialisation", rank, hang, 1}, seconds_);
}

TEST_F(FaultMatrix, ARankLostInAnAllReduce) {
  for (const int rank : {0, 1, 2})
    for (const bool hang : {false, true}) {
      const fs::path ckpt = run_cell(dir_, {"all-reduce", rank, hang, 12}, seconds_);
      if (rank == 1 && !hang) expect_resume_reaches_the_reference(ckpt);
    }
}

// Only rank 0 writes checkpoints: its loss half-way through a write leaves the previous one.
TEST_F(FaultMatrix, TheWriterLostHalfWayThroughACheckpoint) {
  for (const bool hang : {false, true}) {
    const fs::path ckpt = run_cell(dir_, {"checkpoint-write", 0, hang, 5}, seconds_);
    const std::optional<host::Checkpoint> kept = host::load_checkpoint(ckpt.string());
    ASSERT_TRUE(kept.has_value());
    EXPECT_EQ(kept->iteration, 4) << "the fifth write was cut: the fourth checkpoint stays";
    if (!hang) expect_resume_reaches_the_reference(ckpt);
  }
}

TEST_F(FaultMatrix, ARankLostAfterTheLastIteration) {
  for (const int rank : {0, 1, 2})
    for (const bool hang : {false, true}) {
      const fs::path ckpt = run_cell(dir_, {"finished", rank, hang, 1}, seconds_);
      if (rank == 2 && !hang) expect_resume_reaches_the_reference(ckpt);
    }
}

/// Whether a file can be created in `folder` (as root, permissions do not stop it).
bool can_create_in(const fs::path& folder) {
  const fs::path probe = folder / ".mixle-probe";
  std::ofstream f(probe);
  const bool ok = static_cast<bool>(f);
  f.close();
  if (ok) fs::remove(probe);
  return ok;
}

/// No file in `folder` whose name starts with `prefix` (a leftover temporary).
bool nothing_named(const fs::path& folder, const std::string& prefix) {
  for (const auto& e : fs::directory_iterator(folder))
    if (e.path().filename().string().rfind(prefix, 0) == 0) return false;
  return true;
}

// An output folder nothing can be written to: the fit refuses before fitting (a long fit must
// not end in a write error it could have seen at the start), naming the file and the reason.
TEST(OutputFaults, AnUnwritableOutputFailsBeforeTheFit) {
  TempDir dir;
  const fs::path data = make_mixed_records(dir, 500);
  fs::path folder = dir.path / "read-only";
  fs::create_directory(folder);
  fs::permissions(folder, fs::perms::owner_read | fs::perms::owner_exec);
  if (can_create_in(folder)) folder = "/sys/fs";  // root ignores permissions; sysfs refuses new files
  if (can_create_in(folder)) GTEST_SKIP() << "no read-only folder here (root, and /sys/fs accepts files)";
  Process p = run_process(fit_args(data, folder / "model.json"), {}, dir.path / "p.log", 60s);
  fs::permissions(dir.path / "read-only", fs::perms::owner_all);
  EXPECT_EQ(p.exit_code(), 1) << p.output();
  EXPECT_NE(p.output().find("cannot write " + (folder / "model.json").string() + ": cannot create a temporary file"),
            std::string::npos)
      << p.output();
  EXPECT_EQ(p.output().find("fitted"), std::string::npos) << "it fitted first:\n" << p.output();
}

// A disk that fills up while the model or a checkpoint is written (a file-size limit, so the
// write() fails as on a full disk — no small file system is needed): a clear error naming the
// file, the previous file untouched, no temporary left behind.
TEST(OutputFaults, AFullDiskLeavesThePreviousFileAndNoTemporary) {
  TempDir dir;
  const fs::path data = make_mixed_records(dir, 500);
  const fs::path out = dir.path / "model.json", ckpt = dir.path / "ckpt";
  write_file_atomic(out.string(), "the previous model\n");
  // 512-byte blocks: the data file is already there, the model JSON is longer than 1 KiB. The
  // limit binds mixle only — its output reaches the log through a pipe — and its exit status is
  // printed last.
  auto limited = [&](std::vector<std::string> argv) {
    std::vector<std::string> sh{"sh", "-c", "( ulimit -f 2; trap '' XFSZ; \"$@\"; echo \"exit status $?\" ) 2>&1 | cat",
                                "sh"};
    sh.insert(sh.end(), argv.begin(), argv.end());
    return sh;
  };
  Process model = run_process(limited(fit_args(data, out)), {}, dir.path / "model.log", 60s);
  EXPECT_NE(model.output().find("exit status 1"), std::string::npos) << model.output();
  EXPECT_NE(model.output().find("cannot write " + out.string() + ": write: File too large"), std::string::npos)
      << model.output();
  EXPECT_EQ(read_file(out), "the previous model\n");
  EXPECT_TRUE(nothing_named(dir.path, ".model.json.tmp")) << "a temporary was left behind";
  auto with_checkpoints = fit_args(data, dir.path / "other.json");
  with_checkpoints.push_back("--checkpoint-dir");
  with_checkpoints.push_back(ckpt.string());
  Process checkpoint = run_process(limited(with_checkpoints), {}, dir.path / "checkpoint.log", 60s);
  EXPECT_NE(checkpoint.output().find("exit status 1"), std::string::npos) << checkpoint.output();
  EXPECT_NE(checkpoint.output().find("cannot write " + (ckpt / "checkpoint.json").string() + ": write: File too large"),
            std::string::npos)
      << checkpoint.output();
  EXPECT_FALSE(fs::exists(ckpt / "checkpoint.json"));
  EXPECT_TRUE(nothing_named(ckpt, ".checkpoint.json.tmp")) << "a temporary was left behind";
  EXPECT_FALSE(fs::exists(dir.path / "other.json"));
}

// A malformed failpoint is refused, naming the variable, instead of being ignored.
TEST(Failpoint, AMalformedValueIsNamed) {
  TempDir dir;
  const fs::path data = make_mixed_records(dir, 200);
  Process p = run_process(fit_args(data, dir.path / "out.json"), {{"MIXLE_FAILPOINT", "all-reduce@one"}},
                          dir.path / "p.log", 60s);
  EXPECT_NE(p.exit_code(), 0);
  EXPECT_NE(p.output().find("MIXLE_FAILPOINT = 'all-reduce@one'"), std::string::npos) << p.output();
}

}  // namespace
}  // namespace mixle::test
