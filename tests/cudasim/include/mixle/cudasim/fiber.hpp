// Fibers for the simulated threads of a block: Boost.Context's fcontext switch (user space, no
// system call — ucontext's swapcontext changes the signal mask on every switch and costs ~1.5 µs
// on the machines we test on), on stacks from a pool with a guard page below each, annotated for
// AddressSanitizer so it knows which stack is live.
#pragma once

#include <boost/context/fiber.hpp>
#include <boost/context/preallocated.hpp>

#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <vector>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/common_interface_defs.h>
#endif

namespace mixle::cudasim {

/// The stack of one simulated thread. 256 KiB under AddressSanitizer (its redzones make frames
/// larger), 128 KiB otherwise; a kernel's frame is a few hundred bytes to a few KiB.
#if defined(__SANITIZE_ADDRESS__)
constexpr std::size_t kFiberStackBytes = std::size_t{256} << 10;
#else
constexpr std::size_t kFiberStackBytes = std::size_t{128} << 10;
#endif

struct FiberStack {
  char* bottom = nullptr;  // lowest usable address (above the guard page)
  std::size_t size = 0;
};

/// Stacks for up to 1024 threads (the largest block), mapped on first use and kept: blocks run
/// one after another and reuse them.
class StackPool {
 public:
  FiberStack get(std::size_t i) {
    while (stacks_.size() <= i) stacks_.push_back(map_one());
    return stacks_[i];
  }

 private:
  static FiberStack map_one() {
    const std::size_t page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
    void* p = mmap(nullptr, kFiberStackBytes + page, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) {
      std::fprintf(stderr, "mixle CUDA simulator: cannot map a %zu-byte thread stack\n", kFiberStackBytes);
      std::abort();
    }
    mprotect(p, page, PROT_NONE);  // a stack overflow faults instead of corrupting a neighbour
    return {static_cast<char*>(p) + page, kFiberStackBytes};
  }
  std::vector<FiberStack> stacks_;
};

/// Boost.Context frees nothing: the pool owns the stacks.
struct PoolStackAllocator {
  boost::context::stack_context sc;
  boost::context::stack_context allocate() { return sc; }
  void deallocate(boost::context::stack_context&) noexcept {}
};

// AddressSanitizer must be told before every switch which stack will run, and after it where
// it came from (the sanitizer's fiber API); both compile to nothing without it.
#if defined(__SANITIZE_ADDRESS__)
inline void asan_start_switch(void** fake_save, const void* bottom, std::size_t size) {
  __sanitizer_start_switch_fiber(fake_save, bottom, size);
}
inline void asan_finish_switch(void* fake, const void** bottom_old, std::size_t* size_old) {
  __sanitizer_finish_switch_fiber(fake, bottom_old, size_old);
}
#else
inline void asan_start_switch(void**, const void*, std::size_t) {}
inline void asan_finish_switch(void*, const void**, std::size_t*) {}
#endif

}  // namespace mixle::cudasim
