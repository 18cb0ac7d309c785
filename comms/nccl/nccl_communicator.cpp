// The `nccl` communicator: device buffers, one process per GPU (LOCAL_RANK picks the device).
//
// NCCL has no timeout of its own, and a blocking communicator stuck on a dead peer never returns.
// So the communicator is non-blocking (config.blocking = 0): init and every collective are polled
// with ncclCommGetAsyncError and cudaStreamQuery against our deadline, and on timeout or error we
// call ncclCommAbort, which unblocks the GPU work, and throw CommunicationError (docs/design.md §10).
// The unique id travels through the rendezvous store: rank 0 creates it (its bootstrap listener
// lives in rank 0's process, which outlives the init), the others wait for it with the deadline.
//
// Collectives are synchronous for the caller: its writes to the buffer must be complete (its
// stream synchronised) before the call; on return the result is in the buffer.
//
// Host buffers (what the engine's host code passes) are staged: copied into a device buffer this
// communicator owns (grown on demand, never shrunk), reduced there, and copied back once the
// collective has completed. The copy back waits until after the polled collective because a copy
// to pageable host memory blocks the calling thread, which would put the collective beyond our
// deadline. Device buffers go to NCCL directly.
//
// split() uses ncclCommSplit with the same non-blocking config, polled like init.
#include "comms/builtin.hpp"
#include "comms/local_device.hpp"
#include "comms/peer_failure.hpp"

#include <mixle/error.hpp>

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <thread>

