// The Communicator: collectives over a fixed group of ranks, one object per process.
//
// Communicator types: `single` (world size 1, always built), `gloo` (CPU, TCP), `mpi` (CPU, OpenMPI, under
// mpirun/srun) and `nccl` (GPU; one process per GPU). Create one with
// make_communicator(), or from the launch environment with mixle::host::communicator_from_env()
// (host/launch_env.hpp), which also hosts/joins the rendezvous store.
//
// Guarantees every communicator keeps (the engine relies on them, docs/design.md §8):
//  - After all_reduce_sum/all_reduce_max every rank holds the same bytes (bit-identical), so every
//    rank computes the identical M-step. Gloo's ring and NCCL deliver that; MPI does it by
//    reduce-to-root + broadcast (see mpi_communicator.cpp for why).
//  - Every blocking call honours the timeout given at creation and throws mixle::CommunicationError
//    naming the rank it lost or waited for, never hangs. After such an error the communicator is
//    broken: the only safe thing left is to destroy it and exit non-zero.
//  - Calls are collective: every rank must make the same calls in the same order with the same
//    counts. Not thread-safe: one thread per communicator at a time.
//
// Buffers: single, gloo and mpi take host buffers. nccl takes device buffers without copies, and
// also host buffers, which it stages through a device buffer it owns (copy in, collective, copy
// back), so host-side engine code works unchanged; device buffers avoid those two copies.
//
// Sub-communicators: split(color, key) forms groups of ranks (like MPI_Comm_split), e.g. the data
// and component groups of a component-sharded fit. A child keeps every guarantee above and the
// parent's timeout; its errors name ranks in world numbering. The parent stays usable, and parent
// and children may be used alternately from one thread. Destroy children before their parent: the
// world communicator owns the rendezvous store's lifetime, and a gloo/nccl child that outlives it
// can no longer ask the store which rank failed (MPI is finalised after the last mpi communicator).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace mixle::comms {

class StoreClient;
class StoreServer;

/// Where a buffer lives. single/gloo/mpi take host buffers; nccl takes device (CUDA) pointers, and
/// host buffers through a device staging copy.
enum class MemorySpace { host, device };

/// Element type of a reduction.
enum class DataType { float32, float64 };

/// Reduction operator.
enum class ReduceOp { sum, max };

/// What a communicator needs to join its group.
struct CommOptions {
  int rank = 0;  ///< this process's rank in [0, size)
  int size = 1;  ///< world size
  /// Deadline of every blocking call (connection, collective, barrier).
  std::chrono::milliseconds timeout{60'000};
  /// Rendezvous store (required by gloo and nccl; unused by single and mpi).
  std::shared_ptr<StoreClient> store;
  /// Rank 0's store server, kept alive as long as the communicator (null on other ranks).
  std::shared_ptr<StoreServer> store_server;
  /// Namespace prefixed to every store key this communicator writes (unique per run and restart).
  std::string store_prefix = "mixle/";
  /// gloo: the local address the TCP transport binds and advertises to peers (gloo's `prepare`
  /// sets it from MIXLE_GLOO_HOSTNAME, or this host's name when the rendezvous is not loopback).
  std::string gloo_hostname = "127.0.0.1";
  /// nccl: this rank's LOCAL_RANK; the device is chosen from it by device_for_local_rank
  /// (comms/local_device.hpp).
  int cuda_device = 0;
};

/// Collectives over a group of ranks. Public calls validate their arguments at the door (throwing
/// InvalidInput with the numbers) and then call the communicator's *_impl, which trusts them.
class Communicator {
 public:
  virtual ~Communicator() = default;
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  int rank() const noexcept { return rank_; }
  int size() const noexcept { return size_; }
  std::chrono::milliseconds timeout() const noexcept { return timeout_; }
  /// "single", "gloo", "mpi" or "nccl".
  virtual std::string_view type() const noexcept = 0;
  /// The memory space collectives work in without copies (host, or device for nccl).
  virtual MemorySpace memory_space() const noexcept = 0;
  /// Whether collectives accept buffers in `space`: memory_space() always; nccl also host buffers
  /// (staged through a device buffer); single also device buffers (nothing moves at size 1).
  virtual bool accepts(MemorySpace space) const noexcept { return space == memory_space(); }

  /// Splits this communicator into disjoint groups, like MPI_Comm_split. Collective: every rank of
  /// this communicator calls it. Returns a communicator over the ranks that passed the same
  /// `color` (≥ 0), ranked by (`key`, rank here); it has this communicator's type and timeout.
  /// Costs one all-gather of (color, key) here (not counted in collective_bytes()) plus the
  /// communicator type's group setup. Throws InvalidInput for color < 0, CommunicationError on failure.
  std::unique_ptr<Communicator> split(int color, int key);

