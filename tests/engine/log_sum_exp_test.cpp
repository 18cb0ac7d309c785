// The row-wise log-sum-exp in both precisions, on rows far from every component: the maximum
// must be taken out before exponentiating (else every term underflows and the row reads as
// impossible), responsibilities below e^-40 of the largest are exactly 0, and the others are
// the stable ratios. Oracle: the same two log-densities, written out by hand in long double.
#include "engine_test_util.hpp"

#include <mixle/fit.hpp>

#include <gtest/gtest.h>

#include <cmath>
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

}  // namespace
}  // namespace mixle
