// Runs the mixle command line the tests were built with (MIXLE_CLI_PATH) through the shell.
#pragma once

#include "common/bad_files.hpp"

#include <sys/wait.h>

#include <cstdlib>
#include <string>

namespace mixle::test {

struct CliRun {
  int code = -1;  ///< exit status, or -1 when the process did not exit normally
  std::string out, err;
};

/// `ENV mixle ARGS` (ENV: shell assignments such as "OMP_NUM_THREADS=1", or empty), its stdout
/// and stderr kept in `dir`'s stdout.txt and stderr.txt (overwritten by the next run).
inline CliRun run_cli(const TempDir& dir, const std::string& args, const std::string& env = "") {
  const std::string out = dir.file("stdout.txt"), err = dir.file("stderr.txt");
  const std::string cmd = env + " " + std::string(MIXLE_CLI_PATH) + " " + args + " >" + out + " 2>" + err;
  const int status = std::system(cmd.c_str());
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, read_text(out), read_text(err)};
}

/// The exit status of `mixle ARGS`, its output discarded.
inline int cli_exit_code(const std::string& args) {
  const int status = std::system((std::string(MIXLE_CLI_PATH) + " " + args + " >/dev/null 2>&1").c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

}  // namespace mixle::test
