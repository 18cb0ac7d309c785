// The CLI's exit-code contract: 0 success, 2 usage error.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

namespace {
int run(const std::string& args) {
  int status = std::system((std::string(MIXLE_CLI_PATH) + " " + args + " >/dev/null 2>&1").c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}
}  // namespace

TEST(Cli, VersionAndInfoSucceed) {
  EXPECT_EQ(run("--version"), 0);
  EXPECT_EQ(run("info"), 0);
}

TEST(Cli, UnknownCommandIsUsageError) { EXPECT_EQ(run("no-such-command"), 2); }
TEST(Cli, UnknownFlagIsUsageError) { EXPECT_EQ(run("info --no-such-flag"), 2); }
