// The CLI's exit-code contract: 0 success, 2 usage error.
#include "common/run_cli.hpp"

#include "comms/comm_type.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

using mixle::test::cli_exit_code;

TEST(Cli, VersionAndInfoSucceed) {
  EXPECT_EQ(cli_exit_code("--version"), 0);
  EXPECT_EQ(cli_exit_code("info"), 0);
}

// `mixle info` lists every communicator the build knows, each with its one-line summary, and
// the machine's usable cores.
TEST(Cli, InfoListsEveryCommunicatorAndTheCpu) {
  const mixle::test::TempDir dir("cli-info");
  const mixle::test::CliRun run = mixle::test::run_cli(dir, "info");
  ASSERT_EQ(run.code, 0) << run.err;
  for (const mixle::comms::CommType* type : mixle::comms::comm_types())
    EXPECT_NE(run.out.find("\ncomm " + type->name + ": " + type->summary + "\n"), std::string::npos)
        << type->name << " in:\n"
        << run.out;
  EXPECT_NE(run.out.find("\ncpu: "), std::string::npos) << run.out;
  EXPECT_NE(run.out.find(" usable core(s), "), std::string::npos) << run.out;
}

TEST(Cli, UnknownCommandIsUsageError) { EXPECT_EQ(cli_exit_code("no-such-command"), 2); }
TEST(Cli, UnknownFlagIsUsageError) { EXPECT_EQ(cli_exit_code("info --no-such-flag"), 2); }
