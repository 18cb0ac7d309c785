#include "engine/linalg.hpp"

#include <cmath>

namespace mixle::engine {

bool cholesky(double* a, std::size_t D) {
  for (std::size_t j = 0; j < D; ++j) {
    double diag = a[j * D + j];
    for (std::size_t k = 0; k < j; ++k) diag -= a[j * D + k] * a[j * D + k];
    if (!(diag > 0.0) || !std::isfinite(diag)) return false;
    const double ljj = std::sqrt(diag);
    a[j * D + j] = ljj;
    for (std::size_t i = j + 1; i < D; ++i) {
      double v = a[i * D + j];
      for (std::size_t k = 0; k < j; ++k) v -= a[i * D + k] * a[j * D + k];
      a[i * D + j] = v / ljj;
    }
    for (std::size_t i = 0; i < j; ++i) a[i * D + j] = 0.0;
  }
  return true;
}

void invert_lower(const double* L, double* out, std::size_t D) {
  for (std::size_t i = 0; i < D * D; ++i) out[i] = 0.0;
  for (std::size_t c = 0; c < D; ++c) {
    // Forward substitution for column c of the inverse: L y = e_c.
    for (std::size_t i = c; i < D; ++i) {
      double v = (i == c) ? 1.0 : 0.0;
      for (std::size_t k = c; k < i; ++k) v -= L[i * D + k] * out[k * D + c];
      out[i * D + c] = v / L[i * D + i];
    }
  }
}

}  // namespace mixle::engine
