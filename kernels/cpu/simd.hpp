// Fixed-width SIMD values through GCC/Clang vector extensions: 64-byte vectors (one AVX-512
// register, or two AVX2 / four SSE registers where the target has no AVX-512). Used where
// the compiler cannot be trusted to keep accumulators in registers by itself.
#pragma once

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
};

}  // namespace mixle::kernels::cpu
