// The CUDA runtime API calls mixle makes, simulated (declared by CUDA's cuda_runtime_api.h;
// here inline functions over the simulator's state, state.hpp). Each follows CUDA's documented
// contract — return codes, the thread's last error, the device's sticky error after a fault,
// synchronous and asynchronous behaviour of copies — and adds the checks a GPU does not make
// but a test wants: a host pointer where a device pointer belongs (or the reverse) is refused
// with a message naming the call and what the pointer really points at.
#pragma once

#include "mixle/cudasim/state.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <unistd.h>

namespace mixle::cudasim {

using Lock = std::unique_lock<std::recursive_mutex>;

inline Lock lock_sim() { return Lock(sim().mutex); }

/// The current device of the calling thread when it exists; else the error to return.
inline cudaError_t current_device_ok(Simulator& s) {
  if (s.device_count() == 0) return cudaErrorNoDevice;
  if (t_current_device < 0 || t_current_device >= s.device_count()) return cudaErrorInvalidDevice;
  return s.devices[static_cast<std::size_t>(t_current_device)].sticky;
}

/// Runs `s`'s work up to `upto`, waiting (without the lock) while a collective's peers are
/// missing; returns the device's sticky error or success.
inline cudaError_t wait_for(Lock& lock, const std::shared_ptr<StreamState>& s, std::uint64_t upto) {
  Simulator& sm = sim();
  while (sm.complete(*s, upto) == OpStatus::not_ready) {
    lock.unlock();
    std::this_thread::sleep_for(std::chrono::microseconds(50));
    lock.lock();
  }
  return sm.devices[static_cast<std::size_t>(s->device)].sticky;
}

inline void report(const std::string& what) {
  std::fprintf(stderr, "mixle CUDA simulator: %s\n", what.c_str());
  std::fflush(stderr);
}

inline const char* kind_name(cudaMemcpyKind k) {
  switch (k) {
    case cudaMemcpyHostToHost: return "cudaMemcpyHostToHost";
    case cudaMemcpyHostToDevice: return "cudaMemcpyHostToDevice";
    case cudaMemcpyDeviceToHost: return "cudaMemcpyDeviceToHost";
    case cudaMemcpyDeviceToDevice: return "cudaMemcpyDeviceToDevice";
    case cudaMemcpyDefault: return "cudaMemcpyDefault";
  }
  return "an unknown cudaMemcpyKind";
}

/// A planned copy: which side is device memory, and whether the host side is pinned.
struct CopyPlan {
  bool dst_device = false, src_device = false;
  bool dst_pinned = false, src_pinned = false;
  int device = -1;  // the device whose memory is involved (the destination's if both)
};

/// Checks the pointers of a copy against its kind; on a mismatch reports and returns false.
inline bool plan_copy(const char* call, void* dst, const void* src, std::size_t bytes, cudaMemcpyKind kind,
                      CopyPlan& plan) {
  Simulator& s = sim();
  const Allocation* d = s.find(dst);
  const Allocation* r = s.find(src);
  plan.dst_device = d && d->device >= 0;
  plan.src_device = r && r->device >= 0;
  plan.dst_pinned = d && d->pinned;
  plan.src_pinned = r && r->pinned;
  bool want_dst_device = plan.dst_device, want_src_device = plan.src_device;
  switch (kind) {
    case cudaMemcpyHostToHost: want_dst_device = want_src_device = false; break;
    case cudaMemcpyHostToDevice: want_dst_device = true, want_src_device = false; break;
    case cudaMemcpyDeviceToHost: want_dst_device = false, want_src_device = true; break;
    case cudaMemcpyDeviceToDevice: want_dst_device = want_src_device = true; break;
    case cudaMemcpyDefault: break;
    default: report(std::string(call) + ": " + kind_name(kind)); return false;
  }
  auto side = [&](const char* which, const void* p, bool is_device, bool want_device) -> bool {
    if (is_device == want_device) return true;
    report(std::string(call) + "(…, " + kind_name(kind) + "): the " + which + " pointer is " + s.describe(p) +
           (want_device ? ", not device memory" : ", where host memory was expected"));
    return false;
  };
  if (!side("destination", dst, plan.dst_device, want_dst_device) ||
      !side("source", src, plan.src_device, want_src_device))
    return false;
  auto fits = [&](const char* which, const void* p, bool is_device) -> bool {
    if (!is_device || s.find(p, bytes)) return true;
    report(std::string(call) + ": " + std::to_string(bytes) + " bytes from the " + which +
           " pointer run past the end of " + s.describe(p));
    return false;
  };
  if (!fits("destination", dst, plan.dst_device) || !fits("source", src, plan.src_device)) return false;
  plan.device = plan.dst_device ? d->device : plan.src_device ? r->device : -1;
  return true;
}

inline void count_copy(const CopyPlan& p, std::size_t bytes) {
  Counters& c = sim().counters;
  if (p.dst_device && p.src_device)
    c.d2d_bytes += bytes;
  else if (p.dst_device)
    c.h2d_bytes += bytes;
  else if (p.src_device)
    c.d2h_bytes += bytes;
}

/// Queues a copy on `st`. Host memory that is not pinned behaves as CUDA documents for pageable
/// memory: a copy from it takes the bytes at the call; a copy to it returns only once done.
inline cudaError_t copy_async(Lock& lock, const char* call, void* dst, const void* src, std::size_t bytes,
                              cudaMemcpyKind kind, const std::shared_ptr<StreamState>& st) {
  Simulator& s = sim();
  if (bytes == 0) return cudaSuccess;
  CopyPlan plan;
  if (!plan_copy(call, dst, src, bytes, kind, plan)) return note(cudaErrorInvalidValue);
  Op op;
  op.what = call;
  const bool pageable_source = !plan.src_device && !plan.src_pinned;
  const bool pageable_destination = !plan.dst_device && !plan.dst_pinned;
  if (pageable_source) {
    auto snapshot =
        std::make_shared<std::vector<char>>(static_cast<const char*>(src), static_cast<const char*>(src) + bytes);
    op.run = [dst, snapshot, bytes, plan] {
      std::memcpy(dst, snapshot->data(), bytes);
      count_copy(plan, bytes);
      return OpStatus::done;
    };
  } else {
    op.run = [dst, src, bytes, plan] {
      std::memcpy(dst, src, bytes);
      count_copy(plan, bytes);
      return OpStatus::done;
    };
  }
  const std::uint64_t seq = s.enqueue(st, std::move(op));
  if (pageable_destination) return note(wait_for(lock, st, seq));
  return cudaSuccess;
}

inline std::shared_ptr<StreamState> stream_or_null(cudaStream_t stream) {
  return sim().stream(stream, t_current_device);
}

}  // namespace mixle::cudasim

