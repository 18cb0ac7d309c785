// `mixle` command-line entry point: dispatches to the registered subcommands.
// Exit codes: 0 success, 1 runtime error, 2 usage error (docs/design.md §13).
#include "host/cli/command.hpp"
#include "host/cli/option_checks.hpp"

#include <mixle/error.hpp>
#include <mixle/version.hpp>

#include <algorithm>
#include <cstdio>
#include <iostream>

namespace mixle::host {

std::vector<Command>& command_registry() {
  static std::vector<Command> commands;
  return commands;
}

int register_command(Command command) {
  command_registry().push_back(std::move(command));
  return static_cast<int>(command_registry().size());
}

}  // namespace mixle::host

int main(int argc, char** argv) {
  using namespace mixle::host;
  // Line-buffer our streams when they are not terminals so logs interleave sensibly (torchrun, CI).
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  std::setvbuf(stderr, nullptr, _IOLBF, 0);

  CLI::App app{"mixle — finite mixture models by EM on CPUs and GPUs", "mixle"};
  app.set_version_flag("--version", std::string("mixle ") + MIXLE_VERSION_STRING);
  app.require_subcommand(1);
  // Option errors found while parsing read like the ones found after it: one "mixle: usage
  // error:" line naming the option and what it accepts (exit 2).
  app.failure_message([](const CLI::App*, const CLI::Error& e) {
    return std::string("mixle: usage error: ") + e.what() + "\nrun with --help for more information.\n";
  });
  app.fallthrough(false);

  auto commands = command_registry();
  std::stable_sort(commands.begin(), commands.end(),
                   [](const Command& a, const Command& b) { return a.order < b.order; });
  std::function<int()> action;
  for (auto& command : commands) {
    CLI::App* sub = app.add_subcommand(command.name, command.summary);
    auto run = command.setup(*sub);
    sub->callback([&action, run] { action = run; });
  }
  decimal_integers(app);  // "010" is ten, as in Python and torchrun, not CLI11's octal eight

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // CLI11 uses exit code 0 for --help/--version and non-zero for real usage errors.
    int code = app.exit(e);
    return code == 0 ? 0 : 2;
  }
  try {
    return action ? action() : 0;
  } catch (const mixle::UsageError& e) {
    std::cerr << "mixle: usage error: " << e.what() << "\n";
    return 2;
  } catch (const mixle::Error& e) {
    std::cerr << "mixle: error: " << e.what() << "\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "mixle: internal error: " << e.what() << "\n";
    return 1;
  }
}
