// NCCL in the CUDA simulator: the communicator calls mixle makes, between simulated devices in
// processes (or threads) of one machine. Each communicator is a folder under $TMPDIR named after
// its unique id; a rank takes part in a collective by writing its contribution there as a file
// (write, then rename: a peer never sees half of it), and the collective completes on a rank
// once every rank's file of that round is present — so a collective is a queued stream operation
// that stays "not ready" while peers are missing, exactly what a non-blocking NCCL communicator
// polled with cudaStreamQuery and ncclCommGetAsyncError expects. Results are computed in rank
// order, identical on every rank (NCCL promises identical results, not this order). Nothing
// waits without bound: a lost peer shows as a collective that never becomes ready, and the
// caller's deadline and ncclCommAbort take it from there, as with NCCL.
//
// Round files are removed once every rank has moved past them; a communicator's folder is
// removed by the last rank to finalise or destroy it (an aborted one is left behind).
#pragma once

#include "mixle/cudasim/runtime.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#define NCCL_MAJOR 2
#define NCCL_MINOR 28
#define NCCL_PATCH 9
#define NCCL_VERSION(X, Y, Z) (((X) <= 2 && (Y) <= 8) ? (X)*1000 + (Y)*100 + (Z) : (X)*10000 + (Y)*100 + (Z))
#define NCCL_VERSION_CODE NCCL_VERSION(NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH)
#define NCCL_UNIQUE_ID_BYTES 128
#define NCCL_SPLIT_NOCOLOR -1
#define NCCL_CONFIG_UNDEF_INT INT_MIN
#define NCCL_CONFIG_UNDEF_PTR NULL

typedef struct {
  char internal[NCCL_UNIQUE_ID_BYTES];
} ncclUniqueId;

typedef enum {
  ncclSuccess = 0,
  ncclUnhandledCudaError = 1,
  ncclSystemError = 2,
  ncclInternalError = 3,
  ncclInvalidArgument = 4,
  ncclInvalidUsage = 5,
  ncclRemoteError = 6,
  ncclInProgress = 7,
  ncclNumResults = 8
} ncclResult_t;

typedef enum { ncclSum = 0, ncclProd = 1, ncclMax = 2, ncclMin = 3, ncclAvg = 4 } ncclRedOp_t;

typedef enum {
  ncclInt8 = 0,
  ncclChar = 0,
  ncclUint8 = 1,
  ncclInt32 = 2,
  ncclInt = 2,
  ncclUint32 = 3,
  ncclInt64 = 4,
  ncclUint64 = 5,
  ncclFloat16 = 6,
  ncclHalf = 6,
  ncclFloat32 = 7,
  ncclFloat = 7,
  ncclFloat64 = 8,
  ncclDouble = 8,
  ncclBfloat16 = 9,
} ncclDataType_t;

typedef struct {
  std::size_t size;
  unsigned int magic;
  unsigned int version;
  int blocking;
  int cgaClusterSize;
  int minCTAs;
  int maxCTAs;
  const char* netName;
  int splitShare;
} ncclConfig_t;

#define NCCL_CONFIG_INITIALIZER                                                                                \
  {                                                                                                            \
    sizeof(ncclConfig_t), 0xcafebeef, NCCL_VERSION(NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH), NCCL_CONFIG_UNDEF_INT, \
        NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_PTR,            \
        NCCL_CONFIG_UNDEF_INT                                                                                  \
  }

/// One rank's view of a simulated communicator.
struct ncclComm {
  std::filesystem::path dir;  // shared by the communicator's ranks
  int rank = -1, nranks = 0;
  int device = 0;
  bool blocking = true;
  bool ready = false;  // init (or split) complete
  bool aborted = false;
  std::uint64_t rounds = 0;  // collectives queued so far
  int splits = 0;            // splits of this communicator so far
  // A communicator made by ncclCommSplit learns its rank and size when every parent rank has
  // announced its colour: until then these say where to look.
  std::filesystem::path split_dir;  // the parent's folder
  int split_index = -1, parent_rank = -1, parent_size = 0, color = 0;
  // A non-blocking split in progress on this (parent) communicator: as NCCL does (2.23 and
  // later), the caller's handle is filled only when the parent's state turns to success, and the
  // parent takes no other call until then.
  ncclComm* pending_child = nullptr;
  ncclComm** pending_out = nullptr;
  std::string last_error;
};
typedef struct ncclComm* ncclComm_t;