// ---- errors ----------------------------------------------------------------------------------
inline const char* cudaGetErrorName(cudaError_t e) {
  switch (e) {
#define MIXLE_SIM_NAME(x) \
  case x: return #x;
    MIXLE_SIM_NAME(cudaSuccess)
    MIXLE_SIM_NAME(cudaErrorInvalidValue)
    MIXLE_SIM_NAME(cudaErrorMemoryAllocation)
    MIXLE_SIM_NAME(cudaErrorInitializationError)
    MIXLE_SIM_NAME(cudaErrorInvalidConfiguration)
    MIXLE_SIM_NAME(cudaErrorInvalidDevicePointer)
    MIXLE_SIM_NAME(cudaErrorInvalidMemcpyDirection)
    MIXLE_SIM_NAME(cudaErrorInsufficientDriver)
    MIXLE_SIM_NAME(cudaErrorNoDevice)
    MIXLE_SIM_NAME(cudaErrorInvalidDevice)
    MIXLE_SIM_NAME(cudaErrorInvalidResourceHandle)
    MIXLE_SIM_NAME(cudaErrorNotReady)
    MIXLE_SIM_NAME(cudaErrorIllegalAddress)
    MIXLE_SIM_NAME(cudaErrorLaunchOutOfResources)
    MIXLE_SIM_NAME(cudaErrorAssert)
    MIXLE_SIM_NAME(cudaErrorHostMemoryAlreadyRegistered)
    MIXLE_SIM_NAME(cudaErrorHostMemoryNotRegistered)
    MIXLE_SIM_NAME(cudaErrorLaunchFailure)
    MIXLE_SIM_NAME(cudaErrorNotSupported)
    MIXLE_SIM_NAME(cudaErrorUnknown)
#undef MIXLE_SIM_NAME
  }
  return "cudaErrorUnknown";
}

