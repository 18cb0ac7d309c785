// Running a grid: blocks one after another, the threads of a block as fibers.
//
// One ready thread runs at a time, until it reaches a synchronisation point — __syncthreads (and
// its _count/_and/_or forms), a warp collective (__shfl*_sync, __ballot_sync, __any_sync,
// __all_sync, __syncwarp, __reduce_*_sync) — or returns. A warp collective completes as soon as
// every lane its mask names has reached a collective with the same operation, mask and width, and
// its lanes may then run ahead of the rest of the block (as a warp does); a barrier completes when
// every thread of the block is at one. What cannot complete is a fault, reported with the kernel,
// block, warp and lane:
//   · a lane named in a mask that has exited, waits at a barrier or at another collective;
//   · a lane whose own bit is missing from its mask, or a shuffle reading a lane outside it
//     (CUDA leaves the value undefined; the simulator refuses to invent one);
//   · a barrier reached while other threads of the block have exited (divergent __syncthreads).
// Which ready thread runs next — the lowest, the highest, or a random one — and the order of
// blocks follow MIXLE_SIM_SCHEDULE (forward, reverse, random:SEED), so code that relies on an
// order CUDA does not promise — typically a missing __syncthreads — gives different results under
// different schedules.
//
// One grid runs at a time in the whole process (the caller holds the simulator's lock), so the
// kernel builtins (threadIdx, …) are plain globals set before each switch, and block-shared
// variables can live in static storage; the section holding them is overwritten with 0xff bytes
// before each block. Dynamic shared memory (MIXLE_DYNAMIC_SHARED) is a heap block of exactly
// the launch's size (128-byte aligned), so AddressSanitizer catches an overrun of it.
#pragma once

#include "mixle/cudasim/fiber.hpp"
#include "mixle/cudasim/types.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <numeric>
#include <random>
#include <string>
#include <vector>

extern "C" char __start_mixle_sim_shared[] __attribute__((weak));
extern "C" char __stop_mixle_sim_shared[] __attribute__((weak));

