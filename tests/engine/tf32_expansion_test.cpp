// What the TF32 opt-in's expansion costs a model (engine/tf32_expansion.hpp): bound (E) of
// docs/numerics.md about the midpoint of the means, the component with the largest bound, and
// the centring that makes a mixture far from the origin cost what it costs near it.
#include "engine/tf32_expansion.hpp"

#include <gtest/gtest.h>

#include <cmath>

namespace mixle::test {
namespace {

Part diag(std::size_t col_begin, std::size_t D, std::vector<double> mean, std::vector<double> var) {
  return Part{.family = Family::gaussian_diag,
              .col_begin = col_begin,
              .col_end = col_begin + D,
              .mean = std::move(mean),
              .var = std::move(var)};
}

/// (2·2⁻¹¹ + γ_2D) · ½ (√q₀ + 2 R √D)², q₀ = D + 4√(2D).
double bound_e(double r, double D) {
  const double u = std::ldexp(1.0, -24), gamma = 2 * D * u / (1 - 2 * D * u);
  const double root = std::sqrt(D + 4 * std::sqrt(2 * D)) + 2 * r * std::sqrt(D);
  return (std::ldexp(1.0, -10) + gamma) * 0.5 * root * root;
}

TEST(Tf32Expansion, IsBoundEOfTheComponentFarthestFromTheMidpoint) {
  Model m;
  m.weights = {0.3, 0.3, 0.4};
  // Means (0, 0), (8, 0) and (2, 0): the centre is (4, 0), the midpoint of the extremes, not the
  // mean of the means. Component 0 lies 2 σ from it (σ = 2), component 1 lies 4 σ (σ = 1),
  // component 2 lies 2 σ (σ = 1); the second dimension adds nothing.
  m.parts.push_back(diag(0, 2, {0, 0, 8, 0, 2, 0}, {4, 1, 1, 1, 1, 1}));
  const engine::Tf32Expansion e = engine::tf32_expansion(m);
  ASSERT_TRUE(e.applies);
  EXPECT_DOUBLE_EQ(e.r, 4.0);
  EXPECT_DOUBLE_EQ(e.r_sqrt_d, 4.0 * std::sqrt(2.0));
  EXPECT_DOUBLE_EQ(e.row_bound, bound_e(4.0, 2.0));
  EXPECT_GT(e.row_bound, bound_e(2.0, 2.0));  // the other components', which it is not
}

TEST(Tf32Expansion, OnlyGaussianDiagPartsAreExpandedAndTheWidestBoundWins) {
  Model m;
  m.weights = {0.5, 0.5};
  m.parts.push_back(Part{.family = Family::poisson, .col_begin = 0, .col_end = 1, .rate = {1.0, 1e6}});
  const engine::Tf32Expansion none = engine::tf32_expansion(m);
  EXPECT_FALSE(none.applies);
  EXPECT_EQ(none.r, 0.0);
  EXPECT_EQ(none.r_sqrt_d, 0.0);
  EXPECT_EQ(none.row_bound, 0.0);
  m.parts.push_back(diag(1, 1, {0, 1}, {1, 1}));                          // R = 0.5, D = 1
  m.parts.push_back(diag(2, 3, {0, 0, 0, 0, 0, 0}, {1, 1, 1, 1, 1, 1}));  // R = 0, D = 3
  const engine::Tf32Expansion e = engine::tf32_expansion(m);
  ASSERT_TRUE(e.applies);
  EXPECT_DOUBLE_EQ(e.row_bound, std::max(bound_e(0.5, 1.0), bound_e(0.0, 3.0)));
}

TEST(Tf32Expansion, AMixtureFarFromTheOriginCostsWhatItCostsNearIt) {
  Model near;
  near.weights = {0.3, 0.3, 0.4};
  near.parts.push_back(diag(0, 2, {-1, 2, 3, 0, 1, -2}, {1, 2, 0.5, 1, 1, 3}));
  Model far = near;
  for (double& v : far.parts[0].mean) v += 1e4;
  const engine::Tf32Expansion a = engine::tf32_expansion(near), b = engine::tf32_expansion(far);
  // The far means are rounded to float (ulp 2⁻¹⁰ near 1e4), as the kernels see them.
  EXPECT_NEAR(b.r, a.r, 4 * std::ldexp(1.0, -10) / std::sqrt(0.5));
  EXPECT_NEAR(b.row_bound, a.row_bound, 1e-2 * a.row_bound);
  EXPECT_LT(a.row_bound, 1.0);  // about the origin the far one would be ≈ 2⁻¹¹·10⁸ nats
}

}  // namespace
}  // namespace mixle::test
