// `mixle launch [--nproc N] [--master-port P] [--max-restarts R] -- CMD…`: a torchrun stand-in for
// hosts without it. Starts N local processes with torchrun's worker variables, forwards
// SIGINT/SIGTERM/SIGHUP to them, and fails the group when one fails: the others get SIGTERM, then
// SIGKILL after a grace period. With restarts left the whole group starts again, as torchrun's
// agent does (TORCHELASTIC_RESTART_COUNT counts them; a `mixle fit --checkpoint-dir` then
// resumes); otherwise the launcher exits non-zero naming the failed rank (docs/distributed.md).
#include "host/cli/command.hpp"
#include "host/cli/option_checks.hpp"

#include "comms/socket.hpp"

#include <mixle/error.hpp>

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <iostream>
#include <optional>
#include <random>
#include <string>
#include <vector>

namespace mixle::host {
namespace {

using Clock = std::chrono::steady_clock;

struct LaunchOptions {
  int nproc = 1;
  int master_port = 0;          // 0: pick a free port
  int max_restarts = 0;         // group restarts after a failure
  double grace_seconds = 10.0;  // SIGTERM → SIGKILL
  std::vector<std::string> command;
};

struct Child {
  pid_t pid = -1;
  int rank = 0;
  bool running = false;
};

std::string random_run_id() {
  std::random_device rd;
  std::string id = "mixle-";
  const char* hex = "0123456789abcdef";
  for (int i = 0; i < 24; ++i) id += hex[rd() % 16];
  return id;
}

std::string describe_status(int status) {
  if (WIFEXITED(status)) return "exited with status " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) {
    int sig = WTERMSIG(status);
    const char* name = sigabbrev_np(sig);
    return "was killed by signal " + std::to_string(sig) + (name ? std::string(" (SIG") + name + ")" : "");
  }
  return "ended with wait status " + std::to_string(status);
}

// The exit code the launcher reports for a failed child: its own code (not 0: a rank that exited
// 0 did not fail), or 128 + signal like a shell.
int exit_code_for(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 1;
}

[[noreturn]] void exec_child(const LaunchOptions& o, int rank, int port, int store_fd, const std::string& run_id,
                             int restart, pid_t launcher, const sigset_t& old_mask) {
  // Own process group: a signal for the group reaches the child's own children too, and the
  // terminal's Ctrl-C reaches only the launcher, which forwards it once.
  ::setpgid(0, 0);
  ::prctl(PR_SET_PDEATHSIG, SIGTERM);  // a launcher killed by SIGKILL must not leave workers behind
  if (::getppid() != launcher) ::_exit(128 + SIGTERM);
  ::sigprocmask(SIG_SETMASK, &old_mask, nullptr);
  auto set = [](const char* k, const std::string& v) { ::setenv(k, v.c_str(), 1); };
  set("RANK", std::to_string(rank));
  set("LOCAL_RANK", std::to_string(rank));
  set("WORLD_SIZE", std::to_string(o.nproc));
  set("LOCAL_WORLD_SIZE", std::to_string(o.nproc));
  set("GROUP_RANK", "0");
  set("GROUP_WORLD_SIZE", "1");
  set("ROLE_RANK", std::to_string(rank));
  set("ROLE_WORLD_SIZE", std::to_string(o.nproc));
  set("MASTER_ADDR", "127.0.0.1");
  set("MASTER_PORT", std::to_string(port));
  set("TORCHELASTIC_RUN_ID", run_id);
  set("TORCHELASTIC_USE_AGENT_STORE", "False");  // no agent store: rank 0 hosts the store on MASTER_PORT
  if (store_fd >= 0) {
    // The port's listening socket, bound by the launcher: rank 0 serves the store on it.
    ::fcntl(store_fd, F_SETFD, 0);  // kept across the exec (it was opened close-on-exec)
    set("MIXLE_STORE_FD", std::to_string(store_fd));
  } else {
    ::unsetenv("MIXLE_STORE_FD");  // an outer launch's, which names nothing here
  }
  set("TORCHELASTIC_RESTART_COUNT", std::to_string(restart));
  set("TORCHELASTIC_MAX_RESTARTS", std::to_string(o.max_restarts));
  if (o.nproc > 1) ::setenv("OMP_NUM_THREADS", "1", 0);  // as torchrun: only when not already set
  std::vector<char*> argv;
  for (const auto& a : o.command) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  ::execvp(argv[0], argv.data());
  std::fprintf(stderr, "mixle launch: rank %d: cannot run '%s': %s\n", rank, argv[0], std::strerror(errno));
  ::_exit(127);
}

void signal_all(std::vector<Child>& children, int sig) {
  for (auto& c : children)
    if (c.running) ::kill(-c.pid, sig);
}

/// The first rank of a start that failed: what happened and the exit code the launcher reports.
struct Failure {
  int rank;
  std::string what;  // "exited with status 3", "was killed by signal 9 (SIGKILL)", …
  int exit_code;
};

/// How one start of the group ended.
struct GroupEnd {
  std::optional<Failure> failure;
  int interrupted_by = 0;  // a signal the launcher received and forwarded
};

/// Starts the group once (restart `restart`) and waits until every rank has ended. `listener`,
/// when valid, is the socket listening on `port`, handed to rank 0. The handled signals are
/// blocked in the caller.
GroupEnd run_group(const LaunchOptions& o, int port, comms::FileDescriptor listener, const std::string& run_id,
                   int restart, sigset_t& handled, const sigset_t& old_mask) {
  GroupEnd end;
  std::vector<Child> children(static_cast<std::size_t>(o.nproc));
  const pid_t self = ::getpid();
  for (int r = 0; r < o.nproc; ++r) {
    pid_t pid = ::fork();
    if (pid == 0) exec_child(o, r, port, r == 0 ? listener.get() : -1, run_id, restart, self, old_mask);
    if (pid < 0) {
      std::cerr << "mixle launch: fork failed for rank " << r << ": " << std::strerror(errno) << "\n";
      signal_all(children, SIGKILL);  // the ranks started before this one
      for (auto& c : children)
        if (c.running) ::waitpid(c.pid, nullptr, 0);
      return GroupEnd{Failure{r, "could not be started (fork failed)", 1}, 0};
    }
    ::setpgid(pid, pid);  // also here, so a signal sent right after fork reaches the group
    children[static_cast<std::size_t>(r)] = Child{pid, r, true};
  }
  // Rank 0 holds the socket now: when it ends, the port closes, and a rank still connecting is
  // refused instead of waiting on a socket nobody serves.
  listener.reset();

  constexpr auto kNever = Clock::time_point::max();
  Clock::time_point kill_at = kNever;  // when the SIGTERMed ranks get SIGKILL
  const auto grace = std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(o.grace_seconds));
  int running = o.nproc;
  while (running > 0) {
    timespec tick{0, 100'000'000};  // re-check the SIGKILL deadline ten times a second
    siginfo_t info;
    int sig = ::sigtimedwait(&handled, &info, &tick);
    if (sig == SIGINT || sig == SIGTERM || sig == SIGHUP) {
      if (!end.interrupted_by) end.interrupted_by = sig;
      signal_all(children, sig);
      if (kill_at == kNever) kill_at = Clock::now() + grace;
    }
    for (;;) {
      int status = 0;
      pid_t pid = ::waitpid(-1, &status, WNOHANG);
      if (pid <= 0) break;
      for (auto& c : children) {
        if (c.pid != pid || !c.running) continue;
        c.running = false;
        --running;
        bool failed = !(WIFEXITED(status) && WEXITSTATUS(status) == 0);
        if (failed && !end.failure && !end.interrupted_by) {
          end.failure = Failure{c.rank, describe_status(status), exit_code_for(status)};
          std::cerr << "mixle launch: rank " << c.rank << " (pid " << c.pid << ") " << end.failure->what
                    << "; stopping the other ranks\n";
          signal_all(children, SIGTERM);
          kill_at = Clock::now() + grace;
        }
      }
    }
    if (running > 0 && Clock::now() >= kill_at) {
      for (auto& c : children)
        if (c.running)
          std::cerr << "mixle launch: rank " << c.rank << " did not stop within " << o.grace_seconds
                    << " s of SIGTERM; sending SIGKILL\n";
      signal_all(children, SIGKILL);
      kill_at = kNever;
    }
  }
  return end;
}

