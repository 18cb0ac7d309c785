// What one EM step computes with: the compute precision, the M-step's regularisation and the
// result of an M-step. Shared by the engine and by encoded-data backends a host program writes
// (<mixle/encoded_data.hpp>).
#pragma once

#include <mixle/model.hpp>

#include <cstddef>
#include <string>
#include <vector>

namespace mixle {

/// Arithmetic of the kernels: fp32 (float32 values, float64 folds), fp64, tf32 (CUDA tensor
/// cores; CPU runs it as fp32).
enum class Precision { fp32, fp64, tf32 };
/// Parses fp32 | fp64 | tf32 (or float32, float64); throws InvalidInput naming the value and the
/// accepted names.
Precision precision_from_name(const std::string& name);
const char* precision_name(Precision precision) noexcept;

/// Regularisation the M-step applies (scikit-learn's reg_covar and the usual priors).
struct MStepOptions {
  double reg_covar = 1e-6;     // added to variances and covariance diagonals
  double pseudo_count = 1e-3;  // added to every category / bernoulli outcome count
  double rate_floor = 1e-6;    // poisson rate ≥ floor; exponential mean ≥ floor
};

struct EstimatorOptions {
  MStepOptions m_step;
  Precision precision = Precision::fp32;
  /// Missing values are left out of rows (`--missing marginalise`): the statistics then end with
  /// a per-component, per-column missing-mass region, and the M-step estimates each column from
  /// the rows that observed it.
  bool marginalise = false;
};

/// Result of an M-step: the new model and the components that received no mass (weight 0, their
/// previous parameters kept). From EncodedData::estimate (one EM iteration) it also carries the
/// E-step's evidence under the previous model: `rows` (Σ of the sample weights) and `loglik_sum`
/// (Σ w·log p(x)) — what the EM loop reports for that model. A bare M-step leaves both 0.
struct MStepResult {
  Model model;
  std::vector<std::size_t> empty_components;
  double rows = 0.0;
  double loglik_sum = 0.0;
};

}  // namespace mixle
