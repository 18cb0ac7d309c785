// Device code's builtins in the simulator: threadIdx and friends, barriers, warp collectives,
// atomics, and the intrinsics that are not ordinary C++ math — what <cuda_runtime.h> gives a
// kernel. Standard math (log, exp, lgamma, isfinite, …) is the host's libm (glibc): CUDA's
// versions are within their documented ulp bounds of the exact result and glibc's within ½–1
// ulp, so the two differ by a few ulps at most; tests bound backend differences by CUDA's
// documented error, never by what the simulator happens to give. The fast-math intrinsics
// (__expf, __logf, __fdividef, …) differ from libm by far more: they are computed the way the
// hardware approximates them (a float product, then the base-2 function), which reproduces the
// error CUDA documents (e.g. __expf's 2 + ⌊1.173·|x|⌋ ulps), and __fdividef's documented zero
// for divisors beyond 2¹²⁶.
#pragma once

#include "mixle/cudasim/block.hpp"

#include <math.h>

#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

// ---- builtins ------------------------------------------------------------------------------
inline const uint3& threadIdx = mixle::cudasim::g_thread_idx;
inline const uint3& blockIdx = mixle::cudasim::g_block_idx;
inline const dim3& blockDim = mixle::cudasim::g_block_dim;
inline const dim3& gridDim = mixle::cudasim::g_grid_dim;
constexpr int warpSize = 32;

namespace mixle::cudasim::device {

inline SimThread& self() {
  if (g_block == nullptr || g_block->current == nullptr) {
    std::fprintf(stderr, "mixle CUDA simulator: a device builtin was called outside a kernel\n");
    std::abort();
  }
  return *g_block->current;
}

inline int barrier(BarrierOp op, int predicate) {
  SimThread& t = self();
  t.state = ThreadState::barrier;
  t.barrier = op;
  t.value = predicate != 0;
  yield_to_scheduler();
  return static_cast<int>(t.result);
}

template <class T>
std::uint64_t bits_of(T v) {
  static_assert(std::is_trivially_copyable_v<T> && sizeof(T) <= 8,
                "warp collectives exchange scalars of at most 8 bytes");
  std::uint64_t b = 0;
  std::memcpy(&b, &v, sizeof v);
  return b;
}

template <class T>
T from_bits(std::uint64_t b) {
  T v;
  std::memcpy(&v, &b, sizeof v);
  return v;
}

inline std::uint64_t collective(WarpOp op, unsigned mask, std::uint64_t value, int param, int width,
                                bool is_signed = false) {
  SimThread& t = self();
  if (width < 1 || width > 32 || (width & (width - 1)) != 0)
    thread_fault(std::string(warp_op_name(op)) + ": width " + std::to_string(width) +
                 " is not a power of two from 1 to 32");
  t.state = ThreadState::warp;
  t.op = op;
  t.mask = mask;
  t.width = width;
  t.param = param;
  t.value = value;
  t.is_signed = is_signed;
  yield_to_scheduler();
  return t.result;
}

}  // namespace mixle::cudasim::device

inline void __syncthreads() { mixle::cudasim::device::barrier(mixle::cudasim::BarrierOp::sync, 0); }
inline int __syncthreads_count(int p) { return mixle::cudasim::device::barrier(mixle::cudasim::BarrierOp::count, p); }
inline int __syncthreads_and(int p) { return mixle::cudasim::device::barrier(mixle::cudasim::BarrierOp::all, p); }
inline int __syncthreads_or(int p) { return mixle::cudasim::device::barrier(mixle::cudasim::BarrierOp::any, p); }

