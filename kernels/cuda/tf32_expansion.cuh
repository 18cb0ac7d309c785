// The expanded gaussian_diag log-density of the TF32 opt-in, one definition for its two users:
// the cuBLAS GEMM (gaussian_diag_tf32.cu) and the fused kernel's tensor-core step
// (gaussian_diag_fused.cu). About a centre c (one value per dimension of the part),
//     h (x − m)² = h y² − 2hν y + h ν²,   y = x − c,  ν = m − c,
// so the part's term is the product [y∘y, y] · [h; −2hν] plus c_k = Σ_d h ν², added in fp32
// after the product. The operands are rounded to TF32, and the expansion cancels: a term's error
// grows with |ν|/σ, the distance of the mean from the centre in its own standard deviations
// (R_k, docs/numerics.md bound (E)). The centre is the midpoint of the components' means in each
// dimension, which makes max_k |ν_kd| as small as a shared centre can: data far from the origin
// (means near 1e4, σ near 1) cost what data near it cost, where centring at 0 would lose every
// digit (2⁻¹¹ · 1e8 ≫ 1).
#pragma once

#include "kernels/cuda/device.cuh"

#include <cmath>

namespace mixle::kernels::cuda {

/// c_d: the midpoint of the K means of the part in dimension d (halves first: no overflow).
__device__ inline float tf32_centre(const PartView<float>& part, int K, int d) {
  float lo = INFINITY, hi = -INFINITY;
  for (int k = 0; k < K; ++k) {
    const float m = part.coef[static_cast<std::int64_t>(k) * part.coef_stride + d];
    lo = fminf(lo, m);
    hi = fmaxf(hi, m);
  }
  return 0.5f * lo + 0.5f * hi;
}

/// Component k's weights in dimension d about the centre: h (the part's −½/σ²) and −2hν, and its
/// share h ν² of c_k, all from the same ν = m − c rounded once, so the expansion is exact for
/// the mean c + ν.
struct Tf32Weights {
  float sq, lin;
  double constant;
};

__device__ inline Tf32Weights tf32_weights(const PartView<float>& part, int k, int d, float centre) {
  const float* coef = part.coef + static_cast<std::int64_t>(k) * part.coef_stride;
  const float h = coef[part.dims + d], nu = coef[d] - centre;
  return {h, -2.0f * h * nu, static_cast<double>(h) * nu * nu};
}

/// The statistics guard of docs/numerics.md §4: component k's second moments may be summed about
/// the centre (expanded: Σ r y, Σ r y², folded to the shift in float64) when its mean lies within
/// kExpandedStatisticsMaxR of its own standard deviations of the centre in every dimension,
/// R_k ≤ 2, which keeps the variance's relative error ≤ γ₁₂₈ (1 + 3R_k²) ≤ 1e-4. The part's
/// second coefficient is −½/σ², so (ν/σ)² = −2·coef·ν². NaN parameters are not admitted.
constexpr float kExpandedStatisticsMaxR = 2.0f;

__device__ inline bool expanded_statistics_admitted(const PartView<float>& part, int k, const float* centre) {
  const float* coef = part.coef + static_cast<std::int64_t>(k) * part.coef_stride;
  for (int d = 0; d < part.dims; ++d) {
    const float nu = coef[d] - centre[d];
    if (!(-2.0f * coef[part.dims + d] * nu * nu <= kExpandedStatisticsMaxR * kExpandedStatisticsMaxR)) return false;
  }
  return true;
}

}  // namespace mixle::kernels::cuda
