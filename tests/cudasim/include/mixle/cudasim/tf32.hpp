// TF32 rounding, as the cvt.rna.tf32.f32 instruction does it: 10 explicit mantissa bits, to
// nearest with ties away from zero; infinities and NaNs pass unchanged. One definition for the
// simulator's cuBLAS (TF32 math) and its warp matrix functions (__float_to_tf32).
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

namespace mixle::cudasim {

/// `x` rounded to TF32 (10 explicit mantissa bits), to nearest with ties away from zero.
inline float round_to_tf32(float x) {
  if (!std::isfinite(x)) return x;
  std::uint32_t b;
  std::memcpy(&b, &x, sizeof b);
  b = (b + 0x1000u) & 0xFFFFE000u;
  float r;
  std::memcpy(&r, &b, sizeof r);
  return r;
}

}  // namespace mixle::cudasim