namespace mixle::comms::detail {
namespace {

#define MIXLE_COMMS_CUDA_TRY(call)                                                                         \
  do {                                                                                                     \
    cudaError_t mixle_err_ = (call);                                                                       \
    if (mixle_err_ != cudaSuccess)                                                                         \
      throw DeviceError(std::string(#call) + " failed: " + cudaGetErrorName(mixle_err_) + " (" +           \
                        cudaGetErrorString(mixle_err_) + ") at " __FILE__ ":" + std::to_string(__LINE__)); \
  } while (0)

// The stream, scratch word and staging buffer a communicator owns; freed even when construction
// fails part-way.
struct DeviceResources {
  cudaStream_t stream = nullptr;
  float* scratch = nullptr;  // one float on the device: the barrier's payload
  void* staging = nullptr;   // host buffers pass through here
  std::size_t staging_bytes = 0;
  DeviceResources() = default;
  DeviceResources(const DeviceResources&) = delete;
  DeviceResources& operator=(const DeviceResources&) = delete;
  ~DeviceResources() {
    if (staging != nullptr) cudaFree(staging);
    if (scratch != nullptr) cudaFree(scratch);
    if (stream != nullptr) cudaStreamDestroy(stream);
  }
};

// What a world communicator and its split children share: the store client (only the world
// communicator leaves the rendezvous) and the store namespace where failures are reported by
// world rank.
struct NcclShared {
  std::shared_ptr<StoreClient> store;
  std::string prefix;
  int cuda_device = 0;
};

class NcclCommunicator final : public Communicator {
 public:
  // A world communicator: owns the rendezvous; rank 0 publishes the unique id through the store.
  explicit NcclCommunicator(CommOptions o)
      : Communicator(o.rank, o.size, o.timeout), options_(std::move(o)), owns_rendezvous_(true) {
    shared_ = {options_.store, options_.store_prefix, options_.cuda_device};
    select_device();
    create_device_resources();

    ncclUniqueId id;
    const std::string key = options_.store_prefix + "nccl/unique_id";
    if (rank() == 0) {
      nccl_check(ncclGetUniqueId(&id), "ncclGetUniqueId");
      options_.store->set(key, std::string_view(id.internal, sizeof id.internal));
    } else {
      std::vector<char> bytes = options_.store->get(key, timeout());
      if (bytes.size() != sizeof id.internal)
        throw CommunicationError("nccl unique id from the store has " + std::to_string(bytes.size()) +
                                 " bytes; expected " + std::to_string(sizeof id.internal));
      std::memcpy(id.internal, bytes.data(), sizeof id.internal);
    }
    ncclConfig_t config = non_blocking_config();
    ncclResult_t r = ncclCommInitRankConfig(&comm_, size(), id, rank(), &config);
    if (r != ncclSuccess && r != ncclInProgress) nccl_check(r, "ncclCommInitRankConfig");
    wait_for("communicator init (rank " + std::to_string(rank()) + " of " + std::to_string(size()) + ", device " +
                 std::to_string(shared_.cuda_device) + ")",
             /*stream_work=*/false);
  }

  // A split child: `comm` comes from ncclCommSplit and may still be initialising; the current
  // device is the parent's.
  NcclCommunicator(const NcclShared& shared, const SplitGroup& group, ncclComm_t comm,
                   std::chrono::milliseconds timeout)
      : Communicator(group.rank, static_cast<int>(group.members.size()), timeout, group.world_members),
        shared_(shared),
        owns_rendezvous_(false),
        comm_(comm) {
    try {
      create_device_resources();
    } catch (...) {
      ncclCommAbort(comm_);  // no destructor runs for a half-built communicator
      throw;
    }
    wait_for("split communicator init (color " + std::to_string(group.color) + ")", /*stream_work=*/false);
    int nccl_rank = -1, nccl_size = 0;
    nccl_check(ncclCommUserRank(comm_, &nccl_rank), "ncclCommUserRank");
    nccl_check(ncclCommCount(comm_, &nccl_size), "ncclCommCount");
    if (nccl_rank != rank() || nccl_size != size())
      fail("split: NCCL made rank " + std::to_string(nccl_rank) + " of " + std::to_string(nccl_size) +
           " but the (color, key) exchange gave rank " + std::to_string(rank()) + " of " + std::to_string(size()));
  }

  ~NcclCommunicator() override {
    if (comm_ != nullptr) {
      bool clean = !broken_ && std::uncaught_exceptions() == 0;
      if (clean) {
        // Finalize flushes outstanding work; bounded, then Destroy. Abort otherwise: Destroy can
        // block forever on unfinished work.
        ncclResult_t r = ncclCommFinalize(comm_);
        auto deadline = std::chrono::steady_clock::now() + std::min(timeout(), std::chrono::milliseconds(10'000));
        ncclResult_t st = r;
        while (st == ncclInProgress && std::chrono::steady_clock::now() < deadline) {
          ncclCommGetAsyncError(comm_, &st);
          std::this_thread::yield();
        }
        clean = (r == ncclSuccess || r == ncclInProgress) && st == ncclSuccess;
      }
      if (clean)
        ncclCommDestroy(comm_);
      else
        ncclCommAbort(comm_);
    }
    // device_ is freed after this body, once the communicator is gone.
    if (owns_rendezvous_) leave_rendezvous(options_);
  }

  std::string_view type() const noexcept override { return "nccl"; }
  MemorySpace memory_space() const noexcept override { return MemorySpace::device; }
  bool accepts(MemorySpace) const noexcept override { return true; }  // host buffers are staged

 protected:
  void all_reduce_impl(void* data, std::size_t count, DataType type, ReduceOp op, MemorySpace space) override {
    ncclDataType_t dt = type == DataType::float64 ? ncclFloat64 : ncclFloat32;
    ncclRedOp_t rop = op == ReduceOp::sum ? ncclSum : ncclMax;
    const std::size_t bytes = count * element_bytes(type);
    void* buf = space == MemorySpace::host ? stage_in(data, bytes, 0, bytes) : data;
    enqueue(ncclAllReduce(buf, buf, count, dt, rop, comm_, stream_), "ncclAllReduce");
    wait_for("all_reduce of " + std::to_string(count) + " elements", true);
    if (space == MemorySpace::host) stage_out(data, buf, bytes);
  }
  void broadcast_impl(void* data, std::size_t bytes, int root, MemorySpace space) override {
    // Every rank stages its buffer in (only the root's bytes matter) so that all take one path.
    void* buf = space == MemorySpace::host ? stage_in(data, bytes, 0, bytes) : data;
    enqueue(ncclBroadcast(buf, buf, bytes, ncclUint8, root, comm_, stream_), "ncclBroadcast");
    wait_for("broadcast from rank " + std::to_string(root), true);
    if (space == MemorySpace::host) stage_out(data, buf, bytes);
  }
  void all_gather_impl(const void* send, std::size_t bytes, void* recv, MemorySpace space) override {
    const std::size_t total = bytes * static_cast<std::size_t>(size());
    if (space == MemorySpace::host) {
      // In place in the staging buffer: our block at its slot, which NCCL allows as the send buffer.
      const std::size_t own = bytes * static_cast<std::size_t>(rank());
      char* buf = static_cast<char*>(stage_in(send, bytes, own, total));
      enqueue(ncclAllGather(buf + own, buf, bytes, ncclUint8, comm_, stream_), "ncclAllGather");
      wait_for("all_gather", true);
      stage_out(recv, buf, total);
      return;
    }
    enqueue(ncclAllGather(send, recv, bytes, ncclUint8, comm_, stream_), "ncclAllGather");
    wait_for("all_gather", true);
  }
  std::unique_ptr<Communicator> split_impl(const SplitGroup& group) override {
    if (broken_) throw CommunicationError("nccl communicator is unusable after an earlier failure");
    ncclConfig_t config = non_blocking_config();
    ncclComm_t child = nullptr;
    enqueue(ncclCommSplit(comm_, group.color, group.key, &child, &config), "ncclCommSplit");
    try {
      // A non-blocking split is an operation of the parent: NCCL fills `child` only once the
      // parent's state has turned to success (NCCL 2.23 and later), and the child may then still
      // be initialising, which its constructor waits for.
      wait_for("split", /*stream_work=*/false);
      if (child == nullptr) fail("split (color " + std::to_string(group.color) + ") gave no communicator");
      return std::make_unique<NcclCommunicator>(shared_, group, child, timeout());
    } catch (...) {
      broken_ = true;  // the peers may be stuck in the split: this communicator cannot go on
      throw;
    }
  }
  void barrier_impl() override {
    // NCCL has no barrier: an all-reduce of one float on every rank is one.
    enqueue(ncclAllReduce(scratch_, scratch_, 1, ncclFloat32, ncclSum, comm_, stream_), "ncclAllReduce");
    wait_for("barrier", true);
  }

 private:
  // LOCAL_RANK picks the device, by the rule every launched process follows
  // (comms/local_device.hpp): one visible device is used whatever LOCAL_RANK is.
  void select_device() {
    int count = 0;
    cudaError_t e = cudaGetDeviceCount(&count);
    if (e == cudaErrorNoDevice || e == cudaErrorInsufficientDriver) {
      (void)cudaGetLastError();
      count = 0;
    } else {
      MIXLE_COMMS_CUDA_TRY(e);
    }
    const int device = device_for_local_rank(options_.cuda_device, count);
    shared_.cuda_device = device;
    MIXLE_COMMS_CUDA_TRY(cudaSetDevice(device));
  }

  static ncclConfig_t non_blocking_config() {
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0;  // so that init, split and collectives can be abandoned at our deadline
    return config;
  }

  void create_device_resources() {
    MIXLE_COMMS_CUDA_TRY(cudaStreamCreateWithFlags(&device_.stream, cudaStreamNonBlocking));
    MIXLE_COMMS_CUDA_TRY(cudaMalloc(&device_.scratch, sizeof(float)));
    stream_ = device_.stream;
    scratch_ = device_.scratch;
  }

  // Copies `bytes` host bytes at `host` to offset `at` of the staging buffer, grown to at least
  // `capacity` bytes; returns the staging buffer. The copy is queued on our stream, ahead of the
  // collective (a pageable source is copied out before this returns, so the caller's buffer may
  // be reused as soon as the collective returns).
  void* stage_in(const void* host, std::size_t bytes, std::size_t at, std::size_t capacity) {
    if (broken_) throw CommunicationError("nccl communicator is unusable after an earlier failure");
    if (device_.staging_bytes < capacity) {
      // Grow geometrically so that a run of slowly growing buffers reallocates a few times only.
      const std::size_t grown = std::max({capacity, device_.staging_bytes * 2, std::size_t{1} << 20});
      if (device_.staging != nullptr) {
        MIXLE_COMMS_CUDA_TRY(cudaFree(device_.staging));
        device_.staging = nullptr;
        device_.staging_bytes = 0;
      }
      MIXLE_COMMS_CUDA_TRY(cudaMalloc(&device_.staging, grown));
      device_.staging_bytes = grown;
    }
    char* staging = static_cast<char*>(device_.staging);
    MIXLE_COMMS_CUDA_TRY(cudaMemcpyAsync(staging + at, host, bytes, cudaMemcpyHostToDevice, stream_));
    return staging;
  }

  // Copies the finished result back to the host buffer, polled like a collective.
  void stage_out(void* host, const void* staging, std::size_t bytes) {
    MIXLE_COMMS_CUDA_TRY(cudaMemcpyAsync(host, staging, bytes, cudaMemcpyDeviceToHost, stream_));
    wait_for("copy of the result to the host buffer", true);
  }

  [[noreturn]] void fail(const std::string& what) {
    broken_ = true;
    if (comm_ != nullptr) {
      ncclCommAbort(comm_);  // unblocks our kernels waiting on the lost peer
      comm_ = nullptr;
    }
    std::vector<int> members(static_cast<std::size_t>(size()));
    for (int r = 0; r < size(); ++r) members[static_cast<std::size_t>(r)] = world_rank(r);
    throw CommunicationError("nccl " + what + " on rank " + std::to_string(rank()) + " of " + std::to_string(size()) +
                             world_suffix() + ": " +
                             describe_lost_peers(shared_.store.get(), shared_.prefix, world_rank(rank()), members,
                                                 !is_world(), std::min(timeout(), kReportPatience)));
  }

  void nccl_check(ncclResult_t r, const char* call) {
    if (r == ncclSuccess) return;
    fail(std::string(call) + " failed: " + ncclGetErrorString(r) + " (" +
         (comm_ ? ncclGetLastError(comm_) : ncclGetLastError(nullptr)) + ")");
  }

  void enqueue(ncclResult_t r, const char* call) {
    if (broken_) throw CommunicationError("nccl communicator is unusable after an earlier failure");
    if (r != ncclSuccess && r != ncclInProgress) nccl_check(r, call);
  }

  // Polls until NCCL reports no pending work and (for collectives) our stream has drained, or the
  // deadline passes; errors and timeouts abort the communicator.
  void wait_for(const std::string& what, bool stream_work) {
    const auto deadline = std::chrono::steady_clock::now() + timeout();
    for (int spins = 0;; ++spins) {
      ncclResult_t st = ncclSuccess;
      ncclResult_t q = ncclCommGetAsyncError(comm_, &st);
      if (q != ncclSuccess) nccl_check(q, "ncclCommGetAsyncError");
      if (st != ncclSuccess && st != ncclInProgress)
        fail(what + " failed: " + ncclGetErrorString(st) + " (" + ncclGetLastError(comm_) + ")");
      if (st == ncclSuccess) {
        if (!stream_work) return;
        cudaError_t c = cudaStreamQuery(stream_);
        if (c == cudaSuccess) return;
        if (c != cudaErrorNotReady) fail(what + ": CUDA error " + cudaGetErrorName(c));
      }
      if (std::chrono::steady_clock::now() >= deadline)
        fail(what + " did not complete within " + std::to_string(timeout().count()) + " ms");
      if (spins > 1000) std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  }

  CommOptions options_;  // a world communicator's creation options (for leave_rendezvous)
  NcclShared shared_;
  bool owns_rendezvous_;
  DeviceResources device_;
  cudaStream_t stream_ = nullptr;
  float* scratch_ = nullptr;
  ncclComm_t comm_ = nullptr;
  bool broken_ = false;
};

}  // namespace

CommType nccl_comm_type() {
  CommType b{.name = "nccl",
             .summary = "GPU, NCCL (one process per GPU); ranks meet through the rendezvous store",
             .built = true,
             .rendezvous = true,
             .device_buffers = true};
  b.prepare = [](CommOptions&, const std::string& master_addr) {
    // NCCL's bootstrap otherwise picks the first non-loopback interface (eth0), which a
    // loopback-only rendezvous cannot reach; an explicit NCCL_SOCKET_IFNAME is kept.
    if (is_loopback_address(master_addr)) ::setenv("NCCL_SOCKET_IFNAME", "lo", 0);
  };
  b.make = [](CommOptions o) -> std::unique_ptr<Communicator> {
    return std::make_unique<NcclCommunicator>(std::move(o));
  };
  return b;
}

}  // namespace mixle::comms::detail