namespace mixle::cudasim::nccl {

inline std::string& global_error() {
  static std::string e;
  return e;
}

/// Aborted communicators: kept (reachable) for the queued operations that still point at them.
inline std::vector<ncclComm_t>& aborted_comms() {
  static auto* kept = new std::vector<ncclComm_t>();
  return *kept;
}

inline ncclResult_t fail(ncclComm_t comm, ncclResult_t r, const std::string& what) {
  (comm ? comm->last_error : global_error()) = what;
  report("NCCL: " + what);
  return r;
}

inline std::filesystem::path root() {
  const char* t = std::getenv("TMPDIR");
  return std::filesystem::path(t && *t ? t : "/tmp");
}

inline std::string token(const ncclUniqueId& id) {
  static const char* hex = "0123456789abcdef";
  std::string s;
  for (int i = 0; i < 16; ++i) {
    const auto b = static_cast<unsigned char>(id.internal[i]);
    s += hex[b >> 4], s += hex[b & 15];
  }
  return s;
}

inline bool present(const std::filesystem::path& p) {
  struct stat st;
  return ::stat(p.c_str(), &st) == 0;
}

/// Writes `bytes` to `p` so that a reader sees all of it or nothing.
inline bool publish(const std::filesystem::path& p, const void* bytes, std::size_t n) {
  const std::filesystem::path tmp = p.string() + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out.write(static_cast<const char*>(bytes), static_cast<std::streamsize>(n));
    if (!out) return false;
  }
  return std::rename(tmp.c_str(), p.c_str()) == 0;
}

