// Communicator base (argument checks, byte accounting) and make_communicator.
#include "comms/communicator.hpp"

#include "comms/builtin.hpp"
#include "comms/comm_type.hpp"
#include "comms/store.hpp"

#include <mixle/error.hpp>

#include <algorithm>

namespace mixle::comms {

Communicator::Communicator(int rank, int size, std::chrono::milliseconds timeout, std::vector<int> world_ranks)
    : rank_(rank), size_(size), timeout_(timeout), world_ranks_(std::move(world_ranks)) {}

int Communicator::world_rank(int r) const {
  if (r < 0 || r >= size_)
    throw InvalidInput("world_rank: " + std::to_string(r) + " is not a rank in [0, " + std::to_string(size_) + ")");
  return world_ranks_.empty() ? r : world_ranks_[static_cast<std::size_t>(r)];
}

std::string Communicator::world_suffix() const {
  return is_world() ? std::string() : " (world rank " + std::to_string(world_rank(rank_)) + ")";
}

std::unique_ptr<Communicator> Communicator::split(int color, int key) {
  if (color < 0)
    throw InvalidInput("split: color " + std::to_string(color) +
                       " is negative; every rank must pass a color ≥ 0 (each rank joins a group)");
  return split_impl(split_group(color, key));
}

// Every rank learns every rank's (color, key) and so computes the same groups and child ranks
// (MPI_Comm_split's rule: order by key, ties by rank here). Communicators that split natively (mpi,
// nccl) get the same numbering and use the group for world-rank names in their errors; gloo
// builds its child contexts from it. The exchange goes through all_gather_impl directly: it is
// setup, not payload, so it stays out of collective_bytes().
Communicator::SplitGroup Communicator::split_group(int color, int key) {
  const std::int32_t mine[2] = {color, key};
  std::vector<std::int32_t> all(2 * static_cast<std::size_t>(size_));
  all_gather_impl(mine, sizeof mine, all.data(), MemorySpace::host);
  SplitGroup group;
  group.color = color;
  group.key = key;
  for (int r = 0; r < size_; ++r)
    if (all[2 * static_cast<std::size_t>(r)] == color) group.members.push_back(r);
  std::stable_sort(group.members.begin(), group.members.end(), [&](int a, int b) {
    return all[2 * static_cast<std::size_t>(a) + 1] < all[2 * static_cast<std::size_t>(b) + 1];
  });
  for (std::size_t i = 0; i < group.members.size(); ++i) {
    if (group.members[i] == rank_) group.rank = static_cast<int>(i);
    group.world_members.push_back(world_rank(group.members[i]));
  }
  return group;
}

void Communicator::check_space(MemorySpace space, std::string_view call) const {
  if (!accepts(space))
    throw InvalidInput(std::string(call) + ": the " + std::string(type()) + " communicator takes " +
                       (memory_space() == MemorySpace::host ? "host" : "device") + " buffers, got a " +
                       (space == MemorySpace::host ? "host" : "device") + " buffer");
}

void Communicator::check_gather_sizes(std::size_t send, std::size_t recv) const {
  if (recv != send * static_cast<std::size_t>(size_))
    throw InvalidInput("all_gather: receive buffer has " + std::to_string(recv) +
                       " elements; expected size() × send = " + std::to_string(size_) + " × " + std::to_string(send));
}

void Communicator::all_reduce_checked(void* data, std::size_t count, DataType type, ReduceOp op, MemorySpace space,
                                      std::string_view call) {
  check_space(space, call);
  if (count == 0) return;
  if (data == nullptr)
    throw InvalidInput(std::string(call) + ": null buffer of " + std::to_string(count) + " elements");
  collective_bytes_ += count * detail::element_bytes(type);
  all_reduce_impl(data, count, type, op, space);
}

void Communicator::all_reduce_sum(std::span<double> d, MemorySpace s) {
  all_reduce_checked(d.data(), d.size(), DataType::float64, ReduceOp::sum, s, "all_reduce_sum");
}
void Communicator::all_reduce_sum(std::span<float> d, MemorySpace s) {
  all_reduce_checked(d.data(), d.size(), DataType::float32, ReduceOp::sum, s, "all_reduce_sum");
}
void Communicator::all_reduce_max(std::span<double> d, MemorySpace s) {
  all_reduce_checked(d.data(), d.size(), DataType::float64, ReduceOp::max, s, "all_reduce_max");
}
void Communicator::all_reduce_max(std::span<float> d, MemorySpace s) {
  all_reduce_checked(d.data(), d.size(), DataType::float32, ReduceOp::max, s, "all_reduce_max");
}

void Communicator::broadcast_bytes(void* data, std::size_t bytes, int root, MemorySpace space) {
  check_space(space, "broadcast");
  if (root < 0 || root >= size_)
    throw InvalidInput("broadcast: root " + std::to_string(root) + " is not a rank in [0, " + std::to_string(size_) +
                       ")");
  if (bytes == 0) return;
  if (data == nullptr) throw InvalidInput("broadcast: null buffer of " + std::to_string(bytes) + " bytes");
  collective_bytes_ += bytes;
  broadcast_impl(data, bytes, root, space);
}

void Communicator::all_gather_bytes(const void* send, std::size_t bytes_per_rank, void* recv, MemorySpace space) {
  check_space(space, "all_gather");
  if (bytes_per_rank == 0) return;
  if (send == nullptr || recv == nullptr) throw InvalidInput("all_gather: null buffer");
  collective_bytes_ += bytes_per_rank * static_cast<std::uint64_t>(size_);
  all_gather_impl(send, bytes_per_rank, recv, space);
}

void Communicator::barrier() { barrier_impl(); }

std::unique_ptr<Communicator> make_communicator(std::string_view type, CommOptions options) {
  const CommType& b = comm_type(type);
  if (!b.built) throw NotCompiled(b.name);
  if (options.size < 1 || options.rank < 0 || options.rank >= options.size)
    throw InvalidInput("communicator rank " + std::to_string(options.rank) + " of world size " +
                       std::to_string(options.size) + ": need 0 ≤ rank < size and size ≥ 1");
  if (options.timeout.count() <= 0)
    throw InvalidInput("communicator timeout " + std::to_string(options.timeout.count()) + " ms: must be positive");
  if (b.single_process && options.size != 1)
    throw InvalidInput("the " + b.name + " communicator needs world size 1, got " + std::to_string(options.size) +
                       " (use " + comm_type_names() + ")");
  if (b.rendezvous && !options.store) throw InvalidInput("the " + b.name + " communicator needs a rendezvous store");
  return b.make(std::move(options));
}

}  // namespace mixle::comms
