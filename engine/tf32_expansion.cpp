// What the TF32 expansion costs a model (engine/tf32_expansion.hpp).
#include "engine/tf32_expansion.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace mixle::engine {

Tf32Expansion tf32_expansion(const Model& model) {
  Tf32Expansion out;
  const std::size_t K = model.components();
  const double u_tf32 = std::ldexp(1.0, -11), u_fp32 = std::ldexp(1.0, -24);
  for (const Part& part : model.parts) {
    if (part.family != Family::gaussian_diag) continue;
    out.applies = true;
    const std::size_t D = part.dims();
    // The kernels' centre: the midpoint of the float means, halves first.
    std::vector<double> centre(D);
    for (std::size_t d = 0; d < D; ++d) {
      float lo = std::numeric_limits<float>::infinity(), hi = -lo;
      for (std::size_t k = 0; k < K; ++k) {
        lo = std::min(lo, static_cast<float>(part.mean[k * D + d]));
        hi = std::max(hi, static_cast<float>(part.mean[k * D + d]));
      }
      centre[d] = 0.5f * lo + 0.5f * hi;
    }
    const double dims = static_cast<double>(D);
    const double q0 = dims + 4.0 * std::sqrt(2.0 * dims);
    const double gamma = 2.0 * dims * u_fp32 / (1.0 - 2.0 * dims * u_fp32);
    for (std::size_t k = 0; k < K; ++k) {
      double r = 0.0;
      for (std::size_t d = 0; d < D; ++d)
        r = std::max(r, std::abs(part.mean[k * D + d] - centre[d]) / std::sqrt(part.var[k * D + d]));
      const double r_sqrt_d = r * std::sqrt(dims);
      const double root = std::sqrt(q0) + 2.0 * r_sqrt_d;
      const double bound = (2.0 * u_tf32 + gamma) * 0.5 * root * root;
      if (bound > out.row_bound) out.row_bound = bound, out.r = r, out.r_sqrt_d = r_sqrt_d;
    }
  }
  return out;
}

}  // namespace mixle::engine
