// Internal: constructors of each backend, called by make_communicator(). A backend's function is
// only defined when that backend is compiled (MIXLE_HAVE_GLOO/MPI/NCCL).
#pragma once

#include "comms/communicator.hpp"

#include <memory>

namespace mixle::comms::detail {

std::unique_ptr<Communicator> make_single_communicator(const CommOptions& options);
std::unique_ptr<Communicator> make_gloo_communicator(CommOptions options);
std::unique_ptr<Communicator> make_mpi_communicator(const CommOptions& options);
std::unique_ptr<Communicator> make_nccl_communicator(CommOptions options);

/// Bytes of one element of `type`.
constexpr std::size_t element_bytes(DataType type) noexcept {
  return type == DataType::float64 ? 8 : 4;
}

}  // namespace mixle::comms::detail

#include "comms/store.hpp"

namespace mixle::comms::detail {

/// Leaves the rendezvous at communicator teardown. Normally: say goodbye to the store, and on
/// rank 0 give the peers a bounded moment to say theirs before the store server stops. While an
/// exception unwinds: leave without a goodbye (peers then learn this rank was lost), and on rank 0
/// keep the store up a little longer so the peers can still find out which rank failed.
inline void leave_rendezvous(CommOptions& options) noexcept {
  const bool unwinding = std::uncaught_exceptions() > 0;
  if (options.store) {
    if (unwinding) options.store->abandon();
    else options.store->close();
  }
  if (options.store_server)
    options.store_server->drain(std::min(options.timeout, std::chrono::milliseconds(unwinding ? 3000 : 5000)));
}

}  // namespace mixle::comms::detail
