// Communicator types by registration: a type is a name, what the launch rules need to know
// about it, and a factory. The built-in ones (single, gloo, mpi, nccl) are registered from their
// own files (comms/comm_type.cpp lists them, one line each); an application registers more with
// register_comm_type(). The launch rules (host/launch_env), `mixle fit --comm`, `mixle info`
// and make_communicator() read this registry — nothing else names a type.
#pragma once

#include "comms/communicator.hpp"

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace mixle::comms {

struct CommType {
  std::string name;     ///< what --comm takes ("gloo")
  std::string summary;  ///< one line: what it runs on and how ranks meet
  /// Compiled into this build. A type mixle knows but was built without is registered with
  /// built = false, so asking for it says "not compiled" rather than "unknown".
  bool built = false;
  bool single_process = false;  ///< a world of one process only (single)
  /// Ranks meet through mixle's rendezvous store at MASTER_ADDR:MASTER_PORT (gloo, nccl):
  /// communicator_from_env hosts (rank 0) or joins it and hands it over in CommOptions::store.
  bool rendezvous = false;
  bool device_buffers = false;  ///< collectives on GPU memory: `auto` takes it for CUDA devices
  bool mpi_launch = false;      ///< its world is the MPI launcher's (mpirun, srun --mpi=pmix)
  /// Rendezvous types: fills this type's own options from the launch (`master_addr` is
  /// rank 0's host) before `make`; may be empty.
  std::function<void(CommOptions& options, const std::string& master_addr)> prepare = nullptr;
  /// Joins the group; CommOptions were checked (rank, size, timeout). Empty when not built.
  std::function<std::unique_ptr<Communicator>(CommOptions options)> make = nullptr;
};

/// Registers `type` (after the built-ins, in call order). Throws InvalidInput for an empty
/// name, a name already taken, or built = true without a factory.
void register_comm_type(CommType type);
/// The type registered as `name` (exact, lower case), or nullptr.
const CommType* find_comm_type(std::string_view name) noexcept;
/// The type registered as `name`; UsageError listing the registered names otherwise.
const CommType& comm_type(std::string_view name);
/// Every registered type, in registration order (the built-ins first: single, gloo, mpi, nccl).
std::vector<const CommType*> comm_types();
/// "single, gloo, mpi, nccl": the registered names, for messages and help.
std::string comm_type_names();
/// Whether `host` names this machine's loopback interface (localhost, ::1, 127.x.y.z).
bool is_loopback_address(std::string_view host) noexcept;

}  // namespace mixle::comms