inline void __syncwarp(unsigned mask = 0xffffffffu) {
  mixle::cudasim::device::collective(mixle::cudasim::WarpOp::syncwarp, mask, 0, 0, 32);
}
template <class T>
T __shfl_sync(unsigned mask, T v, int src_lane, int width = warpSize) {
  namespace d = mixle::cudasim::device;
  return d::from_bits<T>(d::collective(mixle::cudasim::WarpOp::shfl, mask, d::bits_of(v), src_lane, width));
}
template <class T>
T __shfl_up_sync(unsigned mask, T v, unsigned delta, int width = warpSize) {
  namespace d = mixle::cudasim::device;
  return d::from_bits<T>(
      d::collective(mixle::cudasim::WarpOp::shfl_up, mask, d::bits_of(v), static_cast<int>(delta), width));
}
template <class T>
T __shfl_down_sync(unsigned mask, T v, unsigned delta, int width = warpSize) {
  namespace d = mixle::cudasim::device;
  return d::from_bits<T>(
      d::collective(mixle::cudasim::WarpOp::shfl_down, mask, d::bits_of(v), static_cast<int>(delta), width));
}
template <class T>
T __shfl_xor_sync(unsigned mask, T v, int lane_mask, int width = warpSize) {
  namespace d = mixle::cudasim::device;
  return d::from_bits<T>(d::collective(mixle::cudasim::WarpOp::shfl_xor, mask, d::bits_of(v), lane_mask, width));
}
inline unsigned __ballot_sync(unsigned mask, int predicate) {
  return static_cast<unsigned>(
      mixle::cudasim::device::collective(mixle::cudasim::WarpOp::ballot, mask, predicate != 0, 0, 32));
}
inline int __any_sync(unsigned mask, int predicate) {
  return static_cast<int>(mixle::cudasim::device::collective(mixle::cudasim::WarpOp::any, mask, predicate != 0, 0, 32));
}
inline int __all_sync(unsigned mask, int predicate) {
  return static_cast<int>(mixle::cudasim::device::collective(mixle::cudasim::WarpOp::all, mask, predicate != 0, 0, 32));
}
inline unsigned __reduce_add_sync(unsigned mask, unsigned v) {
  return static_cast<unsigned>(mixle::cudasim::device::collective(mixle::cudasim::WarpOp::reduce_add, mask, v, 0, 32));
}
inline int __reduce_add_sync(unsigned mask, int v) {
  return static_cast<int>(__reduce_add_sync(mask, static_cast<unsigned>(v)));
}
inline unsigned __reduce_min_sync(unsigned mask, unsigned v) {
  return static_cast<unsigned>(mixle::cudasim::device::collective(mixle::cudasim::WarpOp::reduce_min, mask, v, 0, 32));
}
inline int __reduce_min_sync(unsigned mask, int v) {
  return static_cast<int>(mixle::cudasim::device::collective(mixle::cudasim::WarpOp::reduce_min, mask,
                                                             static_cast<std::uint32_t>(v), 0, 32, true));
}
inline unsigned __reduce_max_sync(unsigned mask, unsigned v) {
  return static_cast<unsigned>(mixle::cudasim::device::collective(mixle::cudasim::WarpOp::reduce_max, mask, v, 0, 32));
}
inline int __reduce_max_sync(unsigned mask, int v) {
  return static_cast<int>(mixle::cudasim::device::collective(mixle::cudasim::WarpOp::reduce_max, mask,
                                                             static_cast<std::uint32_t>(v), 0, 32, true));
}
/// The lanes of the calling warp that have not exited (the simulator has no notion of
/// convergence; code must not rely on __activemask for correctness, and mixle's does not).
inline unsigned __activemask() {
  using namespace mixle::cudasim;
  SimThread& t = device::self();
  unsigned m = 0;
  const int n = static_cast<int>(g_block->threads.size());
  for (int l = 0; l < 32 && t.warp * 32 + l < n; ++l)
    if (g_block->threads[static_cast<std::size_t>(t.warp * 32 + l)].state != ThreadState::exited) m |= 1u << l;
  return m;
}

[[noreturn]] inline void __trap() { mixle::cudasim::thread_fault("__trap() called"); }
inline void __threadfence() { std::atomic_thread_fence(std::memory_order_seq_cst); }
inline void __threadfence_block() { std::atomic_thread_fence(std::memory_order_seq_cst); }
inline void __threadfence_system() { std::atomic_thread_fence(std::memory_order_seq_cst); }
inline void __nanosleep(unsigned) {}
inline long long clock64() {
  static long long ticks = 0;
  return ticks += 100;
}
template <class T>
T __ldg(const T* p) {
  return *p;
}

// ---- atomics (one simulated thread runs at a time: a read-modify-write is atomic) -----------
// Integer arithmetic wraps as on the GPU (through unsigned arithmetic, never signed overflow).
#define MIXLE_SIM_ATOMIC_RMW(name, type, expr) \
  inline type name(type* address, type val) {  \
    const type old = *address;                 \
    *address = (expr);                         \
    return old;                                \
  }