int run_launch(const LaunchOptions& o) {
  if (o.command.empty()) throw UsageError("launch: no command given after --");
  const std::string run_id = random_run_id();

  // Block the signals we handle before forking, so none is lost between fork and the wait loop.
  sigset_t handled, old_mask;
  sigemptyset(&handled);
  for (int s : {SIGINT, SIGTERM, SIGHUP, SIGCHLD}) sigaddset(&handled, s);
  ::sigprocmask(SIG_BLOCK, &handled, &old_mask);

  GroupEnd end;
  for (int restart = 0;; ++restart) {
    // A fresh port for every start unless one was given: the last group's store may still hold it.
    // The launcher binds it and hands the listening socket to rank 0, so no other process on the
    // machine can take the port between the choice and rank 0's store.
    comms::FileDescriptor listener;
    if (o.master_port <= 0) listener = comms::listen_on("127.0.0.1", 0);
    const int port = listener.valid() ? comms::local_port(listener.get()) : o.master_port;
    end = run_group(o, port, std::move(listener), run_id, restart, handled, old_mask);
    if (end.interrupted_by || !end.failure || restart >= o.max_restarts) break;
    std::cerr << "mixle launch: restarting the group (restart " << restart + 1 << " of " << o.max_restarts
              << ", TORCHELASTIC_RESTART_COUNT=" << restart + 1 << ")\n";
  }
  ::sigprocmask(SIG_SETMASK, &old_mask, nullptr);

  if (end.interrupted_by) {
    std::cerr << "mixle launch: interrupted by signal " << end.interrupted_by << "; forwarded to all ranks\n";
    return 128 + end.interrupted_by;
  }
  if (end.failure) {
    std::cerr << "mixle launch: failed: rank " << end.failure->rank << " " << end.failure->what
              << (o.max_restarts > 0 ? " (no restarts left)" : "") << "\n";
    return end.failure->exit_code;
  }
  return 0;
}

