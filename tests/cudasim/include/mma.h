// <mma.h> in a -DMIXLE_CUDA=SIM build: the warp matrix functions (nvcuda::wmma) for the one shape
// the kernels use, TF32 m16n16k8 with float accumulators — fragments, fill, load, store, mma.
//
// A fragment's element-to-lane mapping is unspecified in CUDA; here lane l holds elements
// l, l + 32, l + 64, … of the fragment's matrix in row-major order (A is 16 × 8, B 8 × 16, the
// accumulator 16 × 16), which gives CUDA's element counts (4, 4 and 8 a lane). Code that is
// correct for any mapping — elementwise work on `x[]`, whole fragments through load, store and
// mma — runs the same here; code that assumes the hardware's mapping does not.
//
// Each function is a warp collective: every lane of the warp must call it (the simulator's
// __shfl_sync rendezvous, so a missing or divergent lane is a fault, as for any collective),
// with the same pointer and leading dimension (checked); the pointer must be 256-bit aligned and
// the leading dimension a multiple of 4 floats (CUDA's rules, checked). The operands of mma_sync
// must be TF32 values (what __float_to_tf32 returns: the low 13 bits zero): CUDA asks kernels to
// convert them, and the simulator refuses an element that is not converted rather than guess
// what the tensor core does with the extra bits. A product of TF32 values is exact in float;
// the simulator adds the eight products of each output to the accumulator one by one in float,
// in k order. The hardware's adder is not specified to that level, so tests bound tensor-core
// results (docs/numerics.md) and never compare them bit for bit with the simulator's.
#pragma once

#include "cuda_runtime.h"
#include "mixle/cudasim/device.hpp"
#include "mixle/cudasim/tf32.hpp"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>