MIXLE_SIM_ATOMIC_RMW(atomicAdd, int, static_cast<int>(static_cast<unsigned>(old) + static_cast<unsigned>(val)))
MIXLE_SIM_ATOMIC_RMW(atomicAdd, unsigned, old + val)
MIXLE_SIM_ATOMIC_RMW(atomicAdd, unsigned long long, old + val)
MIXLE_SIM_ATOMIC_RMW(atomicAdd, float, old + val)
MIXLE_SIM_ATOMIC_RMW(atomicAdd, double, old + val)
MIXLE_SIM_ATOMIC_RMW(atomicSub, int, static_cast<int>(static_cast<unsigned>(old) - static_cast<unsigned>(val)))
MIXLE_SIM_ATOMIC_RMW(atomicSub, unsigned, old - val)
MIXLE_SIM_ATOMIC_RMW(atomicExch, int, val)
MIXLE_SIM_ATOMIC_RMW(atomicExch, unsigned, val)
MIXLE_SIM_ATOMIC_RMW(atomicExch, unsigned long long, val)
MIXLE_SIM_ATOMIC_RMW(atomicExch, float, val)
MIXLE_SIM_ATOMIC_RMW(atomicMin, int, val < old ? val : old)
MIXLE_SIM_ATOMIC_RMW(atomicMin, unsigned, val < old ? val : old)
MIXLE_SIM_ATOMIC_RMW(atomicMin, long long, val < old ? val : old)
MIXLE_SIM_ATOMIC_RMW(atomicMin, unsigned long long, val < old ? val : old)
MIXLE_SIM_ATOMIC_RMW(atomicMax, int, val > old ? val : old)
MIXLE_SIM_ATOMIC_RMW(atomicMax, unsigned, val > old ? val : old)
MIXLE_SIM_ATOMIC_RMW(atomicMax, long long, val > old ? val : old)
MIXLE_SIM_ATOMIC_RMW(atomicMax, unsigned long long, val > old ? val : old)
MIXLE_SIM_ATOMIC_RMW(atomicInc, unsigned, old >= val ? 0u : old + 1u)
MIXLE_SIM_ATOMIC_RMW(atomicDec, unsigned, (old == 0u || old > val) ? val : old - 1u)
MIXLE_SIM_ATOMIC_RMW(atomicAnd, int, old& val)
MIXLE_SIM_ATOMIC_RMW(atomicAnd, unsigned, old& val)
MIXLE_SIM_ATOMIC_RMW(atomicAnd, unsigned long long, old& val)
MIXLE_SIM_ATOMIC_RMW(atomicOr, int, old | val)
MIXLE_SIM_ATOMIC_RMW(atomicOr, unsigned, old | val)
MIXLE_SIM_ATOMIC_RMW(atomicOr, unsigned long long, old | val)
MIXLE_SIM_ATOMIC_RMW(atomicXor, int, old ^ val)
MIXLE_SIM_ATOMIC_RMW(atomicXor, unsigned, old ^ val)
MIXLE_SIM_ATOMIC_RMW(atomicXor, unsigned long long, old ^ val)
#undef MIXLE_SIM_ATOMIC_RMW
template <class T>
T atomicCAS(T* address, T compare, T val) {
  static_assert(std::is_same_v<T, int> || std::is_same_v<T, unsigned> || std::is_same_v<T, unsigned long long> ||
                    std::is_same_v<T, unsigned short>,
                "atomicCAS exists for int, unsigned, unsigned long long and unsigned short");
  const T old = *address;
  if (old == compare) *address = val;
  return old;
}

// ---- integer and bit intrinsics ------------------------------------------------------------
inline int __popc(unsigned x) { return __builtin_popcount(x); }
inline int __popcll(unsigned long long x) { return __builtin_popcountll(x); }
inline int __clz(int x) { return x == 0 ? 32 : __builtin_clz(static_cast<unsigned>(x)); }
inline int __clzll(long long x) { return x == 0 ? 64 : __builtin_clzll(static_cast<unsigned long long>(x)); }
inline int __ffs(int x) { return __builtin_ffs(x); }
inline int __ffsll(long long x) { return __builtin_ffsll(x); }
inline unsigned __brev(unsigned x) {
  unsigned r = 0;
  for (int i = 0; i < 32; ++i) r |= ((x >> i) & 1u) << (31 - i);
  return r;
}
inline float __int_as_float(int x) { return mixle::cudasim::device::from_bits<float>(static_cast<std::uint32_t>(x)); }
inline int __float_as_int(float x) {
  return static_cast<int>(static_cast<std::uint32_t>(mixle::cudasim::device::bits_of(x)));
}
inline float __uint_as_float(unsigned x) { return mixle::cudasim::device::from_bits<float>(x); }
inline unsigned __float_as_uint(float x) { return static_cast<unsigned>(mixle::cudasim::device::bits_of(x)); }
inline double __longlong_as_double(long long x) {
  return mixle::cudasim::device::from_bits<double>(static_cast<std::uint64_t>(x));
}
inline long long __double_as_longlong(double x) { return static_cast<long long>(mixle::cudasim::device::bits_of(x)); }

