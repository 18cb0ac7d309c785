// Scalar math shared by the CPU and CUDA kernels (MIXLE_HD: compiled by g++ and nvcc).
#pragma once

#include "kernels/common/hd.hpp"

#include <cmath>
#include <cstdint>
#include <cstring>

namespace mixle::kernels {

/// Responsibilities below exp(kFlushLogRatio) of the row's largest are set to exactly zero.
/// Their contribution is below float32 resolution of any sum they join, and skipping them (and
/// never producing subnormals, which x86 CPUs multiply through slow microcode assists) keeps the
/// statistics loops fast (docs/design.md §6).
constexpr float kFlushLogRatio = -40.0f;

/// exp(x) for x ≤ 0 in float, vectorisable (no tables, no branches): Cody–Waite range reduction
/// to 2^n · e^f with |f| ≤ ln2/2 and a degree-7 Taylor polynomial; relative error < 2e-7
/// (tests/kernels/math_exp_test.cpp measures it over a dense grid; degree 6 alone gave 2.5e-7).
/// Returns 0 for x < kFlushLogRatio (callers only need the flushed range), and NaN for NaN.
MIXLE_HD float exp_nonpositive(float x) {
  const float flushed = x < kFlushLogRatio ? 0.0f : 1.0f;
  // NaN is carried through the arithmetic as 0 and returned at the end: converting NaN to an
  // integer (the exponent below) is undefined in C++, and a GPU (0) and x86 (INT_MIN) differ.
  const bool nan = x != x;
  const float input = x;
  x = x < kFlushLogRatio ? kFlushLogRatio : x;
  x = nan ? 0.0f : x;
  const float n = rintf(x * 1.44269504088896341f);
  // ln2 split in a high part exact in float and a low correction.
  // Every step an explicit single rounding (fmaf), so the scalar, SIMD and device instances of
  // this function compute the same bits whatever the compiler's contraction setting.
  float f = fmaf(-n, 0.693145751953125f, x);
  f = fmaf(-n, 1.428606765330187045e-06f, f);
  float p = 1.0f / 5040.0f;
  p = fmaf(p, f, 1.0f / 720.0f);
  p = fmaf(p, f, 1.0f / 120.0f);
  p = fmaf(p, f, 1.0f / 24.0f);
  p = fmaf(p, f, 1.0f / 6.0f);
  p = fmaf(p, f, 0.5f);
  p = fmaf(p, f, 1.0f);
  p = fmaf(p, f, 1.0f);
  const std::int32_t bits = (static_cast<std::int32_t>(n) + 127) << 23;
  float scale;
#if defined(__CUDA_ARCH__)
  scale = __int_as_float(bits);
#else
  std::memcpy(&scale, &bits, sizeof scale);
#endif
  const float r = p * scale * flushed;
  return nan ? input : r;
}

/// Double version: exact libm exp with the same flush rule.
MIXLE_HD double exp_nonpositive(double x) { return x < static_cast<double>(kFlushLogRatio) ? 0.0 : exp(x); }

/// log Γ(x). On the host glibc's lgamma also writes the global `signgam` — a data race when
/// threads call it at once (component shards, OpenMP tiles) — so the host uses the reentrant
/// lgamma_r, which returns the sign through its argument instead.
MIXLE_HD double log_gamma(double x) {
#if defined(__CUDA_ARCH__)
  return lgamma(x);
#else
  int sign = 0;
  return lgamma_r(x, &sign);
#endif
}

/// −log(x!) for a non-negative integer-valued x (Poisson's per-row term).
MIXLE_HD double neg_log_factorial(double x) { return -log_gamma(x + 1.0); }

/// log x in the compute precision (logf for float), the same call on host and device.
MIXLE_HD float log_of(float x) { return logf(x); }
MIXLE_HD double log_of(double x) { return log(x); }

}  // namespace mixle::kernels