inline const char* cudaGetErrorString(cudaError_t e) {
  switch (e) {
    case cudaSuccess: return "no error";
    case cudaErrorInvalidValue: return "invalid argument";
    case cudaErrorMemoryAllocation: return "out of memory";
    case cudaErrorInitializationError: return "initialization error";
    case cudaErrorInvalidConfiguration: return "invalid configuration argument";
    case cudaErrorInvalidDevicePointer: return "invalid device pointer";
    case cudaErrorInvalidMemcpyDirection: return "invalid copy direction for memcpy";
    case cudaErrorInsufficientDriver: return "CUDA driver version is insufficient for CUDA runtime version";
    case cudaErrorNoDevice: return "no CUDA-capable device is detected";
    case cudaErrorInvalidDevice: return "invalid device ordinal";
    case cudaErrorInvalidResourceHandle: return "invalid resource handle";
    case cudaErrorNotReady: return "device not ready";
    case cudaErrorIllegalAddress: return "an illegal memory access was encountered";
    case cudaErrorLaunchOutOfResources: return "too many resources requested for launch";
    case cudaErrorAssert: return "device-side assert triggered";
    case cudaErrorHostMemoryAlreadyRegistered: return "part or all of the requested memory range is already mapped";
    case cudaErrorHostMemoryNotRegistered: return "pointer does not correspond to a registered memory region";
    case cudaErrorLaunchFailure: return "unspecified launch failure";
    case cudaErrorNotSupported: return "operation not supported";
    case cudaErrorUnknown: return "unknown error";
  }
  return "unrecognized error code";
}

inline cudaError_t cudaGetLastError() {
  using namespace mixle::cudasim;
  auto lock = lock_sim();
  const cudaError_t e = t_last_error;
  t_last_error = cudaSuccess;
  Simulator& s = sim();
  if (t_current_device >= 0 && t_current_device < s.device_count()) {
    const cudaError_t sticky = s.devices[static_cast<std::size_t>(t_current_device)].sticky;
    if (sticky != cudaSuccess) return t_last_error = sticky;
  }
  return e;
}

inline cudaError_t cudaPeekAtLastError() {
  using namespace mixle::cudasim;
  auto lock = lock_sim();
  Simulator& s = sim();
  if (t_current_device >= 0 && t_current_device < s.device_count()) {
    const cudaError_t sticky = s.devices[static_cast<std::size_t>(t_current_device)].sticky;
    if (sticky != cudaSuccess) return sticky;
  }
  return t_last_error;
}

// ---- devices ---------------------------------------------------------------------------------
inline cudaError_t cudaGetDeviceCount(int* count) {
  using namespace mixle::cudasim;
  auto lock = lock_sim();
  *count = sim().device_count();
  return *count == 0 ? note(cudaErrorNoDevice) : cudaSuccess;
}

inline cudaError_t cudaSetDevice(int device) {
  using namespace mixle::cudasim;
  auto lock = lock_sim();
  if (sim().device_count() == 0) return note(cudaErrorNoDevice);
  if (device < 0 || device >= sim().device_count()) return note(cudaErrorInvalidDevice);
  t_current_device = device;
  return cudaSuccess;
}

inline cudaError_t cudaGetDevice(int* device) {
  using namespace mixle::cudasim;
  auto lock = lock_sim();
  if (sim().device_count() == 0) return note(cudaErrorNoDevice);
  *device = t_current_device;
  return cudaSuccess;
}

