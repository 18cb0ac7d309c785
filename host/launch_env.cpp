// Launch-environment detection and communicator creation (host/launch_env.hpp).
#include "host/launch_env.hpp"

#include "comms/comm_type.hpp"
#include "comms/local_device.hpp"
#include "comms/store.hpp"
#include "plan/slurm_tasks.hpp"

#include <mixle/error.hpp>

#include <nlohmann/json.hpp>

#include <sys/socket.h>
#include <unistd.h>

#include <charconv>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <mutex>

namespace mixle::host {
namespace {

std::optional<int> get_int(const EnvLookup& env, const std::string& name) {
  auto v = env(name);
  if (!v || v->empty()) return std::nullopt;
  std::size_t used = 0;
  try {
    long long x = std::stoll(*v, &used);
    if (x < INT32_MIN || x > INT32_MAX) throw std::out_of_range(name);
    if (used != v->size()) throw std::invalid_argument(name);
    return static_cast<int>(x);
  } catch (const std::exception&) {
    throw InvalidInput("environment variable " + name + "='" + *v +
                       "' is not an integer; accepted: a whole number below 2^31, as launchers set it");
  }
}

/// An optional variable: `fallback` when unset or empty.
int int_or(const EnvLookup& env, const std::string& name, int fallback) {
  return get_int(env, name).value_or(fallback);
}

/// The tasks SLURM runs on node `node`: its entry of SLURM_TASKS_PER_NODE ("2(x3),1": nodes 0–2
/// run 2, node 3 runs 1); 1 when the variable is unset.
int slurm_local_world_size(const EnvLookup& env, int node) {
  const auto text = env("SLURM_TASKS_PER_NODE");
  if (!text || text->empty()) return 1;
  const std::vector<std::int64_t> per_node = plan::detail::slurm_tasks_per_node(*text);
  if (static_cast<std::size_t>(node) >= per_node.size())  // a negative node too, cast past every size
    throw InvalidInput("environment variable SLURM_NODEID=" + std::to_string(node) +
                       " names no node of SLURM_TASKS_PER_NODE='" + *text + "' (" + std::to_string(per_node.size()) +
                       " nodes, numbered from 0)");
  const std::int64_t count = per_node[static_cast<std::size_t>(node)];
  if (count > INT32_MAX)
    throw InvalidInput("environment variable SLURM_TASKS_PER_NODE='" + *text + "' gives node " + std::to_string(node) +
                       " " + std::to_string(count) + " tasks; accepted: counts below 2^31");
  return static_cast<int>(count);
}

/// A variable the launcher always sets (its presence chose the launcher): empty is an error.
int required_int(const EnvLookup& env, const std::string& name) {
  const auto v = get_int(env, name);
  if (!v) throw InvalidInput("environment variable " + name + " is set but empty; expected an integer");
  return *v;
}

void validate(const LaunchEnv& e) {
  auto bad = [&](const std::string& what) {
    throw InvalidInput("launch environment (" + std::string(to_string(e.launcher)) + "): " + what);
  };
  if (e.world_size < 1) bad("world size " + std::to_string(e.world_size) + " must be ≥ 1");
  if (e.rank < 0 || e.rank >= e.world_size)
    bad("rank " + std::to_string(e.rank) + " is not in [0, " + std::to_string(e.world_size) + ")");
  if (e.local_world_size < 1 || e.local_rank < 0 || e.local_rank >= e.local_world_size)
    bad("local rank " + std::to_string(e.local_rank) + " is not in [0, " + std::to_string(e.local_world_size) + ")");
  if (e.master_port < 0 || e.master_port > 65535 || e.store_port < 0 || e.store_port > 65535)
    bad("port " + std::to_string(e.master_port) + "/" + std::to_string(e.store_port) + " is not in [0, 65535]");
}

}  // namespace

std::string_view to_string(Launcher launcher) noexcept {
  switch (launcher) {
    case Launcher::torchrun: return "torchrun";
    case Launcher::mpi: return "mpi";
    case Launcher::slurm: return "slurm";
    case Launcher::single: return "single";
  }
  return "?";
}

EnvLookup process_env() {
  return [](const std::string& name) -> std::optional<std::string> {
    const char* v = std::getenv(name.c_str());
    if (v == nullptr) return std::nullopt;
    return std::string(v);
  };
}

LaunchEnv detect_launch_env(const EnvLookup& env) {
  LaunchEnv e;
  if (env("RANK") && env("WORLD_SIZE")) {
    e.launcher = Launcher::torchrun;  // also `mixle launch`, which sets the same variables
    e.rank = required_int(env, "RANK");
    e.world_size = required_int(env, "WORLD_SIZE");
    e.local_rank = int_or(env, "LOCAL_RANK", 0);
    e.local_world_size = int_or(env, "LOCAL_WORLD_SIZE", 1);
    e.node_rank = int_or(env, "GROUP_RANK", 0);
  } else if (env("OMPI_COMM_WORLD_RANK") && env("OMPI_COMM_WORLD_SIZE")) {
    e.launcher = Launcher::mpi;
    e.rank = required_int(env, "OMPI_COMM_WORLD_RANK");
    e.world_size = required_int(env, "OMPI_COMM_WORLD_SIZE");
    e.local_rank = int_or(env, "OMPI_COMM_WORLD_LOCAL_RANK", 0);
    e.local_world_size = int_or(env, "OMPI_COMM_WORLD_LOCAL_SIZE", 1);
  } else if (env("PMIX_RANK") && (env("SLURM_NTASKS") || env("OMPI_UNIVERSE_SIZE"))) {
    e.launcher = Launcher::mpi;  // srun --mpi=pmix, or another PMIx launcher
    e.rank = required_int(env, "PMIX_RANK");
    // The world's size from whichever of the two chose this branch (SLURM's first); set and empty
    // is an error, as for every launcher's rank and size.
    e.world_size = env("SLURM_NTASKS") ? required_int(env, "SLURM_NTASKS") : required_int(env, "OMPI_UNIVERSE_SIZE");
    e.local_rank = int_or(env, "SLURM_LOCALID", 0);
    e.node_rank = int_or(env, "SLURM_NODEID", 0);
    e.local_world_size = slurm_local_world_size(env, e.node_rank);
  } else if (env("SLURM_PROCID") && env("SLURM_NTASKS")) {
    e.launcher = Launcher::slurm;
    e.rank = required_int(env, "SLURM_PROCID");
    e.world_size = required_int(env, "SLURM_NTASKS");
    e.local_rank = int_or(env, "SLURM_LOCALID", 0);
    e.node_rank = int_or(env, "SLURM_NODEID", 0);
    e.local_world_size = slurm_local_world_size(env, e.node_rank);
  }
  e.master_addr = env("MASTER_ADDR").value_or("");
  e.master_port = int_or(env, "MASTER_PORT", 0);
  e.agent_store = env("TORCHELASTIC_USE_AGENT_STORE").value_or("") == "True";
  // The torchrun agent owns MASTER_PORT when it hosts its own store; ours moves one port up.
  e.store_port =
      get_int(env, "MIXLE_STORE_PORT").value_or(e.master_port > 0 ? e.master_port + (e.agent_store ? 1 : 0) : 0);
  e.restart_count = int_or(env, "TORCHELASTIC_RESTART_COUNT", 0);
  if (auto t = env("MIXLE_RUN_TOKEN"); t && !t->empty())
    e.run_token = *t;
  else if (auto r = env("TORCHELASTIC_RUN_ID"); r && !r->empty())
    e.run_token = *r;
  else if (auto j = env("SLURM_JOB_ID"))
    e.run_token = "slurm-" + *j + "." + env("SLURM_STEP_ID").value_or("0");
  else
    e.run_token = "none";
  e.error_file = env("TORCHELASTIC_ERROR_FILE").value_or("");
  validate(e);
  return e;
}

std::string resolve_comm(std::string_view requested, const LaunchEnv& env, bool want_device) {
  using comms::CommType;
  const std::vector<const CommType*> all = comms::comm_types();
  // The first registered type with `property`, built or (for the message) not.
  auto first = [&](auto property, bool built) -> const CommType* {
    for (const CommType* b : all)
      if (property(*b) && (!built || b->built)) return b;
    return nullptr;
  };
  auto host_rendezvous = [](const CommType& b) { return b.rendezvous && !b.device_buffers; };
  auto device_rendezvous = [](const CommType& b) { return b.rendezvous && b.device_buffers; };
  auto mpi_launch = [](const CommType& b) { return b.mpi_launch; };
  auto missing = [&](auto property) -> NotCompiled {
    const CommType* b = first(property, false);
    return NotCompiled(b ? b->name : std::string("a communicator for this launch"));
  };
  if (requested == "auto") {
    if (env.world_size == 1) return "single";
    if (env.launcher == Launcher::mpi) {
      if (const CommType* b = first(mpi_launch, true)) return b->name;
      if (!env.master_addr.empty())
        if (const CommType* b = first(host_rendezvous, true)) return b->name;
      throw missing(mpi_launch);
    }
    if (want_device)
      if (const CommType* b = first(device_rendezvous, true)) return b->name;
    if (const CommType* b = first(host_rendezvous, true)) return b->name;
    throw missing(host_rendezvous);
  }
  const CommType& b = comms::comm_type(requested);
  if (!b.built) throw NotCompiled(b.name);
  if (b.single_process && env.world_size != 1)
    throw UsageError("--comm " + b.name + " needs world size 1, but the " + std::string(to_string(env.launcher)) +
                     " launch has " + std::to_string(env.world_size) + " ranks");
  if (b.mpi_launch && (env.launcher == Launcher::torchrun || env.launcher == Launcher::slurm) && env.world_size > 1)
    throw UsageError("--comm " + b.name + " needs a job started by mpirun or srun --mpi=pmix; under " +
                     std::string(to_string(env.launcher)) +
                     " every worker would be its own MPI world (use gloo or nccl)");
  return b.name;
}

namespace {

/// The listening socket `mixle launch` handed to rank 0 (its number in MIXLE_STORE_FD), for the
/// first store this process starts: binding the port anew would race every other process on the
/// machine for it, and fail while this process holds the socket. A descriptor is a process's, not
/// a launch description's, so it is read from the process environment even when the caller gave
/// its launch variables itself. Not taken (an invalid descriptor) when there is none, when it
/// was taken already, or when it is not a socket listening on `port` (a variable left from
/// elsewhere, or MIXLE_STORE_PORT naming another port): the store then binds its port itself.
comms::FileDescriptor take_handed_listener(int port) {
  static std::mutex mutex;
  static bool taken = false;
  const char* text = std::getenv("MIXLE_STORE_FD");
  int fd = -1;
  if (text == nullptr) return {};
  const char* end = text + std::strlen(text);
  if (auto [at, ec] = std::from_chars(text, end, fd); ec != std::errc() || at != end || at == text || fd < 0) return {};
  const std::lock_guard lock(mutex);
  int listening = 0;
  socklen_t size = sizeof listening;
  if (taken || ::getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &size) != 0 || listening == 0) return {};
  try {
    if (comms::local_port(fd) != port) return {};
  } catch (const std::exception&) {
    return {};
  }
  taken = true;
  return comms::FileDescriptor(fd);
}

}  // namespace