namespace mixle::cudasim {

enum class ThreadState { ready, barrier, warp, exited };

enum class WarpOp {
  shfl,
  shfl_up,
  shfl_down,
  shfl_xor,
  ballot,
  any,
  all,
  syncwarp,
  reduce_add,
  reduce_min,
  reduce_max
};

inline const char* warp_op_name(WarpOp op) {
  switch (op) {
    case WarpOp::shfl: return "__shfl_sync";
    case WarpOp::shfl_up: return "__shfl_up_sync";
    case WarpOp::shfl_down: return "__shfl_down_sync";
    case WarpOp::shfl_xor: return "__shfl_xor_sync";
    case WarpOp::ballot: return "__ballot_sync";
    case WarpOp::any: return "__any_sync";
    case WarpOp::all: return "__all_sync";
    case WarpOp::syncwarp: return "__syncwarp";
    case WarpOp::reduce_add: return "__reduce_add_sync";
    case WarpOp::reduce_min: return "__reduce_min_sync";
    case WarpOp::reduce_max: return "__reduce_max_sync";
  }
  return "?";
}

enum class BarrierOp { sync, count, all, any };

/// Thrown inside a simulated thread to unwind it when its block is abandoned after a fault.
struct KernelAbort {};

struct SimThread {
  uint3 idx{};
  int linear = 0, warp = 0, lane = 0;
  ThreadState state = ThreadState::ready;
  // The collective the thread waits at.
  WarpOp op = WarpOp::syncwarp;
  unsigned mask = 0;
  int width = 32;
  int param = 0;
  bool is_signed = false;    // reduce_min/max: signed or unsigned comparison
  std::uint64_t value = 0;   // the thread's operand (bit pattern)
  std::uint64_t result = 0;  // what the collective returns to it
  BarrierOp barrier = BarrierOp::sync;
  boost::context::fiber fiber, caller;
  FiberStack stack;
  void* asan_fake = nullptr;
  bool started = false;
};

/// What a launch asks for; `body` calls the kernel with the thread's own copy of the arguments.
struct Grid {
  std::string kernel;
  dim3 grid, block;
  std::size_t dynamic_shared = 0;
  std::uint64_t launch_id = 0;
  std::function<void()> body;
};

/// Frees what posix_memalign gave.
struct FreeBytes {
  void operator()(unsigned char* p) const { std::free(p); }
};

/// The block being run (one at a time in the process).
struct BlockRun {
  const Grid* grid = nullptr;
  uint3 block{};
  std::vector<SimThread> threads;
  SimThread* current = nullptr;
  bool killed = false;
  std::string fault;  // set when `killed` by a fault
  std::unique_ptr<unsigned char, FreeBytes> dynamic_shared;
  const void* main_bottom = nullptr;  // the scheduler's stack (AddressSanitizer bookkeeping)
  std::size_t main_size = 0;
};

// The kernel builtins read these (device.hpp): set by the scheduler before every switch.
inline uint3 g_thread_idx{}, g_block_idx{};
inline dim3 g_block_dim{}, g_grid_dim{};
inline BlockRun* g_block = nullptr;
inline StackPool g_stacks;

inline std::string where(const BlockRun& b, const SimThread* t) {
  char buf[256];
  if (t)
    std::snprintf(buf, sizeof buf, "kernel %s, block (%u,%u,%u), thread (%u,%u,%u) [warp %d lane %d]",
                  b.grid->kernel.c_str(), b.block.x, b.block.y, b.block.z, t->idx.x, t->idx.y, t->idx.z, t->warp,
                  t->lane);
  else
    std::snprintf(buf, sizeof buf, "kernel %s, block (%u,%u,%u)", b.grid->kernel.c_str(), b.block.x, b.block.y,
                  b.block.z);
  return buf;
}

/// Marks the block faulty (the first fault wins).
inline void block_fault(BlockRun& b, const SimThread* t, const std::string& what) {
  if (b.killed) return;
  b.killed = true;
  b.fault = where(b, t) + ": " + what;
}

/// Called by a simulated thread: hands control back to the scheduler until it resumes this
/// thread; unwinds the thread if its block was abandoned meanwhile.
inline void yield_to_scheduler() {
  BlockRun& b = *g_block;
  SimThread& t = *b.current;
  asan_start_switch(&t.asan_fake, b.main_bottom, b.main_size);
  t.caller = std::move(t.caller).resume();
  asan_finish_switch(t.asan_fake, &b.main_bottom, &b.main_size);
  if (b.killed) throw KernelAbort{};
}

/// A fault detected by a simulated thread itself (a bad argument to a collective, __trap).
[[noreturn]] inline void thread_fault(const std::string& what) {
  BlockRun& b = *g_block;
  block_fault(b, b.current, what);
  throw KernelAbort{};
}

/// The threads ready to run, as a bit set (at most 1024 threads): the schedule picks the lowest
/// (forward), the highest (reverse) or a random one.
class ReadySet {
 public:
  void add(int i) { words_[static_cast<std::size_t>(i) >> 6] |= std::uint64_t{1} << (i & 63); }
  void remove(int i) { words_[static_cast<std::size_t>(i) >> 6] &= ~(std::uint64_t{1} << (i & 63)); }
  bool empty() const {
    for (std::uint64_t w : words_)
      if (w) return false;
    return true;
  }
  int lowest() const {
    for (int w = 0; w < kWords; ++w)
      if (words_[w]) return w * 64 + __builtin_ctzll(words_[w]);
    return -1;
  }
  int highest() const {
    for (int w = kWords - 1; w >= 0; --w)
      if (words_[w]) return w * 64 + 63 - __builtin_clzll(words_[w]);
    return -1;
  }
  int nth(std::uint64_t k) const {  // k < count()
    for (int w = 0; w < kWords; ++w) {
      std::uint64_t bits = words_[w];
      const auto c = static_cast<std::uint64_t>(__builtin_popcountll(bits));
      if (k >= c) {
        k -= c;
        continue;
      }
      for (; k > 0; --k) bits &= bits - 1;
      return w * 64 + __builtin_ctzll(bits);
    }
    return -1;
  }
  std::uint64_t count() const {
    std::uint64_t c = 0;
    for (std::uint64_t w : words_) c += static_cast<std::uint64_t>(__builtin_popcountll(w));
    return c;
  }

 private:
  static constexpr int kWords = 16;
  std::uint64_t words_[kWords] = {};
};

/// Runs one block: one ready thread at a time, chosen by the schedule, each until it reaches a
/// synchronisation point. A warp collective completes as soon as the last lane its mask names
/// arrives — those lanes may then run ahead of threads that have not reached their own
/// synchronisation point yet, as warps do on a GPU — and a barrier when no thread can run.
class BlockScheduler {
 public:
  BlockScheduler(BlockRun& b, const Schedule& schedule)
      : b_(b),
        schedule_(schedule),
        rng_(schedule.seed * 0x9E3779B97F4A7C15ull ^ (b.grid->launch_id << 20) ^
             (static_cast<std::uint64_t>(b.block.x) << 40) ^ (static_cast<std::uint64_t>(b.block.y) << 8) ^ b.block.z) {
  }

