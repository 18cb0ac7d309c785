// The communicator backend registry (comms/comm_backend.hpp).
#include "comms/comm_backend.hpp"

#include "comms/backends.hpp"

#include <mixle/error.hpp>

#include <deque>
#include <mutex>

namespace mixle::comms {
namespace {

/// The built-in backends as the launch rules see them, built or not: a backend this build lacks
/// keeps its properties (the rules still name it) and asking for it says "not compiled".
const CommBackend kKnown[] = {
    {.name = "gloo", .summary = "CPU, TCP (Gloo) — not in this build", .rendezvous = true},
    {.name = "mpi", .summary = "CPU, MPI (under mpirun or srun --mpi=pmix) — not in this build", .mpi_launch = true},
    {.name = "nccl", .summary = "GPU, NCCL — not in this build", .rendezvous = true, .device_buffers = true},
};

struct Registry {
  std::mutex mutex;
  std::deque<CommBackend> backends;  // a deque: pointers stay valid as backends are added

  /// Puts `built` in place of the known entry of the same name.
  void complete(CommBackend built) {
    for (CommBackend& b : backends)
      if (b.name == built.name) b = std::move(built);
  }

  Registry() {
    backends.push_back(detail::single_backend());
    for (const CommBackend& b : kKnown) backends.push_back(b);
      // Each compiled backend completes its entry from its own file: one line each.
#if MIXLE_HAVE_GLOO
    complete(detail::gloo_backend());
#endif
#if MIXLE_HAVE_MPI
    complete(detail::mpi_backend());
#endif
#if MIXLE_HAVE_NCCL
    complete(detail::nccl_backend());
#endif
  }
};

Registry& registry() {
  static Registry r;
  return r;
}

}  // namespace

void register_comm_backend(CommBackend backend) {
  if (backend.name.empty()) throw InvalidInput("register_comm_backend: the backend needs a name");
  if (backend.built && !backend.make)
    throw InvalidInput("register_comm_backend: '" + backend.name + "' is built but has no factory");
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  for (const CommBackend& b : r.backends)
    if (b.name == backend.name) throw InvalidInput("register_comm_backend: the name '" + backend.name + "' is taken");
  r.backends.push_back(std::move(backend));
}

const CommBackend* find_comm_backend(std::string_view name) noexcept {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  for (const CommBackend& b : r.backends)
    if (b.name == name) return &b;
  return nullptr;
}

const CommBackend& comm_backend(std::string_view name) {
  if (const CommBackend* b = find_comm_backend(name)) return *b;
  throw UsageError("unknown communicator '" + std::string(name) + "'; accepted: " + comm_backend_names() +
                   " (or auto where a launcher decides)");
}

std::vector<const CommBackend*> comm_backends() {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  std::vector<const CommBackend*> out;
  for (const CommBackend& b : r.backends) out.push_back(&b);
  return out;
}

std::string comm_backend_names() {
  std::string names;
  for (const CommBackend* b : comm_backends()) names += (names.empty() ? "" : ", ") + b->name;
  return names;
}

bool is_loopback_address(std::string_view host) noexcept {
  return host == "localhost" || host == "::1" || host.substr(0, 4) == "127.";
}

}  // namespace mixle::comms
