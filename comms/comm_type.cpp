// The communicator type registry (comms/comm_type.hpp).
#include "comms/comm_type.hpp"

#include "comms/builtin.hpp"

#include <mixle/error.hpp>

#include <deque>
#include <mutex>

namespace mixle::comms {
namespace {

/// The built-in types as the launch rules see them, built or not: a type this build lacks
/// keeps its properties (the rules still name it) and asking for it says "not compiled".
const CommType kKnown[] = {
    {.name = "gloo", .summary = "CPU, TCP (Gloo) — not in this build", .rendezvous = true},
    {.name = "mpi", .summary = "CPU, MPI (under mpirun or srun --mpi=pmix) — not in this build", .mpi_launch = true},
    {.name = "nccl", .summary = "GPU, NCCL — not in this build", .rendezvous = true, .device_buffers = true},
};

struct Registry {
  std::mutex mutex;
  std::deque<CommType> types;  // a deque: pointers stay valid as types are added

  /// Puts `built` in place of the known entry of the same name.
  void complete(CommType built) {
    for (CommType& b : types)
      if (b.name == built.name) b = std::move(built);
  }

  Registry() {
    types.push_back(detail::single_comm_type());
    for (const CommType& b : kKnown) types.push_back(b);
      // Each compiled type completes its entry from its own file: one line each.
#if MIXLE_HAVE_GLOO
    complete(detail::gloo_comm_type());
#endif
#if MIXLE_HAVE_MPI
    complete(detail::mpi_comm_type());
#endif
#if MIXLE_HAVE_NCCL
    complete(detail::nccl_comm_type());
#endif
  }
};

Registry& registry() {
  static Registry r;
  return r;
}

}  // namespace

void register_comm_type(CommType type) {
  if (type.name.empty()) throw InvalidInput("register_comm_type: the type needs a name");
  if (type.built && !type.make)
    throw InvalidInput("register_comm_type: '" + type.name + "' is built but has no factory");
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  for (const CommType& b : r.types)
    if (b.name == type.name) throw InvalidInput("register_comm_type: the name '" + type.name + "' is taken");
  r.types.push_back(std::move(type));
}

const CommType* find_comm_type(std::string_view name) noexcept {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  for (const CommType& b : r.types)
    if (b.name == name) return &b;
  return nullptr;
}

const CommType& comm_type(std::string_view name) {
  if (const CommType* b = find_comm_type(name)) return *b;
  throw UsageError("unknown communicator '" + std::string(name) + "'; accepted: " + comm_type_names() +
                   " (or auto where a launcher decides)");
}

std::vector<const CommType*> comm_types() {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  std::vector<const CommType*> out;
  for (const CommType& b : r.types) out.push_back(&b);
  return out;
}

std::string comm_type_names() {
  std::string names;
  for (const CommType* b : comm_types()) names += (names.empty() ? "" : ", ") + b->name;
  return names;
}

bool is_loopback_address(std::string_view host) noexcept {
  return host == "localhost" || host == "::1" || host.substr(0, 4) == "127.";
}

}  // namespace mixle::comms