  void run() {
    const int n = static_cast<int>(b_.threads.size());
    for (int i = 0; i < n; ++i) ready_.add(i);
    at_collective_.assign(static_cast<std::size_t>((n + 31) / 32), 0u);
    for (;;) {
      if (ready_.empty()) {
        // A collective still waiting now waits for a lane that cannot come: say which.
        for (SimThread& t : b_.threads)
          if (t.state == ThreadState::warp && !b_.killed) try_complete(t);
        if (b_.killed) return abandon();
        if (!ready_.empty()) continue;
        int exited = 0, at_barrier = 0;
        for (const SimThread& t : b_.threads) {
          exited += t.state == ThreadState::exited;
          at_barrier += t.state == ThreadState::barrier;
        }
        if (exited == n) return;
        if (at_barrier + exited == n) {
          if (exited > 0) {
            block_fault(b_, nullptr,
                        "__syncthreads reached by " + std::to_string(at_barrier) + " thread(s) while " +
                            std::to_string(exited) + " of the block's " + std::to_string(n) +
                            " have exited (a barrier in divergent code)");
            return abandon();
          }
          release_barrier();
          continue;
        }
        describe_deadlock();
        return abandon();
      }
      const int i = pick();
      SimThread& t = b_.threads[static_cast<std::size_t>(i)];
      resume(t);
      if (b_.killed) return abandon();
      if (t.state != ThreadState::ready) ready_.remove(i);
      if (t.state == ThreadState::warp) {
        arrive(t);
        if (b_.killed) return abandon();
      }
    }
  }

 private:
  int pick() {
    switch (schedule_.order) {
      case Order::forward: return ready_.lowest();
      case Order::reverse: return ready_.highest();
      case Order::random: return ready_.nth(rng_() % ready_.count());
    }
    return ready_.lowest();
  }

  void resume(SimThread& t) {
    g_thread_idx = t.idx;
    b_.current = &t;
    if (!t.started) {
      t.started = true;
      boost::context::stack_context sc;
      sc.size = t.stack.size;
      sc.sp = t.stack.bottom + t.stack.size;
      BlockRun* block = &b_;
      SimThread* self = &t;
      t.fiber = boost::context::fiber(std::allocator_arg, boost::context::preallocated(sc.sp, sc.size, sc),
                                      PoolStackAllocator{sc}, [block, self](boost::context::fiber&& caller) {
                                        asan_finish_switch(nullptr, &block->main_bottom, &block->main_size);
                                        self->caller = std::move(caller);
                                        try {
                                          if (!block->killed) block->grid->body();
                                        } catch (const KernelAbort&) {
                                        } catch (const std::exception& e) {
                                          block_fault(*block, self,
                                                      std::string("exception thrown in device code: ") + e.what());
                                        } catch (...) {
                                          block_fault(*block, self, "exception thrown in device code");
                                        }
                                        self->state = ThreadState::exited;
                                        asan_start_switch(nullptr, block->main_bottom, block->main_size);
                                        return std::move(self->caller);
                                      });
    }
    void* fake = nullptr;
    asan_start_switch(&fake, t.stack.bottom, t.stack.size);
    t.fiber = std::move(t.fiber).resume();
    asan_finish_switch(fake, nullptr, nullptr);
    b_.current = nullptr;
  }

  /// After a fault: every thread that is suspended resumes and unwinds; none starts anew.
  void abandon() {
    b_.killed = true;
    for (SimThread& t : b_.threads)
      if (t.started && t.state != ThreadState::exited) resume(t);
  }

  void release_barrier() {
    int count = 0;
    for (const SimThread& t : b_.threads) count += t.value != 0;
    const int n = static_cast<int>(b_.threads.size());
    for (SimThread& t : b_.threads) {
      switch (t.barrier) {
        case BarrierOp::sync: t.result = 0; break;
        case BarrierOp::count: t.result = static_cast<std::uint64_t>(count); break;
        case BarrierOp::all: t.result = count == n; break;
        case BarrierOp::any: t.result = count > 0; break;
      }
      t.state = ThreadState::ready;
      ready_.add(t.linear);
    }
  }

  std::string lane_name(int warp, int lane) const {
    return "lane " + std::to_string(lane) + " of warp " + std::to_string(warp);
  }

  static std::string hex(unsigned mask) {
    char buf[16];
    std::snprintf(buf, sizeof buf, "0x%08x", mask);
    return buf;
  }

