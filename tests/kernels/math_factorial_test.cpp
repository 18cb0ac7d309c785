// neg_log_factorial (kernels/common/math.hpp, MIXLE_HD): Poisson's per-row −log x!.
#include "kernels/common/math.hpp"

#include <gtest/gtest.h>

#include <cmath>

namespace mixle::kernels {
namespace {

TEST(MathNegLogFactorial, ZeroAndOneAreExactlyZero) {
  EXPECT_EQ(neg_log_factorial(0.0), 0.0);
  EXPECT_EQ(neg_log_factorial(1.0), 0.0);
}

TEST(MathNegLogFactorial, SmallValuesMatchProducts) {
  // n! is exact in a double up to 22!; −log of it to 2 ulps (lgamma's documented accuracy class).
  double factorial = 1.0;
  for (int n = 2; n <= 22; ++n) {
    factorial *= n;
    const double want = -std::log(factorial);
    EXPECT_NEAR(neg_log_factorial(static_cast<double>(n)), want, 4 * std::abs(want) * 0x1p-52) << n;
  }
  EXPECT_NEAR(neg_log_factorial(2.0), -std::log(2.0), 1e-16);
  EXPECT_NEAR(neg_log_factorial(3.0), -std::log(6.0), 1e-15);
}

TEST(MathNegLogFactorial, LargeCountsFollowStirling) {
  for (double n : {100.0, 1e4, 1e6}) {
    const double stirling = n * std::log(n) - n + 0.5 * std::log(2 * M_PI * n) + 1.0 / (12 * n);
    EXPECT_NEAR(-neg_log_factorial(n), stirling, 1e-9 * stirling) << n;
  }
}

}  // namespace
}  // namespace mixle::kernels
