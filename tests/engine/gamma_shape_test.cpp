// The gamma M-step's shape α (log α − ψ(α) = gap) over the gaps an M-step can meet — down to
// kMinLogGap = 1e-6, α ≈ 5·10⁵, where log α and ψ(α) agree to 7 digits, so that their difference
// in double keeps only 9 (computed so, the solution's relative residual reached 3.5e-10 and
// Newton's method never met its tolerance) — checked against long double (boost's digamma with a 64-bit mantissa,
// whose difference keeps 12 digits even there).
#include "engine/families/gamma_shape.hpp"

#include <boost/math/special_functions/digamma.hpp>
#include <boost/math/special_functions/trigamma.hpp>

#include <gtest/gtest.h>

#include <cmath>

namespace mixle {
namespace {

long double log_minus_digamma_long(long double alpha) { return std::log(alpha) - boost::math::digamma(alpha); }

TEST(GammaShape, SolvesItsEquationToFullPrecisionFromTinyToLargeGaps) {
  for (double e = -6.0; e <= 2.0; e += 0.125) {
    const double gap = std::pow(10.0, e);
    const double alpha = engine::gamma_shape(gap);
    ASSERT_GT(alpha, 0.0) << gap;
    // A relative error δ in α changes log α − ψ(α) ≈ 1/(2α) (large α) or 1/α (small) by about
    // δ of itself: the residual over the gap bounds α's relative error.
    const long double residual = (log_minus_digamma_long(alpha) - gap) / gap;
    EXPECT_LT(std::abs(static_cast<double>(residual)), 1e-11) << "gap " << gap << ", alpha " << alpha;
  }
}

// Newton's start is Minka's approximation, within 1.5% of the root at every gap (so a handful of
// steps reach the tolerance): 0.5/gap for small gaps, 1/gap for large ones.
TEST(GammaShape, StartsWithinOneAndAHalfPercentOfTheRoot) {
  for (double e = -6.0; e <= 2.0; e += 0.125) {
    const double gap = std::pow(10.0, e);
    const double start = engine::gamma_shape_start(gap), root = engine::gamma_shape(gap);
    EXPECT_LT(std::abs(start - root), 0.015 * root) << "gap " << gap << ": start " << start << ", root " << root;
  }
}

TEST(GammaShape, LogMinusDigammaAndItsSlopeHaveFullRelativePrecisionOnBothSidesOfTheSeries) {
  // (Up to 10³: beyond, long double's own difference is the less precise one.)
  for (const double alpha : {0.01, 0.5, 1.0, 7.5, 19.999, 20.0, 20.001, 55.0, 1e3}) {
    const long double want = log_minus_digamma_long(alpha);
    EXPECT_NEAR(engine::log_minus_digamma(alpha) / static_cast<double>(want), 1.0, 2e-14) << alpha;
    const long double slope = 1.0L / alpha - boost::math::trigamma(static_cast<long double>(alpha));
    EXPECT_NEAR(engine::log_minus_digamma_slope(alpha) / static_cast<double>(slope), 1.0, 2e-14) << alpha;
  }
}

}  // namespace
}  // namespace mixle