  /// Thread `t` has reached a warp collective: once every lane its mask names is at one, check
  /// them and complete it. (Counted with a bit per lane: this runs at every lane's every
  /// collective.)
  void arrive(SimThread& t) {
    std::uint32_t& arrived = at_collective_[static_cast<std::size_t>(t.warp)];
    arrived |= 1u << t.lane;
    if ((arrived & t.mask) == t.mask) try_complete(t);
  }

  /// Completes `t`'s collective if every lane its mask names is there with the same operation,
  /// mask and width; faults if one of them can never come.
  void try_complete(SimThread& t) {
    const int n = static_cast<int>(b_.threads.size());
    const int w = t.warp, l = t.lane;
    const int lanes = std::min(32, n - w * 32);
    SimThread* lane_of[32] = {};
    for (int m = 0; m < lanes; ++m) lane_of[m] = &b_.threads[static_cast<std::size_t>(w * 32 + m)];
    // Built only for a report: this runs at every lane's every collective.
    auto call = [&t] { return std::string(warp_op_name(t.op)) + "(mask " + hex(t.mask) + ")"; };
    if (!(t.mask >> l & 1u)) return block_fault(b_, &t, call() + ": the calling lane is not in the mask");
    bool complete = true;
    for (int m = 0; m < 32; ++m) {
      if (!(t.mask >> m & 1u)) continue;
      if (m >= lanes)
        return block_fault(b_, &t,
                           call() + " names lane " + std::to_string(m) + ", which does not exist (the block has " +
                               std::to_string(n) + " threads)");
      const SimThread& o = *lane_of[m];
      switch (o.state) {
        case ThreadState::ready: complete = false; break;
        case ThreadState::exited:
          return block_fault(b_, &t, call() + " waits for " + lane_name(w, m) + ", which has exited");
        case ThreadState::barrier:
          return block_fault(b_, &t,
                             call() + " waits for " + lane_name(w, m) + ", which waits at __syncthreads (deadlock)");
        case ThreadState::warp:
          if (o.op != t.op || o.mask != t.mask || o.width != t.width)
            return block_fault(b_, &t,
                               call() + " meets " + std::string(warp_op_name(o.op)) + "(mask " + hex(o.mask) + ") in " +
                                   lane_name(w, m) + ": the lanes of a mask must reach the same collective");
          break;
      }
    }
    if (complete && complete_collective(lane_of, t.mask, w)) {
      at_collective_[static_cast<std::size_t>(w)] &= ~t.mask;
      for (int m = 0; m < 32; ++m)
        if (t.mask >> m & 1u) ready_.add(lane_of[m]->linear);
    }
  }

  bool complete_collective(SimThread* const* lane_of, unsigned mask, int warp) {
    const SimThread& first = *lane_of[__builtin_ctz(mask)];
    const int width = first.width;
    std::uint64_t combined = 0;
    switch (first.op) {
      case WarpOp::ballot:
      case WarpOp::any:
      case WarpOp::all: {
        unsigned ballot = 0;
        for (int m = 0; m < 32; ++m)
          if ((mask >> m & 1u) && lane_of[m]->value != 0) ballot |= 1u << m;
        combined = first.op == WarpOp::ballot ? ballot : first.op == WarpOp::any ? ballot != 0 : ballot == mask;
        break;
      }
      case WarpOp::reduce_add:
      case WarpOp::reduce_min:
      case WarpOp::reduce_max: {
        std::uint32_t acc = static_cast<std::uint32_t>(first.value);
        for (int m = 0; m < 32; ++m) {
          if (!(mask >> m & 1u)) continue;
          const std::uint32_t v = static_cast<std::uint32_t>(lane_of[m]->value);
          if (first.op == WarpOp::reduce_add) {
            if (lane_of[m] != &first) acc += v;
          } else if (first.is_signed) {
            const auto a = static_cast<std::int32_t>(acc), b = static_cast<std::int32_t>(v);
            acc = static_cast<std::uint32_t>(first.op == WarpOp::reduce_min ? std::min(a, b) : std::max(a, b));
          } else {
            acc = first.op == WarpOp::reduce_min ? std::min(acc, v) : std::max(acc, v);
          }
        }
        combined = acc;
        break;
      }
      default: break;
    }
    for (int m = 0; m < 32; ++m) {
      if (!(mask >> m & 1u)) continue;
      SimThread& t = *lane_of[m];
      const int base = (m / width) * width;
      int src = -1;  // the lane read; -1: the lane's own value
      switch (t.op) {
        case WarpOp::shfl: src = base + ((t.param % width) + width) % width; break;
        case WarpOp::shfl_up: src = m - t.param >= base ? m - t.param : -1; break;
        case WarpOp::shfl_down: src = m + t.param < base + width ? m + t.param : -1; break;
        case WarpOp::shfl_xor: src = (m ^ t.param) < base + width ? (m ^ t.param) : -1; break;
        default: break;
      }
      if (t.op == WarpOp::shfl || t.op == WarpOp::shfl_up || t.op == WarpOp::shfl_down || t.op == WarpOp::shfl_xor) {
        if (src >= 32 || src < -1) src = -1;
        if (src >= 0 && !(mask >> src & 1u)) {
          block_fault(b_, &t,
                      std::string(warp_op_name(t.op)) + "(mask " + hex(mask) + ") reads " + lane_name(warp, src) +
                          ", which is not in the mask (the value would be undefined)");
          return false;
        }
        t.result = src >= 0 ? lane_of[src]->value : t.value;
      } else {
        t.result = combined;
      }
      t.state = ThreadState::ready;
    }
    return true;
  }

