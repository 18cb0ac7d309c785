// The CLI's exit-code contract: 0 success, 2 usage error.
#include "common/run_cli.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

using mixle::test::cli_exit_code;

TEST(Cli, VersionAndInfoSucceed) {
  EXPECT_EQ(cli_exit_code("--version"), 0);
  EXPECT_EQ(cli_exit_code("info"), 0);
}

TEST(Cli, UnknownCommandIsUsageError) { EXPECT_EQ(cli_exit_code("no-such-command"), 2); }
TEST(Cli, UnknownFlagIsUsageError) { EXPECT_EQ(cli_exit_code("info --no-such-flag"), 2); }
