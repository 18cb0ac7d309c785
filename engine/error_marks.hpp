// Failures carried through collectives (docs/design.md §8): a rank that fails keeps making every
// collective, adding its mark to a reduce; afterwards every rank raises at the same point, so
// none waits for a peer that stopped. Used by the data-parallel handle and component sharding.
#pragma once

#include "comms/communicator.hpp"

#include <exception>
#include <functional>
#include <vector>

namespace mixle::engine {

/// This rank's mark for a sum reduce: 2^rank when `error` is set (exact in float64 up to 52
/// ranks; beyond, 1 — the ranks can then not be told apart), else 0.
double error_mark(const std::exception_ptr& error, int rank);

/// After a sum reduce that carried the marks (collective: every rank calls it with the same
/// `failed`): the lowest failing rank broadcasts its error; the failing ranks rethrow their own,
/// every other rank throws an error of the same type (a DeviceError stays a DeviceError;
/// ImpossibleEvidence keeps its first 16 rows, NotCompiled its feature; an exception from outside mixle
/// becomes mixle::Error) naming the failing ranks and quoting that message — so whichever rank's
/// output a user reads (a launcher stops the others once one exits), it says what went wrong.
/// Returns when `failed` is 0.
void raise_marks(double failed, const std::exception_ptr& error, comms::Communicator& comm, const char* what);

/// How `all_reduce_with_marks` sums its buffer: handed the values with the mark as their last,
/// and whether this rank failed. It must make exactly the collective every other rank makes.
using MarkedAllReduce = std::function<void(std::vector<double>& values, bool failed_here)>;

/// The whole pattern, collective: runs `local` (which may fill `values`, the buffer to sum),
/// catching what it throws; sums `values` over the ranks with this rank's error mark appended —
/// one collective, through `all_reduce` or, when none is given, comm's host all-reduce — and
/// then raise_marks. Every rank calls it with `values` of the same length, failed or not; it
/// returns `values` summed, at that length, when no rank failed.
void all_reduce_with_marks(comms::Communicator& comm, std::vector<double>& values, const std::function<void()>& local,
                           const char* what, const MarkedAllReduce& all_reduce = {});

}  // namespace mixle::engine
