// The launch environment: which launcher started this process (torchrun, mpirun/srun with PMIx,
// SLURM, or none), this process's place in the job, and creating the Communicator from it.
//
// Detection order: torchrun variables (RANK + WORLD_SIZE + MASTER_ADDR/MASTER_PORT, also set by
// `mixle launch`) → OpenMPI/PMIx (OMPI_COMM_WORLD_*, PMIX_RANK) → SLURM (SLURM_PROCID, SLURM_NTASKS)
// → single process. See docs/distributed.md.
#pragma once

#include "comms/communicator.hpp"

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace mixle::host {

enum class Launcher { torchrun, mpi, slurm, single };
std::string_view to_string(Launcher launcher) noexcept;

/// Reads one environment variable; nullopt when unset. Tests pass their own.
using EnvLookup = std::function<std::optional<std::string>(const std::string&)>;
/// The process environment (getenv).
EnvLookup process_env();

/// This process's place in the job, as the launcher described it.
struct LaunchEnv {
  Launcher launcher = Launcher::single;
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;        ///< index on this node; picks the CUDA device
  int local_world_size = 1;  ///< processes on this node
  int node_rank = 0;         ///< GROUP_RANK / SLURM_NODEID / OMPI node rank
  std::string master_addr;   ///< rank 0's host (empty under mpirun without MASTER_ADDR)
  int master_port = 0;
  /// Port of the rendezvous store: MASTER_PORT, or MASTER_PORT+1 when the torchrun agent owns
  /// MASTER_PORT (TORCHELASTIC_USE_AGENT_STORE=True); MIXLE_STORE_PORT overrides both.
  int store_port = 0;
  bool agent_store = false;  ///< TORCHELASTIC_USE_AGENT_STORE=True
  int restart_count = 0;     ///< TORCHELASTIC_RESTART_COUNT
  std::string run_token;     ///< MIXLE_RUN_TOKEN, else TORCHELASTIC_RUN_ID, else SLURM job.step
  std::string error_file;    ///< TORCHELASTIC_ERROR_FILE (empty when unset)

  bool is_rank0() const noexcept { return rank == 0; }
};

/// Detects the launcher and reads its variables. Throws InvalidInput naming the variable when one
/// is malformed (not an integer, rank ≥ world size, …).
LaunchEnv detect_launch_env(const EnvLookup& env = process_env());

/// Resolves `--comm auto` or a registered type's name (comms/comm_type.hpp) to the type
/// to use, from the types' properties. auto: world size 1 → single; torchrun/SLURM → a built
/// rendezvous type on device buffers (nccl) when `want_device`, else one on host buffers
/// (gloo); mpirun → an MPI-launched type (mpi), else gloo when MASTER_ADDR is set. An explicit
/// choice must be registered (UsageError), built (NotCompiled) and fit the launcher (mpi under
/// torchrun is refused: each worker would be its own MPI world).
std::string resolve_comm(std::string_view requested, const LaunchEnv& env, bool want_device);

/// Creates the communicator for this process: rank 0 hosts the rendezvous store when the type
/// needs one (gloo, nccl), every rank connects to it with the run token, and the group forms within
/// `timeout` — which also becomes the deadline of every later collective. Rank 0 with a store
/// port of 0 and `on_store_port` binds a port the OS picks and calls on_store_port with it before
/// the group forms (the caller publishes it to the other ranks, which are given that port).
/// The first store of a process that inherited a socket listening on its port (MIXLE_STORE_FD:
/// `mixle launch` binds the port and hands it to rank 0) serves on that socket instead of binding
/// the port again — whatever launch description the caller gave; later stores bind their own.
std::unique_ptr<comms::Communicator> communicator_from_env(const LaunchEnv& env, std::string_view type,
                                                           std::chrono::milliseconds timeout,
                                                           const std::function<void(int port)>& on_store_port = {});

/// The compute device of a launched rank: "cuda" and "auto" become the GPU LOCAL_RANK picks
/// among `visible_devices` — or the one visible GPU of a process bound to one — as "cuda:i" (the
/// rule the nccl communicator follows too: comms/local_device.hpp). Any other device, and any
/// device when none is visible, stays as given (make_compute then says why "cuda" cannot run).
std::string rank_device(const std::string& device, int local_rank, int visible_devices);

/// Writes TORCHELASTIC_ERROR_FILE (when env.error_file is set) in the JSON shape torchelastic's
/// error handler writes, so torchrun's failure summary shows `message`. Never throws; returns
/// whether a file was written.
bool write_error_file(const LaunchEnv& env, std::string_view message);

}  // namespace mixle::host