std::function<int()> setup_launch(CLI::App& app) {
  auto o = std::make_shared<LaunchOptions>();
  app.add_option("--nproc", o->nproc, "Number of local processes (ranks) to start (as torchrun's)")
      ->check(whole_in(1, 4096, "the ranks to start on this machine, 1 to 4096"))
      ->capture_default_str();
  app.add_option("--master-port", o->master_port,
                 "MASTER_PORT for the ranks (rank 0 hosts the rendezvous store there); default: a "
                 "free port")
      ->check(whole_in(1, 65535, "a TCP port, 1 to 65535"));
  app.add_option("--grace-period", o->grace_seconds, "Seconds between SIGTERM and SIGKILL when stopping the ranks")
      ->check(number_in(0, false, 3600, "seconds from SIGTERM to SIGKILL, 0 to 3600"))
      ->capture_default_str();
  app.add_option("--max-restarts", o->max_restarts,
                 "Start the whole group again this many times after a rank fails (as torchrun's "
                 "--max-restarts; TORCHELASTIC_RESTART_COUNT counts the restarts)")
      ->check(whole_in(0, 1000, "the group restarts after a failure, 0 to 1000"))
      ->capture_default_str();
  app.add_option("command", o->command, "The command each rank runs (after --)")->required();
  app.footer(
      "Every rank gets RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE, GROUP_RANK=0,\n"
      "MASTER_ADDR=127.0.0.1, MASTER_PORT, TORCHELASTIC_RUN_ID, TORCHELASTIC_RESTART_COUNT,\n"
      "TORCHELASTIC_MAX_RESTARTS and TORCHELASTIC_USE_AGENT_STORE=False, as torchrun would set them.");
  return [o] { return run_launch(*o); };
}

}  // namespace
MIXLE_REGISTER_COMMAND("launch", "Start N local ranks with torchrun-compatible variables", setup_launch, 80);
}  // namespace mixle::host