inline std::vector<char> slurp(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::vector<char>(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

inline std::size_t type_bytes(ncclDataType_t t) {
  switch (t) {
    case ncclInt8:
    case ncclUint8: return 1;
    case ncclFloat16:
    case ncclBfloat16: return 2;
    case ncclInt32:
    case ncclUint32:
    case ncclFloat32: return 4;
    case ncclInt64:
    case ncclUint64:
    case ncclFloat64: return 8;
  }
  return 0;
}

template <class T>
void reduce_into(T* acc, const T* x, std::size_t n, ncclRedOp_t op) {
  for (std::size_t i = 0; i < n; ++i) {
    switch (op) {
      case ncclSum:
      case ncclAvg: acc[i] = static_cast<T>(acc[i] + x[i]); break;
      case ncclProd: acc[i] = static_cast<T>(acc[i] * x[i]); break;
      case ncclMax: acc[i] = x[i] > acc[i] ? x[i] : acc[i]; break;
      case ncclMin: acc[i] = x[i] < acc[i] ? x[i] : acc[i]; break;
    }
  }
}

/// Σ (or max, …) of the ranks' contributions, in rank order, into `out`.
inline bool reduce(const std::vector<std::vector<char>>& parts, void* out, std::size_t count, ncclDataType_t t,
                   ncclRedOp_t op) {
  const std::size_t bytes = count * type_bytes(t);
  std::memcpy(out, parts[0].data(), bytes);
  for (std::size_t r = 1; r < parts.size(); ++r) {
    const void* x = parts[r].data();
    switch (t) {
      case ncclInt8: reduce_into(static_cast<std::int8_t*>(out), static_cast<const std::int8_t*>(x), count, op); break;
      case ncclUint8:
        reduce_into(static_cast<std::uint8_t*>(out), static_cast<const std::uint8_t*>(x), count, op);
        break;
      case ncclInt32:
        reduce_into(static_cast<std::int32_t*>(out), static_cast<const std::int32_t*>(x), count, op);
        break;
      case ncclUint32:
        reduce_into(static_cast<std::uint32_t*>(out), static_cast<const std::uint32_t*>(x), count, op);
        break;
      case ncclInt64:
        reduce_into(static_cast<std::int64_t*>(out), static_cast<const std::int64_t*>(x), count, op);
        break;
      case ncclUint64:
        reduce_into(static_cast<std::uint64_t*>(out), static_cast<const std::uint64_t*>(x), count, op);
        break;
      case ncclFloat32: reduce_into(static_cast<float*>(out), static_cast<const float*>(x), count, op); break;
      case ncclFloat64: reduce_into(static_cast<double*>(out), static_cast<const double*>(x), count, op); break;
      default: return false;
    }
  }
  if (op == ncclAvg) {
    const double n = static_cast<double>(parts.size());
    if (t == ncclFloat32)
      for (std::size_t i = 0; i < count; ++i) static_cast<float*>(out)[i] /= static_cast<float>(n);
    else if (t == ncclFloat64)
      for (std::size_t i = 0; i < count; ++i) static_cast<double*>(out)[i] /= n;
    else
      return false;
  }
  return true;
}

/// Completes a split child once every parent rank has announced (colour, key).
inline void settle_split(ncclComm_t c) {
  if (c->ready || c->split_index < 0) return;
  std::vector<std::pair<int, int>> members;  // (key, parent rank) of the same colour
  for (int r = 0; r < c->parent_size; ++r) {
    const auto f = c->split_dir / ("split" + std::to_string(c->split_index) + "-" + std::to_string(r));
    if (!present(f)) return;
    int color = 0, key = 0;
    const std::vector<char> text = slurp(f);
    std::istringstream(std::string(text.begin(), text.end())) >> color >> key;
    if (color == c->color) members.emplace_back(key, r);
  }
  std::sort(members.begin(), members.end());
  c->nranks = static_cast<int>(members.size());
  for (std::size_t i = 0; i < members.size(); ++i)
    if (members[i].second == c->parent_rank) c->rank = static_cast<int>(i);
  c->ready = true;
}

inline void settle_init(ncclComm_t c) {
  if (c->ready) return;
  if (c->split_index >= 0) return settle_split(c);
  for (int r = 0; r < c->nranks; ++r)
    if (!present(c->dir / ("member-" + std::to_string(r)))) return;
  c->ready = true;
}

/// Removes the folder when this rank is the last to leave.
inline void leave(ncclComm_t c) {
  if (!c->ready || c->aborted) return;
  const std::string mark = "done-" + std::to_string(c->rank);
  publish(c->dir / mark, "", 0);
  for (int r = 0; r < c->nranks; ++r)
    if (!present(c->dir / ("done-" + std::to_string(r)))) return;
  std::error_code ec;
  std::filesystem::remove_all(c->dir, ec);
}

/// What every collective shares: a round in which each rank publishes a file, and completes
/// once all ranks' files of the round are there.
struct Round {
  ncclComm_t comm;
  std::uint64_t index;
  bool posted = false;
};

inline std::filesystem::path round_file(const ncclComm* c, std::uint64_t round, int rank) {
  return c->dir / ("r" + std::to_string(round) + "-" + std::to_string(rank));
}

/// Queues a collective whose contribution is `send_bytes` bytes at `send` (device memory) and
/// whose result `finish(parts)` computes once every rank has contributed.
template <class Finish>
ncclResult_t queue_collective(const char* call, ncclComm_t comm, const void* send, std::size_t send_bytes, void* recv,
                              std::size_t recv_bytes, cudaStream_t stream, Finish finish) {
  auto lock = lock_sim();
  Simulator& s = sim();
  if (!comm) return fail(nullptr, ncclInvalidArgument, std::string(call) + ": null communicator");
  if (comm->aborted) return fail(comm, ncclInvalidUsage, std::string(call) + ": the communicator was aborted");
  if (!comm->ready)
    return fail(comm, ncclInvalidUsage, std::string(call) + ": the communicator is not initialised yet");
  if (comm->pending_child)
    return fail(comm, ncclInvalidUsage,
                std::string(call) + ": the communicator's split has not returned ncclSuccess yet");
  auto st = s.stream(stream, comm->device);
  if (!st || st->device != comm->device)
    return fail(comm, ncclInvalidArgument,
                std::string(call) + ": the stream is not a stream of the communicator's device");
  for (const auto& [name, p, bytes] :
       {std::tuple<const char*, const void*, std::size_t>{"send", send, send_bytes}, {"receive", recv, recv_bytes}}) {
    if (bytes == 0) continue;
    const Allocation* a = s.find(p, bytes);
    if (!a || a->device != comm->device)
      return fail(comm, ncclInvalidArgument,
                  std::string(call) + ": the " + name + " buffer (" + std::to_string(bytes) + " bytes) is " +
                      s.describe(p) + ", not memory of device " + std::to_string(comm->device));
  }
  auto round = std::make_shared<Round>(Round{comm, ++comm->rounds});
  Op op;
  op.what = call;
  op.run = [round, send, send_bytes, finish]() mutable {
    ncclComm_t c = round->comm;
    if (c->aborted) return OpStatus::done;  // an aborted communicator's work is dropped
    if (!round->posted) {
      if (!publish(round_file(c, round->index, c->rank), send, send_bytes)) {
        fail(c, ncclSystemError, "cannot write to " + c->dir.string());
        return OpStatus::done;
      }
      round->posted = true;
    }
    for (int r = 0; r < c->nranks; ++r)
      if (!present(round_file(c, round->index, r))) return OpStatus::not_ready;
    std::vector<std::vector<char>> parts;
    for (int r = 0; r < c->nranks; ++r) parts.push_back(slurp(round_file(c, round->index, r)));
    finish(parts);
    // Every rank has published this round, so every rank is done with the previous one.
    if (round->index > 1) std::remove(round_file(c, round->index - 1, c->rank).c_str());
    return OpStatus::done;
  };
  s.enqueue(st, std::move(op));
  return ncclSuccess;
}

}  // namespace mixle::cudasim::nccl

inline const char* ncclGetErrorString(ncclResult_t r) {
  switch (r) {
    case ncclSuccess: return "no error";
    case ncclUnhandledCudaError: return "unhandled cuda error (run with NCCL_DEBUG=INFO for details)";
    case ncclSystemError: return "unhandled system error (run with NCCL_DEBUG=INFO for details)";
    case ncclInternalError: return "internal error - please report this issue to the NCCL developers";
    case ncclInvalidArgument: return "invalid argument (run with NCCL_DEBUG=WARN for details)";
    case ncclInvalidUsage: return "invalid usage (run with NCCL_DEBUG=WARN for details)";
    case ncclRemoteError: return "remote process exited or there was a network error";
    case ncclInProgress: return "NCCL operation in progress";
    default: return "unknown result code";
  }
}

inline const char* ncclGetLastError(ncclComm_t comm) {
  return (comm ? comm->last_error : mixle::cudasim::nccl::global_error()).c_str();
}

inline ncclResult_t ncclGetVersion(int* version) {
  *version = NCCL_VERSION_CODE;
  return ncclSuccess;
}

inline ncclResult_t ncclGetUniqueId(ncclUniqueId* id) {
  std::random_device rd;
  std::mt19937_64 rng((static_cast<std::uint64_t>(rd()) << 32) ^ rd() ^
                      static_cast<std::uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count()) ^
                      static_cast<std::uint64_t>(::getpid()));
  for (char& c : id->internal) c = static_cast<char>(rng());
  return ncclSuccess;
}

