// The CLI's exit-code contract (0 success, 2 usage error) and what `mixle info` prints.
#include "common/one_cpu.hpp"
#include "common/run_cli.hpp"

#include "comms/comm_type.hpp"
#include "host/resources_discovery.hpp"

#include <mixle/version.hpp>

#include <sched.h>

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
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
  // The cores this process may run on and the memory it may use (the least of MemTotal and the
  // cgroup limits), in GiB of 2^30 bytes.
  cpu_set_t set;
  ASSERT_EQ(sched_getaffinity(0, sizeof set, &set), 0);
  const std::optional<std::uint64_t> memory = mixle::host::usable_memory_bytes();
  char cpu[128];
  std::snprintf(cpu, sizeof cpu, "\ncpu: %d usable core(s), %.1f GiB memory\n", CPU_COUNT(&set),
                memory ? static_cast<double>(*memory) / (1024.0 * 1024.0 * 1024.0) : 0.0);
  EXPECT_NE(run.out.find(cpu), std::string::npos) << cpu << " in:\n" << run.out;
  EXPECT_EQ(run.out.find("mixle " MIXLE_VERSION_STRING "\nfeatures: cpu"), 0u) << run.out;
}

// The cores are the ones `mixle info` itself may run on, not the machine's: started on one core
// (the affinity a child inherits from this thread), it counts one.
TEST(Cli, InfoCountsTheCoresItMayRunOn) {
  cpu_set_t all;
  ASSERT_EQ(sched_getaffinity(0, sizeof all, &all), 0);
  if (CPU_COUNT(&all) < 2) GTEST_SKIP() << "one usable core: narrowing the affinity changes nothing";
  const mixle::test::TempDir dir("cli-info-core");
  const mixle::test::CliRun run = mixle::test::on_one_cpu([&] { return mixle::test::run_cli(dir, "info"); });
  ASSERT_EQ(run.code, 0) << run.err;
  EXPECT_NE(run.out.find("\ncpu: 1 usable core(s), "), std::string::npos) << run.out;
}

TEST(Cli, UnknownCommandIsUsageError) { EXPECT_EQ(cli_exit_code("no-such-command"), 2); }
TEST(Cli, UnknownFlagIsUsageError) { EXPECT_EQ(cli_exit_code("info --no-such-flag"), 2); }