  void describe_deadlock() {
    std::string what = "deadlock: no thread can proceed;";
    int shown = 0;
    for (const SimThread& t : b_.threads) {
      if (t.state == ThreadState::warp && shown++ < 4)
        what += " " + lane_name(t.warp, t.lane) + " waits at " + warp_op_name(t.op) + "(mask " + hex(t.mask) + ");";
    }
    block_fault(b_, nullptr, what);
  }

  BlockRun& b_;
  Schedule schedule_;
  std::mt19937_64 rng_;
  ReadySet ready_;
  std::vector<std::uint32_t> at_collective_;  // per warp: lanes waiting at a collective
};

/// Runs every block of `grid`; returns the fault report, or an empty string.
inline std::string run_grid(const Grid& grid, const Schedule& schedule) {
  const std::uint64_t gx = grid.grid.x, gy = grid.grid.y, gz = grid.grid.z;
  const std::uint64_t blocks = gx * gy * gz;
  const std::size_t threads = static_cast<std::size_t>(grid.block.x) * grid.block.y * grid.block.z;
  std::vector<std::uint32_t> order;
  const bool permuted = schedule.order != Order::forward && blocks <= (std::uint64_t{1} << 24);
  if (permuted) {
    order.resize(static_cast<std::size_t>(blocks));
    std::iota(order.begin(), order.end(), 0u);
    if (schedule.order == Order::reverse)
      std::reverse(order.begin(), order.end());
    else
      std::shuffle(order.begin(), order.end(),
                   std::mt19937_64(schedule.seed ^ (grid.launch_id * 0x9E3779B97F4A7C15ull)));
  }
  const std::size_t shared_bytes = static_cast<std::size_t>(__stop_mixle_sim_shared - __start_mixle_sim_shared);
  BlockRun b;
  b.grid = &grid;
  b.threads.resize(threads);
  g_block_dim = grid.block;
  g_grid_dim = grid.grid;
  for (std::uint64_t i = 0; i < blocks; ++i) {
    const std::uint64_t linear = permuted ? order[static_cast<std::size_t>(i)] : i;
    b.block = uint3{static_cast<unsigned>(linear % gx), static_cast<unsigned>(linear / gx % gy),
                    static_cast<unsigned>(linear / (gx * gy))};
    g_block_idx = b.block;
    if (shared_bytes) std::memset(__start_mixle_sim_shared, 0xff, shared_bytes);
    if (grid.dynamic_shared) {
      // 128-byte aligned, as the kernels declare it (wmma needs 256-bit alignment), and of exactly
      // the launch's size.
      void* p = nullptr;
      if (posix_memalign(&p, 128, grid.dynamic_shared) != 0) throw std::bad_alloc();
      b.dynamic_shared.reset(static_cast<unsigned char*>(p));
      std::memset(b.dynamic_shared.get(), 0xff, grid.dynamic_shared);
    }
    for (std::size_t i2 = 0; i2 < threads; ++i2) {
      SimThread& t = b.threads[i2];
      t = SimThread{};
      const unsigned lin = static_cast<unsigned>(i2);
      t.idx = uint3{lin % grid.block.x, lin / grid.block.x % grid.block.y, lin / (grid.block.x * grid.block.y)};
      t.linear = static_cast<int>(lin);
      t.warp = t.linear / 32;
      t.lane = t.linear % 32;
      t.stack = g_stacks.get(i2);
    }
    g_block = &b;
    BlockScheduler(b, schedule).run();
    g_block = nullptr;
    b.dynamic_shared.reset();
    if (b.killed) return b.fault;
  }
  return {};
}

}  // namespace mixle::cudasim
