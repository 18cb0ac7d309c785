// Fixed-width SIMD values through GCC/Clang vector extensions: 64-byte vectors (one AVX-512
// register, or two AVX2 / four SSE registers where the target has no AVX-512). Used where
// the compiler cannot be trusted to keep accumulators in registers by itself.
#pragma once

#include <cmath>
#include <cstring>

namespace mixle::kernels::cpu {

template <class T>
struct Simd {
  typedef T type __attribute__((vector_size(64)));
  static constexpr int lanes = 64 / static_cast<int>(sizeof(T));

  static type load(const T* p) {
    type v;
    std::memcpy(&v, p, sizeof v);
    return v;
  }
  static void store(T* p, type v) { std::memcpy(p, &v, sizeof v); }
  static type broadcast(T x) { return type{} + x; }  // scalar operands broadcast
  /// a·b + c rounded once in every lane (one vfmadd where the target has FMA): an explicit fused
  /// operation, so that a lane computes what the scalar std::fma computes, at every
  /// optimisation level and whatever the compiler's contraction setting.
  static type fma(type a, type b, type c) {
    type r;
    for (int i = 0; i < lanes; ++i) r[i] = std::fma(a[i], b[i], c[i]);
    return r;
  }
};

}  // namespace mixle::kernels::cpu
