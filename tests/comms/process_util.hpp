// Test helper: start real processes with extra environment variables, capture their output in
// files, and wait for them with a deadline (killing the process group when it passes), so that a
// hanging collective fails its test instead of hanging the suite.
#pragma once

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace mixle::test {

using Env = std::map<std::string, std::string>;

/// A fresh folder under the system temp dir, removed on destruction.
struct TempDir {
  std::filesystem::path path;
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "mixle-test-XXXXXX").string();
    path = ::mkdtemp(tmpl.data());
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
};

inline std::string read_file(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

/// One started process (own process group) whose stdout+stderr go to `log`.
struct Process {
  pid_t pid = -1;
  std::filesystem::path log;
  int status = 0;
  bool done = false;
  std::chrono::steady_clock::time_point started, ended;

  static Process start(const std::vector<std::string>& argv, const Env& env, const std::filesystem::path& log) {
    Process p;
    p.log = log;
    p.started = std::chrono::steady_clock::now();
    p.pid = ::fork();
    if (p.pid == 0) {
      ::setpgid(0, 0);
      std::FILE* f = std::fopen(log.c_str(), "w");
      if (f) {
        ::dup2(::fileno(f), 1);
        ::dup2(::fileno(f), 2);
      }
      for (const auto& [k, v] : env) ::setenv(k.c_str(), v.c_str(), 1);
      std::vector<char*> args;
      for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
      args.push_back(nullptr);
      ::execvp(args[0], args.data());
      std::perror("execvp");
      ::_exit(127);
    }
    ::setpgid(p.pid, p.pid);
    return p;
  }

  /// Reaps the process if it has ended (never blocks); returns done.
  bool poll() {
    if (!done && ::waitpid(pid, &status, WNOHANG) == pid) {
      done = true;
      ended = std::chrono::steady_clock::now();
    }
    return done;
  }
  /// Kills the process group if it is still running and reaps it (done stays false).
  void kill_if_running() {
    if (poll()) return;
    ::kill(-pid, SIGKILL);
    ::waitpid(pid, &status, 0);
    ended = std::chrono::steady_clock::now();
  }
  /// Waits until the process ends or `deadline`; returns false (and kills its group) on timeout.
  bool wait_until(std::chrono::steady_clock::time_point deadline) {
    while (!poll()) {
      if (std::chrono::steady_clock::now() >= deadline) {
        kill_if_running();
        return false;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return true;
  }
  void signal(int sig) const { ::kill(pid, sig); }
  int exit_code() const { return WIFEXITED(status) ? WEXITSTATUS(status) : -1; }
  int term_signal() const { return WIFSIGNALED(status) ? WTERMSIG(status) : 0; }
  double seconds() const { return std::chrono::duration<double>(ended - started).count(); }
  std::string output() const { return read_file(log); }
};

/// Polls every process until all have ended, or all but `allowed_to_hang` (index, −1 for none)
/// have, or `deadline`; then kills whatever still runs. End times are recorded when each ends.
inline void wait_all(std::vector<Process>& ps, std::chrono::steady_clock::time_point deadline,
                     int allowed_to_hang = -1) {
  for (;;) {
    bool pending = false;
    for (std::size_t i = 0; i < ps.size(); ++i)
      if (!ps[i].poll() && static_cast<int>(i) != allowed_to_hang) pending = true;
    if (!pending || std::chrono::steady_clock::now() >= deadline) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  for (auto& p : ps) p.kill_if_running();
}

/// Runs a command to completion (or kills it after `timeout`); returns the finished Process.
inline Process run_process(const std::vector<std::string>& argv, const Env& env, const std::filesystem::path& log,
                           std::chrono::seconds timeout) {
  Process p = Process::start(argv, env, log);
  p.wait_until(std::chrono::steady_clock::now() + timeout);
  return p;
}

}  // namespace mixle::test
