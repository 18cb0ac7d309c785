// The row-wise log-sum-exp in both precisions, on rows far from every component: the maximum
// must be taken out before exponentiating (else every term underflows and the row reads as
// impossible), responsibilities below e^-40 of the largest are exactly 0, and the others are
// the stable ratios. Oracle: the same two log-densities, written out by hand in long double.
#include "engine_test_util.hpp"
#include "engine/compute.hpp"

#include <mixle/fit.hpp>

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

namespace mixle {
namespace {

using test::make_part;

// Two unit-variance 1-D Gaussians at means mu0, mu1, equal weights.
Model pair(double mu0, double mu1) {
  Model m;
  m.weights = {0.5, 0.5};
  Part g = make_part(Family::gaussian_diag, 0, 1);
  g.mean = {mu0, mu1};
  g.var = {1.0, 1.0};
  m.parts = {g};
  return m;
}

long double log_density(long double x, long double mu) {
  return -0.5L * std::log(2.0L * 3.141592653589793238462643383279502884L) - 0.5L * (x - mu) * (x - mu);
}

struct Expected {
  double loglik, r0, r1;
};

Expected by_hand(double x, double mu0, double mu1) {
  const long double a = std::log(0.5L) + log_density(x, mu0), b = std::log(0.5L) + log_density(x, mu1);
  const long double m = a > b ? a : b;
  const long double s = std::exp(a - m) + std::exp(b - m);
  return {static_cast<double>(m + std::log(s)), static_cast<double>(std::exp(a - m) / s),
          static_cast<double>(std::exp(b - m) / s)};
}

void check(double x, double mu0, double mu1, const std::string& precision, double rel_tol) {
  SCOPED_TRACE(precision + " x=" + std::to_string(x));
  // The far row among ordinary ones, at a position that is no multiple of a block.
  std::vector<double> rows = {0.1, -0.3, 0.7, x, 0.2};
  const Dataset data = Dataset::view(rows.data(), rows.size(), 1);
  const Model m = pair(mu0, mu1);
  const Expected want = by_hand(x, mu0, mu1);
  const auto ll = score_samples(m, data, "cpu", 1, precision);
  ASSERT_EQ(ll.size(), rows.size());
  EXPECT_TRUE(std::isfinite(ll[3]));
  EXPECT_NEAR(ll[3], want.loglik, rel_tol * std::abs(want.loglik));
  const auto r = predict_proba(m, data, "cpu", 1, precision);
  ASSERT_EQ(r.size(), 2 * rows.size());
  for (const auto& [got, expected] : {std::pair{r[6], want.r0}, std::pair{r[7], want.r1}}) {
    if (expected < std::exp(-40.0)) {
      EXPECT_EQ(got, 0.0) << "below e^-40 of the largest: flushed to exactly 0";
    } else {
      EXPECT_NEAR(got, expected, rel_tol * 1e3 * expected);
    }
  }
}

// fp64: the same long-double arithmetic rounded once: 1e-12 relative. fp32: log-densities of
// magnitude ~5000 carry an absolute error of ~5000 · 2^-24 ≈ 3e-4, 1e-6 of the value; ratios of
// exponentials inherit that absolute error (1e-3 relative, the factor 1e3 above).
TEST(EngineLogSumExp, RowsFarBelowEveryComponent) {
  for (const auto& [precision, tol] : {std::pair<std::string, double>{"fp64", 1e-12}, {"fp32", 1e-6}}) {
    check(100.0, 0.0, 1.0, precision, tol);  // both ~ -5000 nats: one flushed to 0
    check(60.0, 0.0, 0.5, precision, tol);   // ~ -1800 nats, 29.9 apart: both kept
    check(-80.0, 0.0, 0.0, precision, tol);  // equal: 1/2 each
  }
}

// A row whose log-density is NaN under one component only is a NaN row (reported as one, with a
// NaN log-likelihood) in a log-likelihood-only pass — not an impossible row. Here the first
// component's whitened distance is +inf − inf (x − μ overflows to +inf in both columns and
// P = C⁻¹ has entries −22.4 and +22.4 in its second row) and the second's is −inf. Its
// neighbours are ordinary rows.
TEST(EngineLogSumExp, ANanUnderOneComponentMakesANanRow) {
  auto cpu = engine::make_cpu_compute(1);
  for (const auto& [precision, big] : {std::pair{engine::Precision::fp64, 1e308}, {engine::Precision::fp32, 3e38}}) {
    SCOPED_TRACE(big);
    Model m;
    m.weights = {0.5, 0.5};
    Part g = make_part(Family::gaussian_full, 0, 2);
    g.mean = {-big, -big, 0.0, 0.0};
    g.cov = {1.0, 0.999, 0.999, 1.0, 1.0, 0.0, 0.0, 1.0};
    m.parts = {g};
    std::vector<double> rows = {0.1, 0.2, -0.3, 0.4, 0.5, -0.1, big, big, 0.2, 0.3};
    const Dataset data = Dataset::view(rows.data(), 5, 2);
    std::vector<double> ll(5);
    const kernels::PassReport report = cpu->score(m, data, precision, ll.data(), nullptr);
    EXPECT_TRUE(std::isnan(ll[3])) << ll[3];
    EXPECT_EQ(report.nan_rows, 1u);
    EXPECT_EQ(report.impossible_rows, 0u);
    for (std::size_t n : {0u, 1u, 2u, 4u}) EXPECT_TRUE(std::isfinite(ll[n])) << n;
  }
}

}  // namespace
}  // namespace mixle