std::unique_ptr<comms::Communicator> communicator_from_env(const LaunchEnv& env, std::string_view type,
                                                           std::chrono::milliseconds timeout,
                                                           const std::function<void(int port)>& on_store_port) {
  const comms::CommType& b = comms::comm_type(type);
  comms::CommOptions o;
  o.rank = env.rank;
  o.size = env.world_size;
  o.timeout = timeout;
  o.cuda_device = env.local_rank;
  if (b.built && b.rendezvous) {
    // Port 0 is a port for rank 0 to pick only when it can tell the others which it picked.
    const bool picks_port = env.is_rank0() && env.store_port == 0 && on_store_port;
    if (env.master_addr.empty() || (env.store_port <= 0 && !picks_port))
      throw InvalidInput("the " + b.name +
                         " communicator needs MASTER_ADDR and MASTER_PORT (rank 0's host and the "
                         "rendezvous port); set them, or launch with torchrun or `mixle launch`");
    const bool loopback = comms::is_loopback_address(env.master_addr);
    int port = env.store_port;
    if (env.is_rank0()) {
      comms::FileDescriptor handed = take_handed_listener(port);
      o.store_server =
          handed.valid() ? std::make_shared<comms::StoreServer>(std::move(handed), env.run_token)
                         : std::make_shared<comms::StoreServer>(loopback ? env.master_addr : "*", port, env.run_token);
      port = o.store_server->port();
      if (picks_port) on_store_port(port);
    }
    o.store = std::make_shared<comms::StoreClient>(env.master_addr, port, env.run_token, env.rank, timeout, timeout);
    // Restarts of the same run get fresh keys, so nothing from the failed attempt is read back.
    o.store_prefix = "mixle/" + env.run_token + "/" + std::to_string(env.restart_count) + "/";
    if (b.prepare) b.prepare(o, env.master_addr);
  }
  return comms::make_communicator(b.name, std::move(o));
}

bool write_error_file(const LaunchEnv& env, std::string_view message) {
  if (env.error_file.empty()) return false;
  try {
    // The shape torch.distributed.elastic's error handler writes; torchrun prints message and
    // py_callstack in its failure summary.
    nlohmann::json j = {{"message",
                         {{"message", std::string("MixleError: ") + std::string(message)},
                          {"extraInfo",
                           {{"py_callstack", "(C++ engine, no Python stack)"},
                            {"timestamp", std::to_string(static_cast<long long>(std::time(nullptr)))}}}}}};
    std::ofstream out(env.error_file, std::ios::trunc);
    out << j.dump() << "\n";
    return static_cast<bool>(out);
  } catch (...) {
    return false;
  }
}

std::string rank_device(const std::string& device, int local_rank, int visible_devices) {
  if (visible_devices > 0 && (device == "cuda" || device == "auto"))
    return "cuda:" + std::to_string(comms::device_for_local_rank(local_rank, visible_devices));
  return device;
}

}  // namespace mixle::host
