// MIXLE_FAILPOINT values: what each arms, and every malformed one refused with the form expected
// (the failpoints themselves act in tests/host/fault_matrix_test.cpp).
#include "comms/failpoint.hpp"

#include <mixle/error.hpp>

#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdlib>

namespace mixle::comms {
namespace {

TEST(Failpoint, ParsesNameRankActionAndCount) {
  EXPECT_TRUE(parse_failpoint(nullptr).name.empty());
  EXPECT_TRUE(parse_failpoint("").name.empty());
  EXPECT_TRUE(parse_failpoint("").error.empty());
  const FailpointSpec kill = parse_failpoint("all-reduce@2");
  EXPECT_EQ(kill.name, "all-reduce");
  EXPECT_EQ(kill.rank, 2);
  EXPECT_EQ(kill.signal, SIGKILL);
  EXPECT_EQ(kill.nth, 1);
  EXPECT_TRUE(kill.error.empty());
  const FailpointSpec stop = parse_failpoint("checkpoint-write@0:stop#12");
  EXPECT_EQ(stop.name, "checkpoint-write");
  EXPECT_EQ(stop.rank, 0);
  EXPECT_EQ(stop.signal, SIGSTOP);
  EXPECT_EQ(stop.nth, 12);
  EXPECT_TRUE(stop.error.empty());
  const FailpointSpec counted = parse_failpoint("finished@10#2");
  EXPECT_EQ(counted.rank, 10);
  EXPECT_EQ(counted.signal, SIGKILL);
  EXPECT_EQ(counted.nth, 2);
  EXPECT_TRUE(counted.error.empty());
  const FailpointSpec odd_name = parse_failpoint("a#b:c@1");
  EXPECT_EQ(odd_name.name, "a#b:c");
  EXPECT_EQ(odd_name.rank, 1);
  EXPECT_EQ(odd_name.nth, 1);
  EXPECT_TRUE(odd_name.error.empty());
  EXPECT_EQ(parse_failpoint("a@1:kill").signal, SIGKILL);
  EXPECT_TRUE(parse_failpoint("a@1:kill").error.empty());
}

TEST(Failpoint, MalformedValuesAreRefusedSayingWhy) {
  for (const char* v : {"all-reduce", "@1", "all-reduce@", "all-reduce@:kill", "all-reduce@#2"})
    EXPECT_EQ(parse_failpoint(v).error, "MIXLE_FAILPOINT = '" + std::string(v) + "' is not NAME@RANK[:kill|:stop][#N]")
        << v;
  EXPECT_EQ(parse_failpoint("a@one").error, "MIXLE_FAILPOINT = 'a@one': rank 'one' is not a rank");
  EXPECT_EQ(parse_failpoint("a@-1").error, "MIXLE_FAILPOINT = 'a@-1': rank '-1' is not a rank");
  EXPECT_EQ(parse_failpoint("a@1x").error, "MIXLE_FAILPOINT = 'a@1x': rank '1x' is not a rank");
  EXPECT_EQ(parse_failpoint("a@1:pause").error, "MIXLE_FAILPOINT = 'a@1:pause': action 'pause' is not kill or stop");
  EXPECT_EQ(parse_failpoint("a@1:stop#0").error, "MIXLE_FAILPOINT = 'a@1:stop#0': #N must be a count ≥ 1");
  EXPECT_EQ(parse_failpoint("a@1#2x").error, "MIXLE_FAILPOINT = 'a@1#2x': #N must be a count ≥ 1");
}

/// The wait status of a child that sets MIXLE_FAILPOINT = `value` and RANK = `rank` (unset when
/// null), reaches failpoint `name` `times` times and exits 0 — 3 when the failpoint throws (the
/// parent never reaches a failpoint, so the child reads the variable afresh).
int reach_in_child(const char* value, const char* rank, const char* name, int times) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::setenv("MIXLE_FAILPOINT", value, 1);
    if (rank)
      ::setenv("RANK", rank, 1);
    else
      ::unsetenv("RANK");
    try {
      for (int i = 0; i < times; ++i) failpoint(name);
    } catch (const InvalidInput&) {
      ::_exit(3);
    }
    ::_exit(0);
  }
  int status = 0;
  ::waitpid(pid, &status, WUNTRACED);
  if (WIFSTOPPED(status)) {
    ::kill(pid, SIGKILL);
    int ignored = 0;
    ::waitpid(pid, &ignored, 0);
  }
  return status;
}

TEST(Failpoint, ActsOnItsRankAtTheNthTimeOnly) {
  const int before = reach_in_child("all-reduce@1#3", "1", "all-reduce", 2);
  EXPECT_TRUE(WIFEXITED(before) && WEXITSTATUS(before) == 0) << "fired before the third time";
  const int at = reach_in_child("all-reduce@1#3", "1", "all-reduce", 3);
  EXPECT_TRUE(WIFSIGNALED(at) && WTERMSIG(at) == SIGKILL);
  const int other_rank = reach_in_child("all-reduce@1#3", "0", "all-reduce", 5);
  EXPECT_TRUE(WIFEXITED(other_rank) && WEXITSTATUS(other_rank) == 0);
  const int other_name = reach_in_child("all-reduce@1", "1", "finished", 5);
  EXPECT_TRUE(WIFEXITED(other_name) && WEXITSTATUS(other_name) == 0);
  const int stopped = reach_in_child("finished@2:stop", "2", "finished", 1);
  EXPECT_TRUE(WIFSTOPPED(stopped) && WSTOPSIG(stopped) == SIGSTOP);
  const int malformed = reach_in_child("finished@x", "0", "initialisation", 1);  // whatever the name
  EXPECT_TRUE(WIFEXITED(malformed) && WEXITSTATUS(malformed) == 3);
}

// A process started without a launcher has no RANK (or an empty one): it is rank 0.
TEST(Failpoint, AProcessWithoutRankIsRankZero) {
  for (const char* rank : {static_cast<const char*>(nullptr), ""}) {
    const int zero = reach_in_child("finished@0", rank, "finished", 1);
    EXPECT_TRUE(WIFSIGNALED(zero) && WTERMSIG(zero) == SIGKILL) << (rank ? "RANK empty" : "RANK unset");
    const int one = reach_in_child("finished@1", rank, "finished", 1);
    EXPECT_TRUE(WIFEXITED(one) && WEXITSTATUS(one) == 0) << (rank ? "RANK empty" : "RANK unset");
  }
}

}  // namespace
}  // namespace mixle::comms
