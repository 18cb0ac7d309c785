// Subcommand registry of the `mixle` CLI. Each subcommand lives in its own cmd_<name>.cpp and
// registers itself with a static MIXLE_REGISTER_COMMAND; main.cpp knows none of them by name.
#pragma once

#include <CLI/CLI.hpp>

#include <functional>
#include <string>
#include <vector>

namespace mixle::host {

/// One subcommand: `setup` adds its options to the subcommand's CLI::App and returns the action
/// that runs after parsing. The action returns the process exit code (0 success).
struct Command {
  std::string name;
  std::string summary;
  std::function<std::function<int()>(CLI::App&)> setup;
  int order = 100;  // position in `mixle --help`
};

std::vector<Command>& command_registry();
int register_command(Command command);

}  // namespace mixle::host

#define MIXLE_CONCAT_INNER(a, b) a##b
#define MIXLE_CONCAT(a, b) MIXLE_CONCAT_INNER(a, b)
/// Registers a subcommand at static-initialisation time (the file must be linked into the CLI).
#define MIXLE_REGISTER_COMMAND(...)                                    \
  static const int MIXLE_CONCAT(mixle_command_registered_, __LINE__) = \
      ::mixle::host::register_command(::mixle::host::Command{__VA_ARGS__})