inline ncclResult_t ncclCommInitRankConfig(ncclComm_t* comm, int nranks, ncclUniqueId id, int rank,
                                           ncclConfig_t* config) {
  using namespace mixle::cudasim;
  *comm = nullptr;
  if (nranks < 1 || rank < 0 || rank >= nranks)
    return nccl::fail(nullptr, ncclInvalidArgument,
                      "ncclCommInitRank: rank " + std::to_string(rank) + " of " + std::to_string(nranks));
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess) return nccl::fail(nullptr, ncclUnhandledCudaError, "no CUDA device");
  auto c = std::make_unique<ncclComm>();
  c->dir = nccl::root() / ("mixle-ncclsim-" + nccl::token(id));
  c->rank = rank;
  c->nranks = nranks;
  c->device = device;
  c->blocking = !config || config->blocking == NCCL_CONFIG_UNDEF_INT || config->blocking != 0;
  std::error_code ec;
  std::filesystem::create_directories(c->dir, ec);
  if (!nccl::publish(c->dir / ("member-" + std::to_string(rank)), "", 0))
    return nccl::fail(nullptr, ncclSystemError, "ncclCommInitRank: cannot write to " + c->dir.string());
  *comm = c.release();
  nccl::settle_init(*comm);
  if ((*comm)->blocking) {
    // A blocking init waits for its peers — here for at most ten minutes, not forever.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(10);
    while (!(*comm)->ready && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
      nccl::settle_init(*comm);
    }
    if (!(*comm)->ready) return nccl::fail(*comm, ncclSystemError, "ncclCommInitRank: peers did not join");
    return ncclSuccess;
  }
  return (*comm)->ready ? ncclSuccess : ncclInProgress;
}

