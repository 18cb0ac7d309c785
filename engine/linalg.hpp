// Small dense float64 linear algebra for the M-step and model checks (row-major D×D).
#pragma once

#include <cstddef>
#include <vector>

namespace mixle::engine {

/// In-place Cholesky a = L Lᵀ (lower triangle of `a` becomes L, upper set to 0).
/// Returns false when `a` is not (numerically) positive definite.
bool cholesky(double* a, std::size_t D);

/// Inverse of a lower-triangular L into `out` (lower triangular, row-major D×D).
void invert_lower(const double* L, double* out, std::size_t D);

}  // namespace mixle::engine
