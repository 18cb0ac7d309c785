// The `mpi` communicator: OpenMPI on host buffers, for jobs started by mpirun or srun.
//
// Why all-reduce is reduce-to-root + broadcast: MPI_Allreduce does not promise that every rank gets
// the same bits (recursive doubling adds in a rank-dependent order, so floating-point sums can differ
// in the last place between ranks). The engine needs bit-identical statistics on every rank so that
// every rank computes the identical M-step (docs/design.md §8). Reducing to rank 0 and broadcasting its
// result gives every rank rank 0's bytes, at the price of one extra latency step.
//
// Timeouts: MPI has no collective timeout, so every collective is non-blocking (MPI-3 I-variants)
// and polled with MPI_Test against the deadline. A timed-out collective cannot be cancelled: the
// communicator is then broken, is not finalised, and the process should exit non-zero, upon which
// mpirun terminates the whole job (that is also how a killed rank ends an MPI job).
#include "comms/builtin.hpp"

#include <mixle/error.hpp>

#include <mpi.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <thread>

namespace mixle::comms::detail {
namespace {

// Largest element count handed to one MPI call (MPI counts are int): 2^30, or
// MIXLE_MPI_MAX_CHUNK (a positive integer up to 2^30) — small values let the process tests cover
// the chunk loop without sending gigabytes.
std::size_t max_chunk_elements() {
  constexpr std::size_t kDefault = std::size_t{1} << 30;
  const char* text = std::getenv("MIXLE_MPI_MAX_CHUNK");
  if (text == nullptr || *text == '\0') return kDefault;
  char* end = nullptr;
  errno = 0;
  const unsigned long long v = std::strtoull(text, &end, 10);
  if (errno != 0 || *end != '\0' || text[0] == '-' || v < 1 || v > kDefault)
    throw InvalidInput(std::string("MIXLE_MPI_MAX_CHUNK='") + text + "': expected an integer from 1 to " +
                       std::to_string(kDefault));
  return static_cast<std::size_t>(v);
}

std::string mpi_error_text(int code) {
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(code, text, &len);
  return std::string(text, static_cast<std::size_t>(len));
}

// Finalises MPI (when mixle initialised it) once the last communicator that uses it is gone: a
// world communicator and its split children share one, so children may outlive their parent. A
// failure anywhere poisons it: MPI_Finalize could then block on the broken collective, so the
// process is left to exit and mpirun to clean up.
struct MpiRuntime {
  bool owns_init = false;
  bool poisoned = false;
  ~MpiRuntime() {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (owns_init && !poisoned && !finalized) MPI_Finalize();
  }
};

class MpiCommunicator final : public Communicator {
 public:
  MpiCommunicator(MPI_Comm comm, int rank, int size, std::shared_ptr<MpiRuntime> runtime,
                  std::chrono::milliseconds timeout, std::vector<int> world_ranks = {})
      : Communicator(rank, size, timeout, std::move(world_ranks)), comm_(comm), runtime_(std::move(runtime)) {}

  ~MpiCommunicator() override {
    if (broken_) return;    // never block in teardown after a failure; exit and let mpirun clean up
    MPI_Comm_free(&comm_);  // before runtime_ (a member) may finalise MPI
  }

  std::string_view type() const noexcept override { return "mpi"; }
  MemorySpace memory_space() const noexcept override { return MemorySpace::host; }

 protected:
  void all_reduce_impl(void* data, std::size_t count, DataType type, ReduceOp op, MemorySpace) override {
    MPI_Datatype dt = type == DataType::float64 ? MPI_DOUBLE : MPI_FLOAT;
    MPI_Op mop = op == ReduceOp::sum ? MPI_SUM : MPI_MAX;
    const std::size_t esize = element_bytes(type);
    for (std::size_t off = 0; off < count; off += max_chunk_) {
      int n = static_cast<int>(std::min(max_chunk_, count - off));
      char* p = static_cast<char*>(data) + off * esize;
      MPI_Request req;
      check(MPI_Ireduce(rank() == 0 ? MPI_IN_PLACE : p, p, n, dt, mop, 0, comm_, &req), "reduce");
      wait(req, "reduce to rank 0");
      check(MPI_Ibcast(p, n, dt, 0, comm_, &req), "broadcast");
      wait(req, "broadcast of the reduced result");
    }
  }

  void broadcast_impl(void* data, std::size_t bytes, int root, MemorySpace) override {
    for (std::size_t off = 0; off < bytes; off += max_chunk_) {
      int n = static_cast<int>(std::min(max_chunk_, bytes - off));
      MPI_Request req;
      check(MPI_Ibcast(static_cast<char*>(data) + off, n, MPI_BYTE, root, comm_, &req), "broadcast");
      wait(req, "broadcast from rank " + std::to_string(root));
    }
  }