  /// The world rank (rank in the communicator made by make_communicator) of rank `r` here;
  /// the identity on a world communicator. Error messages of a child name world ranks.
  int world_rank(int r) const;

  /// In-place element-wise sum over ranks; afterwards every rank holds the same bytes.
  /// `data` lives in `space` (host or device); its length must match on every rank.
  void all_reduce_sum(std::span<double> data, MemorySpace space = MemorySpace::host);
  void all_reduce_sum(std::span<float> data, MemorySpace space = MemorySpace::host);
  /// In-place element-wise maximum over ranks.
  void all_reduce_max(std::span<double> data, MemorySpace space = MemorySpace::host);
  void all_reduce_max(std::span<float> data, MemorySpace space = MemorySpace::host);

  /// Copies `bytes` bytes at `data` from rank `root` to every rank (in place).
  void broadcast_bytes(void* data, std::size_t bytes, int root, MemorySpace space = MemorySpace::host);
  /// Typed broadcast of a span of trivially copyable elements from `root`.
  template <class T>
  void broadcast(std::span<T> data, int root, MemorySpace space = MemorySpace::host) {
    broadcast_bytes(data.data(), data.size_bytes(), root, space);
  }

  /// Gathers every rank's `bytes_per_rank` bytes at `send` into `recv` (size() × bytes_per_rank
  /// bytes, rank r's block at offset r × bytes_per_rank) on every rank.
  void all_gather_bytes(const void* send, std::size_t bytes_per_rank, void* recv,
                        MemorySpace space = MemorySpace::host);
  /// Typed all-gather: `recv.size()` must be size() × `send.size()`.
  template <class T>
  void all_gather(std::span<const T> send, std::span<T> recv, MemorySpace space = MemorySpace::host) {
    check_gather_sizes(send.size(), recv.size());
    all_gather_bytes(send.data(), send.size_bytes(), recv.data(), space);
  }

  /// Returns once every rank has entered the barrier (or throws at the timeout).
  void barrier();

  /// Payload bytes this rank handed to collectives so far (the logical buffer sizes, not wire
  /// traffic): what a StepReceipt reports as collective bytes.
  std::uint64_t collective_bytes() const noexcept { return collective_bytes_; }

 protected:
  /// `world_ranks`: world rank of each rank here (empty: a world communicator, the identity).
  Communicator(int rank, int size, std::chrono::milliseconds timeout, std::vector<int> world_ranks = {});

  /// The group a split() forms, as every rank computed it from the all-gathered (color, key).
  struct SplitGroup {
    int color = 0;
    int key = 0;
    int rank = 0;                    ///< this rank's rank in the child
    std::vector<int> members;        ///< ranks here, in child rank order
    std::vector<int> world_members;  ///< the same ranks in world numbering
  };
  /// Forms the child of `group`; called by split() on every rank once the group is known.
  virtual std::unique_ptr<Communicator> split_impl(const SplitGroup& group) = 0;
  /// Whether this is a world communicator (no parent).
  bool is_world() const noexcept { return world_ranks_.empty(); }
  /// " (world rank W)" for a child, "" for a world communicator: for error messages.
  std::string world_suffix() const;

  virtual void all_reduce_impl(void* data, std::size_t count, DataType type, ReduceOp op, MemorySpace space) = 0;
  virtual void broadcast_impl(void* data, std::size_t bytes, int root, MemorySpace space) = 0;
  virtual void all_gather_impl(const void* send, std::size_t bytes_per_rank, void* recv, MemorySpace space) = 0;
  virtual void barrier_impl() = 0;

 private:
  void check_space(MemorySpace space, std::string_view call) const;
  SplitGroup split_group(int color, int key);
  void check_gather_sizes(std::size_t send, std::size_t recv) const;
  void all_reduce_checked(void* data, std::size_t count, DataType type, ReduceOp op, MemorySpace space,
                          std::string_view call);

  int rank_;
  int size_;
  std::chrono::milliseconds timeout_;
  std::vector<int> world_ranks_;
  std::uint64_t collective_bytes_ = 0;
};

/// Creates a communicator of the registered type `type` (comms/comm_type.hpp). Throws
/// UsageError for an unknown name, NotCompiled("gloo") etc. when this build lacks the type,
/// InvalidInput for a bad rank/size or a missing store, CommunicationError when the group cannot be
/// formed within options.timeout.
std::unique_ptr<Communicator> make_communicator(std::string_view type, CommOptions options);

}  // namespace mixle::comms