inline ncclResult_t ncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId id, int rank) {
  return ncclCommInitRankConfig(comm, nranks, id, rank, nullptr);
}

inline ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t* state) {
  if (!comm) return ncclInvalidArgument;
  auto lock = mixle::cudasim::lock_sim();
  mixle::cudasim::nccl::settle_init(comm);
  if (comm->pending_child) {
    mixle::cudasim::nccl::settle_split(comm->pending_child);
    if (comm->pending_child->ready) {
      *comm->pending_out = comm->pending_child;
      comm->pending_child = nullptr;
      comm->pending_out = nullptr;
    }
  }
  *state = comm->ready && !comm->pending_child ? ncclSuccess : ncclInProgress;
  return ncclSuccess;
}

inline ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t* newcomm, ncclConfig_t* config) {
  using namespace mixle::cudasim;
  *newcomm = nullptr;
  if (!comm || !comm->ready || comm->aborted || comm->pending_child)
    return nccl::fail(comm, ncclInvalidUsage, "ncclCommSplit: parent not usable");
  const int index = comm->splits++;
  std::ostringstream announce;
  announce << color << ' ' << key;
  const std::string text = announce.str();
  if (!nccl::publish(comm->dir / ("split" + std::to_string(index) + "-" + std::to_string(comm->rank)), text.data(),
                     text.size()))
    return nccl::fail(comm, ncclSystemError, "ncclCommSplit: cannot write to " + comm->dir.string());
  if (color == NCCL_SPLIT_NOCOLOR) return ncclSuccess;
  auto c = std::make_unique<ncclComm>();
  c->dir = comm->dir.string() + "-s" + std::to_string(index) + "c" + std::to_string(color);
  c->device = comm->device;
  c->blocking = !config || config->blocking == NCCL_CONFIG_UNDEF_INT || config->blocking != 0;
  c->split_dir = comm->dir;
  c->split_index = index;
  c->parent_rank = comm->rank;
  c->parent_size = comm->nranks;
  c->color = color;
  std::error_code ec;
  std::filesystem::create_directories(c->dir, ec);
  auto lock = lock_sim();
  if (!c->blocking) {
    comm->pending_child = c.release();
    comm->pending_out = newcomm;
    return ncclInProgress;
  }
  *newcomm = c.release();
  nccl::settle_split(*newcomm);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(10);
  while (!(*newcomm)->ready && std::chrono::steady_clock::now() < deadline) {
    lock.unlock();
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    lock.lock();
    nccl::settle_split(*newcomm);
  }
  return (*newcomm)->ready ? ncclSuccess : nccl::fail(*newcomm, ncclSystemError, "ncclCommSplit: peers did not join");
}

inline ncclResult_t ncclCommCount(const ncclComm_t comm, int* count) {
  if (!comm || !comm->ready) return ncclInvalidUsage;
  *count = comm->nranks;
  return ncclSuccess;
}

inline ncclResult_t ncclCommUserRank(const ncclComm_t comm, int* rank) {
  if (!comm || !comm->ready) return ncclInvalidUsage;
  *rank = comm->rank;
  return ncclSuccess;
}

