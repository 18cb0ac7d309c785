// The simulator's state: devices, allocations, streams, events, errors and counters, behind one
// global lock. Header-only (inline variables), so every translation unit of a program shares it.
//
// Device memory is ordinary heap memory (posix_memalign, 256-byte aligned as cudaMalloc), but
// every allocation is recorded, so the simulator can tell a device pointer from a host pointer:
// a kernel argument or a copy that uses one for the other is reported. Under AddressSanitizer
// device allocations are poisoned whenever the simulated device is not executing, so host code
// that dereferences a device pointer stops with a report; without it, each allocation ends in a
// 64-byte guard that is checked after every kernel, so a kernel writing past the end of a buffer
// is reported with the kernel's name.
//
// Work is deferred: kernels, copies and memsets queue on their stream and run when the host
// waits for them (cudaStreamSynchronize, cudaEventSynchronize, cudaDeviceSynchronize, a
// synchronous copy, cudaStreamQuery) — and then only the work that wait needs, in stream order,
// honouring cudaStreamWaitEvent and the legacy default stream's implicit synchronisation. A host
// that reuses a pinned buffer before the copy that reads it has run, or reads a result before
// waiting for it, therefore sees the wrong data, as it could on a GPU.
#pragma once

#include "mixle/cudasim/config.hpp"
#include "mixle/cudasim/types.hpp"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#define MIXLE_SIM_ASAN 1
#else
#define MIXLE_SIM_ASAN 0
#endif

namespace mixle::cudasim {

/// What a deferred operation reports when it is run: done, or waiting for something outside
/// this process's device work (a collective whose peers have not arrived).
enum class OpStatus { done, not_ready };

struct StreamState;

/// A dependency of an operation: `stream` must have completed its first `seq` operations.
struct Dependency {
  std::shared_ptr<StreamState> stream;
  std::uint64_t seq = 0;
};

struct Op {
  std::string what;
  std::function<OpStatus()> run;
  std::vector<Dependency> waits;
};

struct StreamState {
  int device = 0;
  bool blocking = true;  // synchronises with the legacy default stream
  bool legacy = false;
  std::deque<Op> pending;
  std::uint64_t enqueued = 0, completed = 0;
};

struct EventState {
  int device = 0;
  unsigned flags = 0;
  Dependency last;  // the most recent record: done when last.stream has completed last.seq
  bool recorded = false;
  double time_ms = 0.0;  // host clock when the record ran (timing is not simulated)
};

struct Allocation {
  char* base = nullptr;
  std::size_t bytes = 0;
  int device = -1;          // -1: host memory
  bool pinned = false;      // cudaMallocHost / cudaHostAlloc
  bool registered = false;  // cudaHostRegister: the caller's memory, not freed by us
};

struct DeviceState {
  std::size_t used = 0, peak = 0;
  cudaError_t sticky = cudaSuccess;  // a fault in device work makes the device unusable
  std::shared_ptr<StreamState> legacy;
};

/// Totals since the process started (or reset_counters); tests use them to see what crossed
/// the bus, e.g. that a resident dataset is not uploaded again.
struct Counters {
  std::uint64_t kernel_launches = 0;
  std::uint64_t h2d_bytes = 0, d2h_bytes = 0, d2d_bytes = 0, memset_bytes = 0;
  std::uint64_t gemms = 0;
  std::uint64_t faults = 0;
};

constexpr std::size_t kGuardBytes = MIXLE_SIM_ASAN ? 0 : 64;
constexpr unsigned char kGuardByte = 0xCD;
/// Freed device memory is held back from the host heap (quarantined, and poisoned under ASan)
/// for the most recent kFreedRemembered frees up to kFreedHeldBytes, so an address reported as
/// "freed device memory" really is that, never a host allocation that reused the bytes.
constexpr std::size_t kFreedRemembered = 4096;
constexpr std::size_t kFreedHeldBytes = std::size_t(256) << 20;

class Simulator {
 public:
  std::recursive_mutex mutex;
  std::vector<int> visible;  // physical ordinals, index = device number
  std::vector<DeviceState> devices;
  std::map<const char*, Allocation> allocations;  // by base address
  std::map<const char*, std::size_t> freed;       // recently freed device ranges, still held
  std::deque<const char*> freed_order;
  std::size_t freed_bytes = 0;
  std::unordered_map<const void*, std::shared_ptr<StreamState>> streams;
  std::unordered_map<const void*, std::shared_ptr<EventState>> events;
  Counters counters;
  std::string last_fault;
  int device_access_depth = 0;
  std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now();

  Simulator() {
    visible = visible_devices();
    devices.resize(visible.size());
    for (std::size_t d = 0; d < devices.size(); ++d) {
      devices[d].legacy = std::make_shared<StreamState>();
      devices[d].legacy->device = static_cast<int>(d);
      devices[d].legacy->legacy = true;
    }
  }

  int device_count() const { return static_cast<int>(devices.size()); }