namespace nvcuda::wmma {

struct row_major;
struct col_major;
struct matrix_a;
struct matrix_b;
struct accumulator;
namespace precision {
struct tf32;
}

enum layout_t { mem_row_major, mem_col_major };

/// TF32 conversion as cvt.rna.tf32.f32: 10 explicit mantissa bits, to nearest, ties away from zero.
inline float __float_to_tf32(float in) { return ::mixle::cudasim::round_to_tf32(in); }

template <int kRows, int kCols, int kElements>
struct __frag_base {
  static constexpr int rows = kRows, cols = kCols;
  enum { num_elements = kElements, num_storage_elements = kElements };
  typedef float element_type;
  typedef float storage_element_type;
  float x[kElements];
};

template <typename Use, int m, int n, int k, typename T, typename Layout = void>
class fragment;

template <typename Layout>
class fragment<matrix_a, 16, 16, 8, precision::tf32, Layout> : public __frag_base<16, 8, 4> {};
template <typename Layout>
class fragment<matrix_b, 16, 16, 8, precision::tf32, Layout> : public __frag_base<8, 16, 4> {};
template <>
class fragment<accumulator, 16, 16, 8, float> : public __frag_base<16, 16, 8> {};

namespace sim_detail {

namespace d = ::mixle::cudasim::device;

inline int lane() { return d::self().lane; }

/// Every lane of the warp is here with the same (p, ldm), which CUDA's rules admit.
inline void check_collective(const char* what, const void* p, unsigned ldm) {
  const auto bits = reinterpret_cast<std::uintptr_t>(p);
  const std::uintptr_t p0 = __shfl_sync(0xffffffffu, bits, 0);
  const unsigned ldm0 = __shfl_sync(0xffffffffu, ldm, 0);
  if (p0 != bits || ldm0 != ldm)
    ::mixle::cudasim::thread_fault(std::string(what) + ": the lanes of the warp passed different pointers or ldm");
  if (bits % 32 != 0) ::mixle::cudasim::thread_fault(std::string(what) + ": the pointer is not 256-bit aligned");
  if (ldm % 4 != 0)
    ::mixle::cudasim::thread_fault(std::string(what) + ": ldm " + std::to_string(ldm) +
                                   " is not a multiple of 4 floats (16 bytes)");
}

/// Where element (r, c) of a rows × cols matrix lies in memory of leading dimension ldm.
template <bool kRowMajor>
std::size_t offset(int r, int c, unsigned ldm) {
  return kRowMajor ? static_cast<std::size_t>(r) * ldm + c : static_cast<std::size_t>(c) * ldm + r;
}

template <bool kRowMajor, int R, int C, int E>
void load(__frag_base<R, C, E>& f, const float* p, unsigned ldm, const char* what) {
  check_collective(what, p, ldm);
  const int l = lane();
  for (int e = 0; e < E; ++e) {
    const int idx = e * 32 + l;
    f.x[e] = p[offset<kRowMajor>(idx / C, idx % C, ldm)];
  }
}

inline float tf32_operand(float v, const char* which) {
  std::uint32_t b;
  std::memcpy(&b, &v, sizeof b);
  if (std::isfinite(v) && (b & 0x1FFFu) != 0)
    ::mixle::cudasim::thread_fault(std::string("wmma::mma_sync: an element of ") + which +
                                   " is not a TF32 value (convert it with __float_to_tf32)");
  return v;
}

// The fragments of the lanes in an mma_sync, published for the warp: one grid runs at a time
// and a block's threads are at most 1024.
struct MmaOperands {
  const float* a = nullptr;
  const float* b = nullptr;
};
inline MmaOperands g_operands[1024];

}  // namespace sim_detail

template <typename Use, int m, int n, int k, typename T, typename Layout>
void fill_fragment(fragment<Use, m, n, k, T, Layout>& f, float v) {
  for (int e = 0; e < f.num_elements; ++e) f.x[e] = v;
}

/// A or B (`Use`) from row- or column-major memory (`Layout`).
template <typename Use, typename Layout>
void load_matrix_sync(fragment<Use, 16, 16, 8, precision::tf32, Layout>& f, const float* p, unsigned ldm) {
  static_assert(std::is_same_v<Layout, row_major> || std::is_same_v<Layout, col_major>);
  sim_detail::load<std::is_same_v<Layout, row_major>>(f, p, ldm, "wmma::load_matrix_sync");
}
inline void load_matrix_sync(fragment<accumulator, 16, 16, 8, float>& f, const float* p, unsigned ldm,
                             layout_t layout) {
  if (layout == mem_row_major)
    sim_detail::load<true>(f, p, ldm, "wmma::load_matrix_sync");
  else
    sim_detail::load<false>(f, p, ldm, "wmma::load_matrix_sync");
}

inline void store_matrix_sync(float* p, const fragment<accumulator, 16, 16, 8, float>& f, unsigned ldm,
                              layout_t layout) {
  sim_detail::check_collective("wmma::store_matrix_sync", p, ldm);
  const int l = sim_detail::lane();
  for (int e = 0; e < f.num_elements; ++e) {
    const int idx = e * 32 + l;
    p[layout == mem_row_major ? sim_detail::offset<true>(idx / 16, idx % 16, ldm)
                              : sim_detail::offset<false>(idx / 16, idx % 16, ldm)] = f.x[e];
  }
}

/// d = a·b + c. The lanes publish their a and b, meet, each forms its own elements of d from
/// every lane's a and b, and meet again before any lane may change its fragments.
template <typename LayoutA, typename LayoutB>
void mma_sync(fragment<accumulator, 16, 16, 8, float>& d,
              const fragment<matrix_a, 16, 16, 8, precision::tf32, LayoutA>& a,
              const fragment<matrix_b, 16, 16, 8, precision::tf32, LayoutB>& b,
              const fragment<accumulator, 16, 16, 8, float>& c) {
  namespace s = sim_detail;
  const int me = s::d::self().linear, base = me - s::lane();
  s::g_operands[me] = {a.x, b.x};
  __syncwarp();
  float out[8];
  for (int e = 0; e < 8; ++e) {
    const int idx = e * 32 + s::lane(), i = idx / 16, j = idx % 16;
    float acc = c.x[e];
    for (int kk = 0; kk < 8; ++kk) {
      const int ia = i * 8 + kk, ib = kk * 16 + j;  // row-major indices into A (16 × 8) and B (8 × 16)
      const float av = s::tf32_operand(s::g_operands[base + ia % 32].a[ia / 32], "matrix_a");
      const float bv = s::tf32_operand(s::g_operands[base + ib % 32].b[ib / 32], "matrix_b");
      acc += av * bv;
    }
    out[e] = acc;
  }
  __syncwarp();
  for (int e = 0; e < 8; ++e) d.x[e] = out[e];
}

}  // namespace nvcuda::wmma
