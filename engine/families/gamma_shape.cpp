// α with log α − ψ(α) = gap, for the gamma M-step (Minka, "Estimating a Gamma distribution",
// 2002: Newton's method from a closed-form start).
#include "engine/families/gamma_shape.hpp"

#include <boost/math/special_functions/digamma.hpp>
#include <boost/math/special_functions/trigamma.hpp>

#include <cmath>

namespace mixle::engine {
namespace {

/// From here on the asymptotic series: its first left-out term, 691/(32760 α¹²), is 2·10⁻¹⁶ of
/// the sum at α = 20 and less beyond (the slope's, 691/(2730 α¹³), 3·10⁻¹⁵ of it).
constexpr double kSeriesFrom = 20.0;

}  // namespace

double log_minus_digamma(double alpha) {
  if (alpha < kSeriesFrom) return std::log(alpha) - boost::math::digamma(alpha);
  const double u = 1.0 / alpha, u2 = u * u;
  // (1/2)u + (1/12)u² − (1/120)u⁴ + (1/252)u⁶ − (1/240)u⁸ + (1/132)u¹⁰
  return u *
         (0.5 + u * (1.0 / 12.0 - u2 * (1.0 / 120.0 - u2 * (1.0 / 252.0 - u2 * (1.0 / 240.0 - u2 * (1.0 / 132.0))))));
}

double log_minus_digamma_slope(double alpha) {
  if (alpha < kSeriesFrom) return 1.0 / alpha - boost::math::trigamma(alpha);
  const double u = 1.0 / alpha, u2 = u * u;
  // −(1/2)u² − (1/6)u³ + (1/30)u⁵ − (1/42)u⁷ + (1/30)u⁹ − (5/66)u¹¹
  return -u2 * (0.5 + u * (1.0 / 6.0 - u2 * (1.0 / 30.0 - u2 * (1.0 / 42.0 - u2 * (1.0 / 30.0 - u2 * (5.0 / 66.0))))));
}

/// f(α) = log α − ψ(α) − gap is decreasing and convex: from Minka's start (within 1.5% of the
/// root) each Newton step lands on the root's near side and the steps converge quadratically,
/// a handful reaching the tolerance.
double gamma_shape_start(double gap) {
  return (3.0 - gap + std::sqrt((gap - 3.0) * (gap - 3.0) + 24.0 * gap)) / (12.0 * gap);
}

double gamma_shape(double gap) {
  double alpha = gamma_shape_start(gap);
  for (int i = 0; i < 100; ++i) {
    const double next = alpha - (log_minus_digamma(alpha) - gap) / log_minus_digamma_slope(alpha);
    const bool done = std::abs(next - alpha) <= 1e-13 * alpha;
    alpha = next;
    if (done) break;
  }
  return alpha;
}

}  // namespace mixle::engine