  void all_gather_impl(const void* send, std::size_t bytes, void* recv, MemorySpace) override {
    if (bytes > static_cast<std::size_t>(INT_MAX))
      throw InvalidInput("mpi all_gather: " + std::to_string(bytes) + " bytes per rank; at most " +
                         std::to_string(INT_MAX) + " are supported");
    // MPI forbids aliased send/receive buffers: place our block first and gather in place.
    char* own = static_cast<char*>(recv) + static_cast<std::size_t>(rank()) * bytes;
    std::memmove(own, send, bytes);
    MPI_Request req;
    check(MPI_Iallgather(MPI_IN_PLACE, 0, MPI_BYTE, recv, static_cast<int>(bytes), MPI_BYTE, comm_, &req),
          "all_gather");
    wait(req, "all_gather");
  }

  // The (color, key) all-gather split() ran first was polled against the deadline, so every rank
  // has reached the split and MPI_Comm_split (which has no non-blocking form) cannot wait on a
  // rank that never comes; a rank dying between the two still blocks it, like any MPI job.
  std::unique_ptr<Communicator> split_impl(const SplitGroup& group) override {
    if (broken_) throw CommunicationError("mpi communicator is unusable after an earlier failure");
    MPI_Comm child = MPI_COMM_NULL;
    check(MPI_Comm_split(comm_, group.color, group.key, &child), "comm_split");
    MPI_Comm_set_errhandler(child, MPI_ERRORS_RETURN);  // errors become exceptions, not aborts
    int rank = 0, size = 1;
    MPI_Comm_rank(child, &rank);
    MPI_Comm_size(child, &size);
    if (rank != group.rank || size != static_cast<int>(group.members.size())) {
      MPI_Comm_free(&child);
      throw CommunicationError("mpi split: MPI made rank " + std::to_string(rank) + " of " + std::to_string(size) +
                               " but the (color, key) exchange gave rank " + std::to_string(group.rank) + " of " +
                               std::to_string(group.members.size()));
    }
    return std::make_unique<MpiCommunicator>(child, rank, size, runtime_, timeout(), group.world_members);
  }

  void barrier_impl() override {
    MPI_Request req;
    check(MPI_Ibarrier(comm_, &req), "barrier");
    wait(req, "barrier");
  }

 private:
  void mark_broken() {
    broken_ = true;
    runtime_->poisoned = true;
  }

  void check(int code, const char* what) {
    if (code == MPI_SUCCESS) return;
    mark_broken();
    throw CommunicationError("mpi " + std::string(what) + " failed on rank " + std::to_string(rank()) + world_suffix() +
                             ": " + mpi_error_text(code));
  }

  // Polls a request until it completes or the timeout passes. Spins briefly first because most
  // collectives on small statistics finish in microseconds, then backs off to ≤ 1 ms sleeps.
  void wait(MPI_Request& req, const std::string& what) {
    if (broken_) throw CommunicationError("mpi communicator is unusable after an earlier failure");
    const auto start = std::chrono::steady_clock::now();
    const auto deadline = start + timeout();
    auto pause = std::chrono::microseconds(1);
    for (int spins = 0;; ++spins) {
      int done = 0;
      check(MPI_Test(&req, &done, MPI_STATUS_IGNORE), what.c_str());
      if (done) return;
      if (std::chrono::steady_clock::now() >= deadline) {
        mark_broken();
        throw CommunicationError(
            "mpi " + what + " on rank " + std::to_string(rank()) + " of " + std::to_string(size()) + world_suffix() +
            " did not complete within " + std::to_string(timeout().count()) +
            " ms: a peer is hung or gone (MPI does not say which; mpirun reports a rank that died)");
      }
      if (spins > 1000) {
        std::this_thread::sleep_for(pause);
        pause = std::min(pause * 2, std::chrono::microseconds(1000));
      }
    }
  }

  MPI_Comm comm_;
  std::shared_ptr<MpiRuntime> runtime_;
  std::size_t max_chunk_ = max_chunk_elements();
  bool broken_ = false;
};

}  // namespace

namespace {

std::unique_ptr<Communicator> make_mpi_communicator(const CommOptions& options) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  auto runtime = std::make_shared<MpiRuntime>();
  if (!initialized) {
    int provided = 0;
    if (MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS)
      throw CommunicationError("MPI_Init_thread failed");
    runtime->owns_init = true;
  }
  MPI_Comm comm;
  MPI_Comm_dup(MPI_COMM_WORLD, &comm);
  MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);  // errors become exceptions, not aborts
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  if (rank != options.rank || size != options.size)
    throw InvalidInput("MPI says this is rank " + std::to_string(rank) + " of " + std::to_string(size) +
                       " but the launch environment says rank " + std::to_string(options.rank) + " of " +
                       std::to_string(options.size) +
                       " (was the job started by mpirun/srun? MPI cannot be used under torchrun)");
  return std::make_unique<MpiCommunicator>(comm, rank, size, std::move(runtime), options.timeout);
}

}  // namespace

CommType mpi_comm_type() {
  return {.name = "mpi",
          .summary = "CPU, MPI (under mpirun or srun --mpi=pmix: the launcher's world)",
          .built = true,
          .mpi_launch = true,
          .make = [](CommOptions o) { return make_mpi_communicator(o); }};
}

}  // namespace mixle::comms::detail