  /// The allocation holding [p, p + bytes), or null.
  const Allocation* find(const void* p, std::size_t bytes = 0) const {
    const char* c = static_cast<const char*>(p);
    auto it = allocations.upper_bound(c);
    if (it == allocations.begin()) return nullptr;
    --it;
    const Allocation& a = it->second;
    if (c < a.base || c > a.base + a.bytes) return nullptr;
    if (static_cast<std::size_t>(c - a.base) + bytes > a.bytes) return nullptr;
    return &a;
  }

  /// Words for a pointer in a message: what the simulator knows about the memory it points at.
  std::string describe(const void* p) const {
    char buf[160];
    const char* c = static_cast<const char*>(p);
    if (const Allocation* a = find(p)) {
      if (a->device >= 0)
        std::snprintf(buf, sizeof buf, "device memory of device %d (%zu bytes into a %zu-byte allocation)", a->device,
                      static_cast<std::size_t>(c - a->base), a->bytes);
      else
        std::snprintf(buf, sizeof buf, "pinned host memory (%zu bytes into a %zu-byte allocation)",
                      static_cast<std::size_t>(c - a->base), a->bytes);
      return buf;
    }
    auto it = freed.upper_bound(c);
    if (it != freed.begin()) {
      --it;
      if (c >= it->first && c <= it->first + it->second) {
        std::snprintf(buf, sizeof buf, "freed device memory (a %zu-byte allocation)", it->second);
        return buf;
      }
    }
    // Past the end of an allocation?
    auto after = allocations.upper_bound(c);
    if (after != allocations.begin()) {
      --after;
      const Allocation& a = after->second;
      if (a.device >= 0 && c > a.base + a.bytes && c < a.base + a.bytes + 4096) {
        std::snprintf(buf, sizeof buf, "%zu bytes past the end of a %zu-byte allocation on device %d",
                      static_cast<std::size_t>(c - (a.base + a.bytes)), a.bytes, a.device);
        return buf;
      }
    }
    return "host memory that the CUDA runtime did not allocate";
  }

  // ---- device memory -----------------------------------------------------------------------
  void poison(const Allocation& a) {
#if MIXLE_SIM_ASAN
    if (a.device >= 0) ASAN_POISON_MEMORY_REGION(a.base, a.bytes);
#else
    (void)a;
#endif
  }
  void unpoison(const Allocation& a) {
#if MIXLE_SIM_ASAN
    if (a.device >= 0) ASAN_UNPOISON_MEMORY_REGION(a.base, a.bytes);
#else
    (void)a;
#endif
  }

  /// While one exists, device memory may be touched (the simulated device is executing).
  class DeviceAccess {
   public:
    explicit DeviceAccess(Simulator& s) : s_(s) {
      if (s_.device_access_depth++ == 0)
        for (auto& [base, a] : s_.allocations) s_.unpoison(a);
    }
    ~DeviceAccess() {
      if (--s_.device_access_depth == 0)
        for (auto& [base, a] : s_.allocations) s_.poison(a);
    }
    DeviceAccess(const DeviceAccess&) = delete;
    DeviceAccess& operator=(const DeviceAccess&) = delete;

   private:
    Simulator& s_;
  };

  cudaError_t allocate_device(int device, std::size_t bytes, void** out) {
    const std::size_t capacity = device_memory_bytes();
    DeviceState& d = devices[static_cast<std::size_t>(device)];
    if (bytes > capacity || d.used > capacity - bytes) return cudaErrorMemoryAllocation;
    void* p = nullptr;
    const std::size_t request = (bytes == 0 ? 1 : bytes) + kGuardBytes;
    if (posix_memalign(&p, 256, request) != 0) return cudaErrorMemoryAllocation;
    Allocation a{static_cast<char*>(p), bytes, device, false, false};
    // Fresh device memory is not zero on a GPU either.
    std::memset(p, 0xA5, bytes);
    if (kGuardBytes) std::memset(a.base + bytes, kGuardByte, kGuardBytes);
    allocations[a.base] = a;
    if (device_access_depth == 0) poison(a);
    d.used += bytes;
    if (d.used > d.peak) d.peak = d.used;
    *out = p;
    return cudaSuccess;
  }

  cudaError_t free_device(void* p) {
    auto it = allocations.find(static_cast<const char*>(p));
    if (it == allocations.end() || it->second.device < 0) return cudaErrorInvalidValue;
    const Allocation a = it->second;
    allocations.erase(it);
    devices[static_cast<std::size_t>(a.device)].used -= a.bytes;
    poison(a);  // held back, unreachable, until remember_freed lets it go
    remember_freed(a.base, a.bytes);
    return cudaSuccess;
  }

  /// Holds a freed device allocation back from the host heap; releases the oldest beyond the
  /// limits (kFreedRemembered, kFreedHeldBytes).
  void remember_freed(char* base, std::size_t bytes) {
    freed[base] = bytes;
    freed_order.push_back(base);
    freed_bytes += bytes;
    while (freed_order.size() > kFreedRemembered || freed_bytes > kFreedHeldBytes) {
      char* oldest = const_cast<char*>(freed_order.front());
      freed_order.pop_front();
      const auto held = freed.find(oldest);
      if (held == freed.end()) continue;
      freed_bytes -= held->second;
#if MIXLE_SIM_ASAN
      ASAN_UNPOISON_MEMORY_REGION(oldest, held->second);
#endif
      freed.erase(held);
      std::free(oldest);
    }
  }

