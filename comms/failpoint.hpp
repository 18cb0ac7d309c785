// Failpoints: named places in a run where a test can make this process die or hang, to check what
// the other ranks and the files on disk do then (docs/testing.md, "Fault matrix"). Inert unless
// the environment variable MIXLE_FAILPOINT names one:
//   MIXLE_FAILPOINT=NAME@RANK[:kill|:stop][#N]
// makes the process whose RANK (the launch variable; 0 when unset) is RANK send itself SIGKILL
// (kill, the default) or SIGSTOP (stop) the N-th time (default 1) it reaches failpoint NAME.
// A malformed value fails the first failpoint reached with InvalidInput naming the variable.
#pragma once

#include <string>

namespace mixle::comms {

/// Names of the failpoints the code reaches (in the order a fit reaches them).
inline constexpr const char* kFailpointInitialisation = "initialisation";     // before each restart's initialisation
inline constexpr const char* kFailpointAllReduce = "all-reduce";              // before each statistics all-reduce
inline constexpr const char* kFailpointCheckpointWrite = "checkpoint-write";  // a checkpoint half written
inline constexpr const char* kFailpointFinished = "finished";  // after EM, before the final log-likelihood pass

/// What a MIXLE_FAILPOINT value asks.
struct FailpointSpec {
  std::string name;  // empty: no failpoint armed
  int rank = 0;
  int signal = 0;  // SIGKILL or SIGSTOP
  long nth = 1;
  std::string error;  // non-empty: the value is malformed, and this says how
};
/// Parses a MIXLE_FAILPOINT value (null or empty: nothing armed).
FailpointSpec parse_failpoint(const char* text);

/// Acts as MIXLE_FAILPOINT says when it names `name` and this rank; otherwise nothing.
void failpoint(const char* name);

}  // namespace mixle::comms