// min and max for device code, as CUDA declares them (global namespace, same-type overloads).
#define MIXLE_SIM_MINMAX(type)                              \
  inline type min(type a, type b) { return b < a ? b : a; } \
  inline type max(type a, type b) { return a < b ? b : a; }
MIXLE_SIM_MINMAX(int)
MIXLE_SIM_MINMAX(unsigned int)
MIXLE_SIM_MINMAX(long)
MIXLE_SIM_MINMAX(unsigned long)
MIXLE_SIM_MINMAX(long long)
MIXLE_SIM_MINMAX(unsigned long long)
#undef MIXLE_SIM_MINMAX
inline float min(float a, float b) { return fminf(a, b); }
inline float max(float a, float b) { return fmaxf(a, b); }
inline double min(double a, double b) { return fmin(a, b); }
inline double max(double a, double b) { return fmax(a, b); }

// ---- floating-point intrinsics -------------------------------------------------------------
// Rounded operations: separate calls, so the compiler cannot contract them into an FMA.
__attribute__((noinline)) inline float __fadd_rn(float a, float b) { return a + b; }
__attribute__((noinline)) inline float __fmul_rn(float a, float b) { return a * b; }
__attribute__((noinline)) inline double __dadd_rn(double a, double b) { return a + b; }
__attribute__((noinline)) inline double __dmul_rn(double a, double b) { return a * b; }
inline float __fmaf_rn(float a, float b, float c) { return fmaf(a, b, c); }
inline double __fma_rn(double a, double b, double c) { return fma(a, b, c); }
inline float __saturatef(float x) { return x != x ? 0.0f : x < 0.0f ? 0.0f : x > 1.0f ? 1.0f : x; }
// The fast approximations: the argument is scaled in float, then the base-2 function applied,
// as the hardware does (ex2.approx / lg2.approx); the float rounding of the scaled argument is
// what makes their error grow with |x|.
__attribute__((noinline)) inline float __expf(float x) { return exp2f(x * 1.44269504f); }
__attribute__((noinline)) inline float __exp10f(float x) { return exp2f(x * 3.32192809f); }
__attribute__((noinline)) inline float __logf(float x) { return log2f(x) * 0.693147181f; }
__attribute__((noinline)) inline float __log2f(float x) { return log2f(x); }
__attribute__((noinline)) inline float __log10f(float x) { return log2f(x) * 0.301029996f; }
__attribute__((noinline)) inline float __powf(float x, float y) { return exp2f(y * log2f(x)); }
/// 2 ulps for |y| in [2⁻¹²⁶, 2¹²⁶]; CUDA documents 0 for 2¹²⁶ < |y| < 2¹²⁸ (and NaN for an
/// infinite x there), which code dividing by large values must survive.
inline float __fdividef(float x, float y) {
  const float ay = fabsf(y);
  if (ay > 8.5070592e37f && ay < INFINITY) return isinf(x) ? NAN : 0.0f;
  return x / y;
}
inline float __frcp_rn(float x) { return 1.0f / x; }
inline float __fsqrt_rn(float x) { return sqrtf(x); }
inline float rsqrtf(float x) { return 1.0f / sqrtf(x); }
inline double rsqrt(double x) { return 1.0 / sqrt(x); }
inline float __sinf(float x) { return sinf(x); }
inline float __cosf(float x) { return cosf(x); }
inline int __float2int_rn(float x) { return static_cast<int>(rintf(x)); }
inline int __float2int_rz(float x) { return static_cast<int>(x); }
inline int __double2int_rn(double x) { return static_cast<int>(rint(x)); }
inline float __int2float_rn(int x) { return static_cast<float>(x); }

namespace mixle::cudasim {
/// This block's dynamic shared memory (the launch's third argument), through MIXLE_DYNAMIC_SHARED.
template <class T>
T* dynamic_shared() {
  return reinterpret_cast<T*>(device::self(), g_block->dynamic_shared.get());
}
}  // namespace mixle::cudasim
