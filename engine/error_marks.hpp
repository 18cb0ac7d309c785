// Failures carried through collectives (docs/design.md §8): a rank that fails keeps making every
// collective, adding its mark to a reduce; afterwards every rank raises at the same point, so
// none waits for a peer that stopped. Used by the data-parallel handle and component sharding.
#pragma once

#include "comms/communicator.hpp"

#include <exception>

namespace mixle::engine {

/// This rank's mark for a sum reduce: 2^rank when `error` is set (exact in float64 up to 52
/// ranks; beyond, 1 — the ranks can then not be told apart), else 0.
double error_mark(const std::exception_ptr& error, int rank);

/// After a sum reduce that carried the marks (collective: every rank calls it with the same
/// `failed`): the lowest failing rank broadcasts its error; the failing ranks rethrow their own,
/// every other rank throws an error of the same type (a DeviceError stays a DeviceError;
/// ImpossibleEvidence keeps its rows, NotCompiled its feature; an exception from outside mixle
/// becomes mixle::Error) naming the failing ranks and quoting that message — so whichever rank's
/// output a user reads (a launcher stops the others once one exits), it says what went wrong.
/// Returns when `failed` is 0.
void raise_marks(double failed, const std::exception_ptr& error, comms::Communicator& comm, const char* what);

}  // namespace mixle::engine