inline cudaError_t cudaGetDeviceProperties(cudaDeviceProp* prop, int device) {
  using namespace mixle::cudasim;
  auto lock = lock_sim();
  Simulator& s = sim();
  if (s.device_count() == 0) return note(cudaErrorNoDevice);
  if (device < 0 || device >= s.device_count()) return note(cudaErrorInvalidDevice);
  *prop = cudaDeviceProp{};
  std::snprintf(prop->name, sizeof prop->name, "mixle CUDA simulator (device %d)",
                s.visible[static_cast<std::size_t>(device)]);
  prop->totalGlobalMem = device_memory_bytes();
  prop->sharedMemPerBlock = 48 * 1024;
  prop->regsPerBlock = 65536;
  prop->warpSize = 32;
  prop->maxThreadsPerBlock = 1024;
  prop->maxThreadsDim[0] = 1024, prop->maxThreadsDim[1] = 1024, prop->maxThreadsDim[2] = 64;
  prop->maxGridSize[0] = 2147483647, prop->maxGridSize[1] = 65535, prop->maxGridSize[2] = 65535;
  prop->major = 9, prop->minor = 0;  // the architecture mixle builds for (sm_90)
  prop->multiProcessorCount = 1;     // one block at a time
  prop->pciBusID = s.visible[static_cast<std::size_t>(device)];
  prop->unifiedAddressing = 1;
  return cudaSuccess;
}

inline cudaError_t cudaDriverGetVersion(int* v) {
  *v = 13000;
  return cudaSuccess;
}
inline cudaError_t cudaRuntimeGetVersion(int* v) {
  *v = 13000;
  return cudaSuccess;
}

inline cudaError_t cudaMemGetInfo(std::size_t* free_bytes, std::size_t* total_bytes) {
  using namespace mixle::cudasim;
  auto lock = lock_sim();
  Simulator& s = sim();
  if (const cudaError_t e = current_device_ok(s); e != cudaSuccess) return note(e);
  const std::size_t total = device_memory_bytes();
  const std::size_t used = s.devices[static_cast<std::size_t>(t_current_device)].used;
  *total_bytes = total;
  *free_bytes = used < total ? total - used : 0;
  return cudaSuccess;
}

inline cudaError_t cudaDeviceSynchronize() {
  using namespace mixle::cudasim;
  auto lock = lock_sim();
  Simulator& s = sim();
  if (const cudaError_t e = current_device_ok(s); e != cudaSuccess) return note(e);
  while (s.complete_device(t_current_device) == OpStatus::not_ready) {
    lock.unlock();
    std::this_thread::sleep_for(std::chrono::microseconds(50));
    lock.lock();
  }
  return note(s.devices[static_cast<std::size_t>(t_current_device)].sticky);
}

/// Destroys the current device's state: queued work is dropped, its allocations, streams and
/// events cease to exist, and — unlike a GPU, where a sticky error lasts as long as the process
/// — its sticky error is cleared, so the simulator's own tests can fault a device repeatedly.
inline cudaError_t cudaDeviceReset() {
  using namespace mixle::cudasim;
  auto lock = lock_sim();
  Simulator& s = sim();
  if (s.device_count() == 0) return note(cudaErrorNoDevice);
  const int d = t_current_device;
  for (auto it = s.streams.begin(); it != s.streams.end();) {
    if (it->second->device == d) {
      it->second->pending.clear();
      it->second->completed = it->second->enqueued;
      it = s.streams.erase(it);
    } else {
      ++it;
    }
  }
  DeviceState& dev = s.devices[static_cast<std::size_t>(d)];
  dev.legacy->pending.clear();
  dev.legacy->completed = dev.legacy->enqueued;
  for (auto it = s.events.begin(); it != s.events.end();)
    it = it->second->device == d ? s.events.erase(it) : std::next(it);
  std::vector<void*> owned;
  for (const auto& [base, a] : s.allocations)
    if (a.device == d) owned.push_back(a.base);
  for (void* p : owned) s.free_device(p);
  dev.sticky = cudaSuccess;
  t_last_error = cudaSuccess;
  return cudaSuccess;
}

// ---- memory ----------------------------------------------------------------------------------
inline cudaError_t cudaMalloc(void** p, std::size_t bytes) {
  using namespace mixle::cudasim;
  auto lock = lock_sim();
  Simulator& s = sim();
  *p = nullptr;
  if (const cudaError_t e = current_device_ok(s); e != cudaSuccess) return note(e);
  return note(s.allocate_device(t_current_device, bytes, p));
}

