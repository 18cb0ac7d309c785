// The gamma family's maximum-likelihood shape: α with log α − ψ(α) = gap.
#pragma once

namespace mixle::engine {

/// log α − ψ(α) (> 0, decreasing), to full relative precision for every α > 0: for α ≥ 20, where
/// the difference of two nearly equal numbers would lose up to 1e-9 of it to rounding (at
/// α = 5·10⁵, log α ≈ 13 against a difference of 1e-6), its asymptotic series.
double log_minus_digamma(double alpha);
/// Its slope 1/α − ψ′(α) (< 0), to full relative precision the same way.
double log_minus_digamma_slope(double alpha);

/// Minka's approximation of that α, (3 − gap + √((gap − 3)² + 24·gap)) / (12·gap): within 1.5% of
/// it for every gap > 0.
double gamma_shape_start(double gap);
/// The α > 0 with log α − ψ(α) = gap (gap > 0): Newton's method from gamma_shape_start, to a
/// relative step of 1e-13.
double gamma_shape(double gap);

}  // namespace mixle::engine
