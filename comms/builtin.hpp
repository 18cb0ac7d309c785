// Internal: the built-in types' registry entries (comms/comm_type.cpp lists them). Each is
// defined in its type's own file, and only when that type is compiled
// (MIXLE_HAVE_GLOO/MPI/NCCL).
#pragma once

#include "comms/comm_type.hpp"
#include "comms/communicator.hpp"

#include <memory>

namespace mixle::comms::detail {

CommType single_comm_type();
CommType gloo_comm_type();
CommType mpi_comm_type();
CommType nccl_comm_type();

/// Bytes of one element of `type`.
constexpr std::size_t element_bytes(DataType type) noexcept { return type == DataType::float64 ? 8 : 4; }

}  // namespace mixle::comms::detail

#include "comms/peer_failure.hpp"
#include "comms/store.hpp"

namespace mixle::comms::detail {

/// Longest wait of rank 0's store for its peers after rank 0 failed (before kReportPatience).
constexpr std::chrono::milliseconds kMaxFailureLinger{10'000};

/// Leaves the rendezvous at communicator teardown. Only a world communicator calls this: it owns
/// the rendezvous (split children share its store client and leave it alone). Normally: say goodbye
/// to the store, and on rank 0 give the peers a bounded moment to say theirs before the store
/// server stops. While an exception unwinds: leave without a goodbye (peers then learn this rank
/// was lost), and on rank 0 keep the store up until every peer has left, for at most one timeout
/// (capped at 10 s) plus the peers' report patience: a peer still blocked in a collective, or
/// scheduled late, learns of the failure up to a timeout later and must then still find the store
/// to name the failed rank rather than rank 0. Drain returns as soon as every peer has gone, and a
/// launcher ends rank 0 sooner when a peer exits, so the wait is only paid when a peer hangs; the
/// cap keeps rank 0's own error from being held back for a whole long timeout.
inline void leave_rendezvous(CommOptions& options) noexcept {
  const bool unwinding = std::uncaught_exceptions() > 0;
  if (options.store) {
    if (unwinding)
      options.store->abandon();
    else
      options.store->close();
  }
  if (options.store_server)
    options.store_server->drain(unwinding ? std::min(options.timeout, kMaxFailureLinger) + kReportPatience
                                          : std::min(options.timeout, std::chrono::milliseconds(5000)));
}

}  // namespace mixle::comms::detail