inline cudaError_t cudaFree(void* p) {
  using namespace mixle::cudasim;
  auto lock = lock_sim();
  Simulator& s = sim();
  if (p == nullptr) return cudaSuccess;
  const Allocation* a = s.find(p);
  if (!a || a->device < 0 || a->base != p) {
    report("cudaFree: the pointer is " + s.describe(p) + ", not the start of a device allocation");
    return note(cudaErrorInvalidValue);
  }
  const int device = a->device;
  // cudaFree waits for the device's queued work, which may still use the memory.
  while (s.complete_device(device) == OpStatus::not_ready) {
    lock.unlock();
    std::this_thread::sleep_for(std::chrono::microseconds(50));
    lock.lock();
  }
  if (s.devices[static_cast<std::size_t>(device)].sticky != cudaSuccess) {
    s.free_device(p);  // the memory is released, but the device stays faulty
    return note(s.devices[static_cast<std::size_t>(device)].sticky);
  }
  return note(s.free_device(p));
}

inline cudaError_t cudaMallocAsync(void** p, std::size_t bytes, cudaStream_t stream) {
  using namespace mixle::cudasim;
  auto lock = lock_sim();
  Simulator& s = sim();
  *p = nullptr;
  auto st = stream_or_null(stream);
  if (!st) return note(cudaErrorInvalidResourceHandle);
  if (const cudaError_t e = s.devices[static_cast<std::size_t>(st->device)].sticky; e != cudaSuccess) return note(e);
  return note(s.allocate_device(st->device, bytes, p));
}

inline cudaError_t cudaFreeAsync(void* p, cudaStream_t stream) {
  using namespace mixle::cudasim;
  auto lock = lock_sim();
  Simulator& s = sim();
  auto st = stream_or_null(stream);
  if (!st) return note(cudaErrorInvalidResourceHandle);
  if (p == nullptr) return cudaSuccess;
  const Allocation* a = s.find(p);
  if (!a || a->device < 0 || a->base != p) {
    report("cudaFreeAsync: the pointer is " + s.describe(p) + ", not the start of a device allocation");
    return note(cudaErrorInvalidValue);
  }
  Op op;
  op.what = "cudaFreeAsync";
  op.run = [p] {
    sim().free_device(p);
    return OpStatus::done;
  };
  s.enqueue(st, std::move(op));
  return cudaSuccess;
}

inline cudaError_t cudaHostAlloc(void** p, std::size_t bytes, unsigned int /*flags*/) {
  using namespace mixle::cudasim;
  auto lock = lock_sim();
  Simulator& s = sim();
  *p = nullptr;
  if (s.device_count() == 0) return note(cudaErrorNoDevice);
  // Page-locked memory is physical memory: a request beyond the machine's fails, as with CUDA
  // (and before malloc, which under AddressSanitizer would abort instead of returning null).
  const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
  if (pages > 0 && page > 0 && bytes > static_cast<std::size_t>(pages) * static_cast<std::size_t>(page))
    return note(cudaErrorMemoryAllocation);
  void* q = std::malloc(bytes == 0 ? 1 : bytes);
  if (!q) return note(cudaErrorMemoryAllocation);
  s.allocations[static_cast<char*>(q)] = Allocation{static_cast<char*>(q), bytes, -1, true, false};
  *p = q;
  return cudaSuccess;
}

inline cudaError_t cudaMallocHost(void** p, std::size_t bytes) { return cudaHostAlloc(p, bytes, cudaHostAllocDefault); }

inline cudaError_t cudaFreeHost(void* p) {
  using namespace mixle::cudasim;
  auto lock = lock_sim();
  Simulator& s = sim();
  if (p == nullptr) return cudaSuccess;
  auto it = s.allocations.find(static_cast<const char*>(p));
  if (it == s.allocations.end() || !it->second.pinned || it->second.registered) {
    report("cudaFreeHost: the pointer is " + s.describe(p) + ", not memory from cudaMallocHost");
    return note(cudaErrorInvalidValue);
  }
  // Like CUDA, wait for all device work: a queued copy may still read this buffer.
  for (int d = 0; d < s.device_count(); ++d)
    while (s.complete_device(d) == OpStatus::not_ready) {
      lock.unlock();
      std::this_thread::sleep_for(std::chrono::microseconds(50));
      lock.lock();
    }
  it = s.allocations.find(static_cast<const char*>(p));
  s.allocations.erase(it);
  std::free(p);
  return cudaSuccess;
}

