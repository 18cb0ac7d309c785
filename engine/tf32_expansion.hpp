// What the TF32 opt-in's expanded log-densities cost a model: the bound (E) of docs/numerics.md,
// evaluated as the CUDA kernels expand (about the midpoint of the components' float means in
// each dimension of a gaussian_diag part, kernels/cuda/tf32_expansion.cuh), so a fit can say
// how far its rows' log-densities may be off.
#pragma once

#include <mixle/model.hpp>

#include <cstddef>

namespace mixle::engine {

struct Tf32Expansion {
  bool applies = false;    // the model has a gaussian_diag part (the only family TF32 expands)
  double r = 0.0;          // R_k = max_d |μ_kd − c_d|/σ_kd of the component with the largest bound
  double r_sqrt_d = 0.0;   // R_k·√D of that component
  double row_bound = 0.0;  // that bound in nats, for a row at q₀ = D + 4√(2D) from its component
};

/// Bound (E), (2u + γ_2D) · ½ (√q₀ + 2 R_k √D)², with u = 2⁻¹¹ (TF32 operands) and γ_2D the
/// fp32 accumulation of the 2D products, largest over the gaussian_diag parts' components.
Tf32Expansion tf32_expansion(const Model& model);

}  // namespace mixle::engine