inline ncclResult_t ncclCommCuDevice(const ncclComm_t comm, int* device) {
  if (!comm) return ncclInvalidArgument;
  *device = comm->device;
  return ncclSuccess;
}

inline ncclResult_t ncclCommFinalize(ncclComm_t comm) {
  if (!comm) return ncclInvalidArgument;
  return ncclSuccess;  // collectives complete as their streams run; nothing else is outstanding
}

inline ncclResult_t ncclCommDestroy(ncclComm_t comm) {
  if (!comm) return ncclSuccess;
  {
    auto lock = mixle::cudasim::lock_sim();
    mixle::cudasim::nccl::leave(comm);
  }
  delete comm;
  return ncclSuccess;
}

/// Drops the communicator's queued work and leaves its peers to their deadlines (their
/// collectives never complete), as NCCL's abort does.
inline ncclResult_t ncclCommAbort(ncclComm_t comm) {
  if (!comm) return ncclSuccess;
  auto lock = mixle::cudasim::lock_sim();
  comm->aborted = true;
  if (comm->pending_child) {  // a split in progress is abandoned with its parent
    comm->pending_child->aborted = true;
    mixle::cudasim::nccl::aborted_comms().push_back(comm->pending_child);
    comm->pending_child = nullptr;
  }
  // Queued operations still point at the communicator: they see `aborted` and finish at once,
  // so it must outlive them — the few bytes of an aborted communicator are not reclaimed.
  mixle::cudasim::nccl::aborted_comms().push_back(comm);
  return ncclSuccess;
}

inline ncclResult_t ncclGroupStart() { return ncclSuccess; }
inline ncclResult_t ncclGroupEnd() { return ncclSuccess; }

inline ncclResult_t ncclAllReduce(const void* send, void* recv, std::size_t count, ncclDataType_t type, ncclRedOp_t op,
                                  ncclComm_t comm, cudaStream_t stream) {
  using namespace mixle::cudasim;
  const std::size_t bytes = count * nccl::type_bytes(type);
  if (type == ncclFloat16 || type == ncclBfloat16)
    return nccl::fail(comm, ncclInvalidArgument, "ncclAllReduce: half-precision reductions are not simulated");
  return nccl::queue_collective("ncclAllReduce", comm, send, bytes, recv, bytes, stream,
                                [recv, count, type, op](const std::vector<std::vector<char>>& parts) {
                                  nccl::reduce(parts, recv, count, type, op);
                                });
}

inline ncclResult_t ncclBroadcast(const void* send, void* recv, std::size_t count, ncclDataType_t type, int root,
                                  ncclComm_t comm, cudaStream_t stream) {
  using namespace mixle::cudasim;
  const std::size_t bytes = count * nccl::type_bytes(type);
  if (!comm || root < 0 || root >= comm->nranks)
    return nccl::fail(comm, ncclInvalidArgument, "ncclBroadcast: root " + std::to_string(root));
  // Only the root's bytes matter; the others publish an empty contribution to mark the round.
  const bool is_root = comm->rank == root;
  return nccl::queue_collective("ncclBroadcast", comm, is_root ? send : nullptr, is_root ? bytes : 0, recv, bytes,
                                stream, [recv, bytes, root](const std::vector<std::vector<char>>& parts) {
                                  std::memcpy(recv, parts[static_cast<std::size_t>(root)].data(), bytes);
                                });
}

inline ncclResult_t ncclAllGather(const void* send, void* recv, std::size_t count, ncclDataType_t type, ncclComm_t comm,
                                  cudaStream_t stream) {
  using namespace mixle::cudasim;
  const std::size_t bytes = count * nccl::type_bytes(type);
  const std::size_t total = comm ? bytes * static_cast<std::size_t>(comm->nranks) : 0;
  return nccl::queue_collective("ncclAllGather", comm, send, bytes, recv, total, stream,
                                [recv, bytes](const std::vector<std::vector<char>>& parts) {
                                  for (std::size_t r = 0; r < parts.size(); ++r)
                                    std::memcpy(static_cast<char*>(recv) + r * bytes, parts[r].data(), bytes);
                                });
}