inline cudaError_t cudaHostRegister(void* p, std::size_t bytes, unsigned int /*flags*/) {
  using namespace mixle::cudasim;
  auto lock = lock_sim();
  Simulator& s = sim();
  if (s.find(p) || (bytes && s.find(static_cast<char*>(p) + bytes - 1)))
    return note(cudaErrorHostMemoryAlreadyRegistered);
  s.allocations[static_cast<char*>(p)] = Allocation{static_cast<char*>(p), bytes, -1, true, true};
  return cudaSuccess;
}

inline cudaError_t cudaHostUnregister(void* p) {
  using namespace mixle::cudasim;
  auto lock = lock_sim();
  Simulator& s = sim();
  auto it = s.allocations.find(static_cast<const char*>(p));
  if (it == s.allocations.end() || !it->second.registered) return note(cudaErrorHostMemoryNotRegistered);
  s.allocations.erase(it);
  return cudaSuccess;
}

inline cudaError_t cudaMemcpyAsync(void* dst, const void* src, std::size_t bytes, cudaMemcpyKind kind,
                                   cudaStream_t stream = nullptr) {
  using namespace mixle::cudasim;
  auto lock = lock_sim();
  auto st = stream_or_null(stream);
  if (!st) return note(cudaErrorInvalidResourceHandle);
  if (const cudaError_t e = sim().devices[static_cast<std::size_t>(st->device)].sticky; e != cudaSuccess)
    return note(e);
  return copy_async(lock, "cudaMemcpyAsync", dst, src, bytes, kind, st);
}

/// Synchronous for the host: the copy runs on the legacy default stream and returns when done.
inline cudaError_t cudaMemcpy(void* dst, const void* src, std::size_t bytes, cudaMemcpyKind kind) {
  using namespace mixle::cudasim;
  auto lock = lock_sim();
  Simulator& s = sim();
  if (const cudaError_t e = current_device_ok(s); e != cudaSuccess) return note(e);
  auto st = s.devices[static_cast<std::size_t>(t_current_device)].legacy;
  if (const cudaError_t e = copy_async(lock, "cudaMemcpy", dst, src, bytes, kind, st); e != cudaSuccess) return e;
  return note(wait_for(lock, st, st->enqueued));
}

inline cudaError_t cudaMemsetAsync(void* p, int value, std::size_t bytes, cudaStream_t stream = nullptr) {
  using namespace mixle::cudasim;
  auto lock = lock_sim();
  Simulator& s = sim();
  auto st = stream_or_null(stream);
  if (!st) return note(cudaErrorInvalidResourceHandle);
  if (const cudaError_t e = s.devices[static_cast<std::size_t>(st->device)].sticky; e != cudaSuccess) return note(e);
  if (bytes == 0) return cudaSuccess;
  const Allocation* a = s.find(p, bytes);
  if (!a || a->device < 0) {
    report("cudaMemsetAsync: " + std::to_string(bytes) + " bytes at a pointer that is " + s.describe(p) +
           (s.find(p) ? " (the range runs past its end)" : ", not device memory"));
    return note(cudaErrorInvalidValue);
  }
  Op op;
  op.what = "cudaMemsetAsync";
  op.run = [p, value, bytes] {
    std::memset(p, value, bytes);
    sim().counters.memset_bytes += bytes;
    return OpStatus::done;
  };
  s.enqueue(st, std::move(op));
  return cudaSuccess;
}

