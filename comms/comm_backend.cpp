// The communicator backend registry (comms/comm_backend.hpp).
#include "comms/comm_backend.hpp"

#include "comms/backends.hpp"

#include <mixle/error.hpp>

#include <deque>
#include <mutex>

namespace mixle::comms {
namespace {

/// A backend mixle knows but this build lacks, with its properties (the launch rules still
/// name it): asking for it says "not compiled".
template <class Properties>
CommBackend not_built(std::string name, std::string summary, Properties properties) {
  CommBackend b;
  b.name = std::move(name);
  b.summary = std::move(summary) + " — not in this build";
  properties(b);
  return b;
}

struct Registry {
  std::mutex mutex;
  std::deque<CommBackend> backends;  // a deque: pointers stay valid as backends are added

  Registry() {
    // The built-in backends, one line each; a backend's own file says what it is.
    backends.push_back(detail::single_backend());
#if MIXLE_HAVE_GLOO
    backends.push_back(detail::gloo_backend());
#else
    backends.push_back(not_built("gloo", "CPU, TCP (Gloo)", [](CommBackend& b) { b.rendezvous = true; }));
#endif
#if MIXLE_HAVE_MPI
    backends.push_back(detail::mpi_backend());
#else
    backends.push_back(not_built("mpi", "CPU, MPI (under mpirun or srun --mpi=pmix)",
                                 [](CommBackend& b) { b.mpi_launch = true; }));
#endif
#if MIXLE_HAVE_NCCL
    backends.push_back(detail::nccl_backend());
#else
    backends.push_back(not_built("nccl", "GPU, NCCL", [](CommBackend& b) { b.rendezvous = b.device_buffers = true; }));
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
    if (b.name == backend.name)
      throw InvalidInput("register_comm_backend: the name '" + backend.name + "' is taken");
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
