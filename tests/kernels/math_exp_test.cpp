// exp_nonpositive (kernels/common/math.hpp, MIXLE_HD: the same code runs in the CUDA kernels):
// accuracy over a dense grid and the responsibility flush rule.
#include "kernels/common/math.hpp"

#include <gtest/gtest.h>

#include <cmath>

namespace mixle::kernels {
namespace {

// math.hpp documents "relative error < 2e-7". A degree-6 Taylor polynomial missed it (2.47e-7:
// its truncation error at |f| = ln2/2 is 1.7e-7, plus ~1 ulp of Horner rounding); with the
// 1/5040 term the worst over this grid measures 9.7e-8 here, under one float ulp at 1 (2⁻²³ ≈
// 1.19e-7), which is asserted: the documented 2e-7 leaves room for a device's contracted
// (fused) Horner steps, and a polynomial term half its size (1/10080) still met it, at 1.6e-7.
constexpr double kExpRelTol = 0x1p-23;

TEST(MathExpNonpositive, FloatRelativeErrorBelowBoundOnDenseGrid) {
  // Every float in [kFlushLogRatio, 0] spaced 2⁻¹⁴ apart (≈ 655k points), plus the edges.
  double worst = 0.0, worst_x = 0.0;
  for (double x = kFlushLogRatio; x <= 0.0; x += std::ldexp(1.0, -14)) {
    const float xf = static_cast<float>(x);
    const double want = std::exp(static_cast<double>(xf));
    const double err = std::abs(static_cast<double>(exp_nonpositive(xf)) - want) / want;
    if (err > worst) worst = err, worst_x = xf;
  }
  EXPECT_LT(worst, kExpRelTol) << "worst at x = " << worst_x;
}

TEST(MathExpNonpositive, FloatExactAtZeroAndNearZero) {
  EXPECT_EQ(exp_nonpositive(0.0f), 1.0f);
  EXPECT_EQ(exp_nonpositive(-0.0f), 1.0f);
  const float tiny = -1e-30f;
  EXPECT_EQ(exp_nonpositive(tiny), 1.0f);
}

TEST(MathExpNonpositive, FlushBelowThresholdIsExactlyZero) {
  EXPECT_GT(exp_nonpositive(kFlushLogRatio), 0.0f) << "the threshold itself is kept";
  EXPECT_EQ(exp_nonpositive(std::nextafter(kFlushLogRatio, -100.0f)), 0.0f);
  EXPECT_EQ(exp_nonpositive(-41.0f), 0.0f);
  EXPECT_EQ(exp_nonpositive(-1e30f), 0.0f);
  EXPECT_EQ(exp_nonpositive(-INFINITY), 0.0f) << "−inf − max gives exactly zero responsibility";
  EXPECT_EQ(exp_nonpositive(-41.0), 0.0);
  EXPECT_EQ(exp_nonpositive(-static_cast<double>(INFINITY)), 0.0);
}

TEST(MathExpNonpositive, NeverSubnormalAboveThreshold) {
  // exp(−40) ≈ 4.2e-18 is far above FLT_MIN: the flushed range never produces subnormals.
  for (float x = kFlushLogRatio; x <= 0.0f; x += 0.01f) EXPECT_EQ(std::fpclassify(exp_nonpositive(x)), FP_NORMAL) << x;
}

TEST(MathExpNonpositive, DoubleMatchesLibmAboveThreshold) {
  for (double x = kFlushLogRatio; x <= 0.0; x += 0.001) ASSERT_EQ(exp_nonpositive(x), std::exp(x)) << x;
}

TEST(MathExpNonpositive, NanPropagates) {
  // The normalisation relies on a NaN log-density giving a NaN sum (reported as a NaN row).
  EXPECT_TRUE(std::isnan(exp_nonpositive(NAN)));
  EXPECT_TRUE(std::isnan(exp_nonpositive(static_cast<double>(NAN))));
}

}  // namespace
}  // namespace mixle::kernels