inline cudaError_t cudaMemset(void* p, int value, std::size_t bytes) {
  using namespace mixle::cudasim;
  auto lock = lock_sim();
  Simulator& s = sim();
  if (const cudaError_t e = current_device_ok(s); e != cudaSuccess) return note(e);
  if (const cudaError_t e = cudaMemsetAsync(p, value, bytes, nullptr); e != cudaSuccess) return e;
  auto st = s.devices[static_cast<std::size_t>(t_current_device)].legacy;
  return note(wait_for(lock, st, st->enqueued));
}

// ---- streams and events ------------------------------------------------------------------------
inline cudaError_t cudaStreamCreateWithFlags(cudaStream_t* stream, unsigned int flags) {
  using namespace mixle::cudasim;
  auto lock = lock_sim();
  Simulator& s = sim();
  *stream = nullptr;
  if (const cudaError_t e = current_device_ok(s); e != cudaSuccess) return note(e);
  auto st = std::make_shared<StreamState>();
  st->device = t_current_device;
  st->blocking = (flags & cudaStreamNonBlocking) == 0;
  *stream = reinterpret_cast<cudaStream_t>(st.get());
  s.streams[st.get()] = st;
  return cudaSuccess;
}

inline cudaError_t cudaStreamCreate(cudaStream_t* stream) {
  return cudaStreamCreateWithFlags(stream, cudaStreamDefault);
}

inline cudaError_t cudaStreamDestroy(cudaStream_t stream) {
  using namespace mixle::cudasim;
  auto lock = lock_sim();
  Simulator& s = sim();
  auto it = s.streams.find(stream);
  if (it == s.streams.end()) return note(cudaErrorInvalidResourceHandle);
  auto st = it->second;
  // CUDA releases a stream once its work is done; the simulator finishes that work now.
  wait_for(lock, st, st->enqueued);
  s.streams.erase(stream);
  return cudaSuccess;
}

inline cudaError_t cudaStreamSynchronize(cudaStream_t stream) {
  using namespace mixle::cudasim;
  auto lock = lock_sim();
  auto st = stream_or_null(stream);
  if (!st) return note(cudaErrorInvalidResourceHandle);
  return note(wait_for(lock, st, st->enqueued));
}

/// Runs what it can of the stream's work: cudaSuccess when all of it is done, cudaErrorNotReady
/// while a collective waits for its peers.
inline cudaError_t cudaStreamQuery(cudaStream_t stream) {
  using namespace mixle::cudasim;
  auto lock = lock_sim();
  Simulator& s = sim();
  auto st = stream_or_null(stream);
  if (!st) return note(cudaErrorInvalidResourceHandle);
  if (s.complete_all(*st) == OpStatus::not_ready) return cudaErrorNotReady;
  return note(s.devices[static_cast<std::size_t>(st->device)].sticky);
}

inline cudaError_t cudaLaunchHostFunc(cudaStream_t stream, cudaHostFn_t fn, void* user_data) {
  using namespace mixle::cudasim;
  auto lock = lock_sim();
  auto st = stream_or_null(stream);
  if (!st) return note(cudaErrorInvalidResourceHandle);
  Op op;
  op.what = "cudaLaunchHostFunc";
  op.run = [fn, user_data] {
    fn(user_data);
    return OpStatus::done;
  };
  sim().enqueue(st, std::move(op));
  return cudaSuccess;
}

inline cudaError_t cudaEventCreateWithFlags(cudaEvent_t* event, unsigned int flags) {
  using namespace mixle::cudasim;
  auto lock = lock_sim();
  Simulator& s = sim();
  *event = nullptr;
  if (const cudaError_t e = current_device_ok(s); e != cudaSuccess) return note(e);
  auto ev = std::make_shared<EventState>();
  ev->device = t_current_device;
  ev->flags = flags;
  *event = reinterpret_cast<cudaEvent_t>(ev.get());
  s.events[ev.get()] = ev;
  return cudaSuccess;
}

inline cudaError_t cudaEventCreate(cudaEvent_t* event) { return cudaEventCreateWithFlags(event, cudaEventDefault); }

inline cudaError_t cudaEventDestroy(cudaEvent_t event) {
  using namespace mixle::cudasim;
  auto lock = lock_sim();
  return sim().events.erase(event) ? cudaSuccess : note(cudaErrorInvalidResourceHandle);
}