  /// The first device allocation whose guard bytes were overwritten, described; empty if none.
  std::string damaged_guard(int device) const {
    if (!kGuardBytes) return {};
    for (const auto& [base, a] : allocations) {
      if (a.device != device) continue;
      std::size_t reach = 0;  // how far past the end the damage goes
      for (std::size_t i = 0; i < kGuardBytes; ++i)
        if (static_cast<unsigned char>(a.base[a.bytes + i]) != kGuardByte) reach = i + 1;
      if (reach) {
        char buf[160];
        std::snprintf(buf, sizeof buf, "wrote up to %zu byte(s) past the end of a %zu-byte device allocation", reach,
                      a.bytes);
        return buf;
      }
    }
    return {};
  }

  void repair_guards(int device) {
    for (const auto& [base, a] : allocations)
      if (a.device == device && kGuardBytes) std::memset(a.base + a.bytes, kGuardByte, kGuardBytes);
  }

  // ---- streams and deferred work -------------------------------------------------------------
  std::shared_ptr<StreamState> stream(cudaStream_t s, int current_device) {
    if (s == nullptr || s == cudaStreamLegacy || s == cudaStreamPerThread) {
      if (current_device < 0 || current_device >= device_count()) return nullptr;
      return devices[static_cast<std::size_t>(current_device)].legacy;
    }
    auto it = streams.find(s);
    return it == streams.end() ? nullptr : it->second;
  }

  /// Queues `op` on `s` with the legacy default stream's implicit ordering; returns its number
  /// (the stream has completed it once completed ≥ that number).
  std::uint64_t enqueue(const std::shared_ptr<StreamState>& s, Op op) {
    DeviceState& d = devices[static_cast<std::size_t>(s->device)];
    if (s->legacy) {
      for (auto& [handle, other] : streams)
        if (other->device == s->device && other->blocking && other->enqueued > other->completed)
          op.waits.push_back({other, other->enqueued});
    } else if (s->blocking && d.legacy->enqueued > d.legacy->completed) {
      op.waits.push_back({d.legacy, d.legacy->enqueued});
    }
    s->pending.push_back(std::move(op));
    return ++s->enqueued;
  }

  /// Runs `s`'s work up to operation `upto` (and whatever it waits for). A device with a
  /// sticky error drops its work instead of running it.
  OpStatus complete(StreamState& s, std::uint64_t upto) {
    if (s.completed >= upto || s.pending.empty()) return OpStatus::done;
    DeviceAccess access(*this);  // once for the whole batch (nested calls do not toggle)
    while (s.completed < upto && !s.pending.empty()) {
      Op& op = s.pending.front();
      for (Dependency& w : op.waits)
        if (complete(*w.stream, w.seq) == OpStatus::not_ready) return OpStatus::not_ready;
      if (devices[static_cast<std::size_t>(s.device)].sticky == cudaSuccess) {
        if (op.run() == OpStatus::not_ready) return OpStatus::not_ready;
      }
      s.pending.pop_front();
      ++s.completed;
    }
    return OpStatus::done;
  }

  OpStatus complete_all(StreamState& s) { return complete(s, s.enqueued); }

  OpStatus complete_device(int device) {
    OpStatus status = complete_all(*devices[static_cast<std::size_t>(device)].legacy);
    for (auto& [handle, s] : streams)
      if (s->device == device && complete_all(*s) == OpStatus::not_ready) status = OpStatus::not_ready;
    return status;
  }

  double now_ms() const {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  }

  // ---- faults --------------------------------------------------------------------------------
  /// Device work failed: `code` becomes the device's sticky error (every later call on the
  /// device returns it, as after a fault on a GPU), the report goes to stderr, and the device's
  /// queued work is dropped.
  void fault(int device, cudaError_t code, const std::string& report) {
    ++counters.faults;
    last_fault = report;
    std::fprintf(stderr, "mixle CUDA simulator: %s\n", report.c_str());
    std::fflush(stderr);
    DeviceState& d = devices[static_cast<std::size_t>(device)];
    if (d.sticky == cudaSuccess) d.sticky = code;
  }
};

inline Simulator& sim() {
  static Simulator* instance = new Simulator();  // never destroyed: destructors of static
  return *instance;                              // RAII objects may still call the runtime
}

/// The calling host thread's current device and last error (both per thread, as in CUDA).
inline thread_local int t_current_device = 0;
inline thread_local cudaError_t t_last_error = cudaSuccess;

/// Records `e` as the thread's last error when it is one, and returns it.
inline cudaError_t note(cudaError_t e) {
  if (e != cudaSuccess) t_last_error = e;
  return e;
}

}  // namespace mixle::cudasim
