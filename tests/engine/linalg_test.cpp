// The float64 Cholesky factorisation and lower-triangular inverse of the M-step and the model
// checks, against their definitions: L Lᵀ = A with L lower triangular (upper entries exactly 0),
// and L · L⁻¹ = I.
#include "engine/linalg.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace mixle::engine {
namespace {

// Products of small integers: each entry below is exact, so only the factorisation rounds.
constexpr double kTol = 1e-12;

/// A = B Bᵀ + I for an integer B: symmetric positive definite, D = 5.
std::vector<double> spd(std::size_t D) {
  std::vector<double> b(D * D), a(D * D, 0.0);
  for (std::size_t i = 0; i < D * D; ++i) b[i] = static_cast<double>((i * 7 + 3) % 5) - 2.0;
  for (std::size_t i = 0; i < D; ++i)
    for (std::size_t j = 0; j < D; ++j) {
      for (std::size_t k = 0; k < D; ++k) a[i * D + j] += b[i * D + k] * b[j * D + k];
      if (i == j) a[i * D + j] += 1.0;
    }
  return a;
}

TEST(EngineLinalg, CholeskyIsLowerTriangularAndReproducesTheMatrix) {
  constexpr std::size_t D = 5;
  const std::vector<double> a = spd(D);
  std::vector<double> l = a;
  ASSERT_TRUE(cholesky(l.data(), D));
  for (std::size_t i = 0; i < D; ++i) {
    EXPECT_GT(l[i * D + i], 0.0);
    for (std::size_t j = i + 1; j < D; ++j) EXPECT_EQ(l[i * D + j], 0.0) << "upper entry " << i << "," << j;
  }
  for (std::size_t i = 0; i < D; ++i)
    for (std::size_t j = 0; j < D; ++j) {
      double v = 0.0;
      for (std::size_t k = 0; k < D; ++k) v += l[i * D + k] * l[j * D + k];
      EXPECT_NEAR(v, a[i * D + j], kTol * std::abs(a[i * D + j]) + kTol) << i << "," << j;
    }
  std::vector<double> inv(D * D);
  invert_lower(l.data(), inv.data(), D);
  for (std::size_t i = 0; i < D; ++i)
    for (std::size_t j = 0; j < D; ++j) {
      double v = 0.0;
      for (std::size_t k = 0; k < D; ++k) v += l[i * D + k] * inv[k * D + j];
      EXPECT_NEAR(v, i == j ? 1.0 : 0.0, kTol) << i << "," << j;
      if (j > i) EXPECT_EQ(inv[i * D + j], 0.0);
    }
}

TEST(EngineLinalg, CholeskyRefusesWhatIsNotPositiveDefinite) {
  std::vector<double> indefinite{1, 2, 2, 1};
  EXPECT_FALSE(cholesky(indefinite.data(), 2));
  std::vector<double> singular{1, 1, 1, 1};
  EXPECT_FALSE(cholesky(singular.data(), 2));
  std::vector<double> nan{1, 0, 0, std::nan("")};
  EXPECT_FALSE(cholesky(nan.data(), 2));
}

}  // namespace
}  // namespace mixle::engine