inline cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream = nullptr) {
  using namespace mixle::cudasim;
  auto lock = lock_sim();
  Simulator& s = sim();
  auto it = s.events.find(event);
  auto st = stream_or_null(stream);
  if (it == s.events.end() || !st) return note(cudaErrorInvalidResourceHandle);
  EventState& ev = *it->second;
  if (ev.device != st->device) return note(cudaErrorInvalidResourceHandle);
  if (const cudaError_t e = s.devices[static_cast<std::size_t>(st->device)].sticky; e != cudaSuccess) return note(e);
  std::shared_ptr<EventState> keep = it->second;
  Op op;
  op.what = "cudaEventRecord";
  const std::uint64_t seq = st->enqueued + 1;
  op.run = [keep, seq, st] {
    if (keep->last.stream == st && keep->last.seq == seq) keep->time_ms = sim().now_ms();
    return OpStatus::done;
  };
  s.enqueue(st, std::move(op));
  ev.last = {st, seq};
  ev.recorded = true;
  return cudaSuccess;
}

inline cudaError_t cudaEventSynchronize(cudaEvent_t event) {
  using namespace mixle::cudasim;
  auto lock = lock_sim();
  Simulator& s = sim();
  auto it = s.events.find(event);
  if (it == s.events.end()) return note(cudaErrorInvalidResourceHandle);
  if (!it->second->recorded) return cudaSuccess;  // never recorded: nothing to wait for
  const Dependency last = it->second->last;
  return note(wait_for(lock, last.stream, last.seq));
}

inline cudaError_t cudaEventQuery(cudaEvent_t event) {
  using namespace mixle::cudasim;
  auto lock = lock_sim();
  Simulator& s = sim();
  auto it = s.events.find(event);
  if (it == s.events.end()) return note(cudaErrorInvalidResourceHandle);
  if (!it->second->recorded) return cudaSuccess;
  const Dependency last = it->second->last;
  if (s.complete(*last.stream, last.seq) == OpStatus::not_ready) return cudaErrorNotReady;
  return note(s.devices[static_cast<std::size_t>(last.stream->device)].sticky);
}

inline cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t start, cudaEvent_t end) {
  using namespace mixle::cudasim;
  auto lock = lock_sim();
  Simulator& s = sim();
  auto a = s.events.find(start), b = s.events.find(end);
  if (a == s.events.end() || b == s.events.end()) return note(cudaErrorInvalidResourceHandle);
  if ((a->second->flags | b->second->flags) & cudaEventDisableTiming) return note(cudaErrorInvalidResourceHandle);
  for (auto* e : {a->second.get(), b->second.get()})
    if (!e->recorded || e->last.stream->completed < e->last.seq) return note(cudaErrorNotReady);
  *ms = static_cast<float>(b->second->time_ms - a->second->time_ms);
  return cudaSuccess;
}

inline cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned int /*flags*/ = 0) {
  using namespace mixle::cudasim;
  auto lock = lock_sim();
  Simulator& s = sim();
  auto st = stream_or_null(stream);
  auto it = s.events.find(event);
  if (!st || it == s.events.end()) return note(cudaErrorInvalidResourceHandle);
  if (!it->second->recorded) return cudaSuccess;  // waits for nothing, as in CUDA
  Op op;
  op.what = "cudaStreamWaitEvent";
  op.waits.push_back(it->second->last);
  op.run = [] { return OpStatus::done; };
  s.enqueue(st, std::move(op));
  return cudaSuccess;
}

// ---- the C++ conveniences of cuda_runtime.h --------------------------------------------------
template <class T>
cudaError_t cudaMalloc(T** p, std::size_t bytes) {
  return cudaMalloc(reinterpret_cast<void**>(p), bytes);
}
template <class T>
cudaError_t cudaMallocHost(T** p, std::size_t bytes) {
  return cudaMallocHost(reinterpret_cast<void**>(p), bytes);
}
template <class T>
cudaError_t cudaMallocAsync(T** p, std::size_t bytes, cudaStream_t stream) {
  return cudaMallocAsync(reinterpret_cast<void**>(p), bytes, stream);
}
