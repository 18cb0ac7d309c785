#include "engine/initial_parameters.hpp"
#include "engine/linalg.hpp"

#include <mixle/error.hpp>

#include <algorithm>
#include <cmath>
#include <string>

namespace mixle::engine {
namespace {

bool is_gaussian(Family f) {
  return f == Family::gaussian_diag || f == Family::gaussian_spherical || f == Family::gaussian_full ||
         f == Family::gaussian_tied;
}

/// The model's one Gaussian part, for `what` ("initial means", …).
Part& gaussian_part(Model& model, const char* what) {
  Part* found = nullptr;
  std::size_t count = 0;
  for (Part& p : model.parts)
    if (is_gaussian(p.family)) found = &p, ++count;
  if (count != 1)
    throw InvalidInput(std::string(what) +
                       ": they belong to the model's one Gaussian part (gaussian_diag, "
                       "gaussian_spherical, gaussian_full or gaussian_tied); this layout has " +
                       std::to_string(count) + " Gaussian parts");
  return *found;
}

void require_count(const std::vector<double>& values, std::size_t expected, const char* what,
                   const std::string& shape) {
  if (values.size() != expected)
    throw InvalidInput(std::string(what) + ": " + std::to_string(values.size()) + " values, expected " + shape + " = " +
                       std::to_string(expected));
}

/// cov = P⁻¹ for one D×D precision matrix (symmetric positive definite), written to `cov`.
void invert_precision(const double* precision, double* cov, std::size_t D, const std::string& which) {
  std::vector<double> L(precision, precision + D * D), Linv(D * D);
  for (std::size_t i = 0; i < D; ++i)  // each entry below the diagonal against its mirror
    for (std::size_t j = 0; j < i; ++j)
      if (!(std::abs(L[i * D + j] - L[j * D + i]) <=
            1e-9 * std::max({1.0, std::abs(L[i * D + j]), std::abs(L[j * D + i])})))
        throw InvalidInput("initial precisions" + which + ": not symmetric at (" + std::to_string(i) + ", " +
                           std::to_string(j) + ")");
  if (!cholesky(L.data(), D))
    throw InvalidInput("initial precisions" + which + ": not positive definite (its Cholesky factorisation fails)");
  invert_lower(L.data(), Linv.data(), D);  // P = L Lᵀ, so P⁻¹ = L⁻ᵀ L⁻¹
  for (std::size_t i = 0; i < D; ++i)
    for (std::size_t j = 0; j <= i; ++j) {
      double v = 0.0;
      for (std::size_t q = std::max(i, j); q < D; ++q) v += Linv[q * D + i] * Linv[q * D + j];
      cov[i * D + j] = cov[j * D + i] = v;
    }
}

void apply_precisions(Part& p, std::size_t K, const std::vector<double>& precisions) {
  const std::size_t D = p.dims();
  auto positive = [](double v, std::size_t i) {
    if (!(v > 0.0) || !std::isfinite(v))
      throw InvalidInput("initial precisions: value " + std::to_string(i) + " is " + std::to_string(v) +
                         "; precisions must be finite and > 0");
    return 1.0 / v;
  };
  switch (p.family) {
    case Family::gaussian_diag:
      require_count(precisions, K * D, "initial precisions", "K×D (gaussian_diag)");
      for (std::size_t i = 0; i < K * D; ++i) p.var[i] = positive(precisions[i], i);
      break;
    case Family::gaussian_spherical:
      require_count(precisions, K, "initial precisions", "K (gaussian_spherical)");
      for (std::size_t k = 0; k < K; ++k) p.var[k] = positive(precisions[k], k);
      break;
    case Family::gaussian_full:
      require_count(precisions, K * D * D, "initial precisions", "K×D×D (gaussian_full)");
      for (std::size_t k = 0; k < K; ++k) {
        std::string which = "[";  // appended piecewise: g++ 12 warns falsely (-Wrestrict) on "[" + string
        which += std::to_string(k);
        which += "]";
        invert_precision(precisions.data() + k * D * D, p.cov.data() + k * D * D, D, which);
      }
      break;
    case Family::gaussian_tied:
      require_count(precisions, D * D, "initial precisions", "D×D (gaussian_tied: one matrix)");
      invert_precision(precisions.data(), p.cov.data(), D, "");
      for (std::size_t k = 1; k < K; ++k) std::copy_n(p.cov.begin(), D * D, p.cov.begin() + k * D * D);
      break;
    default: break;  // gaussian_part returns Gaussian families only
  }
}

}  // namespace

void apply_initial_parameters(Model& model, const InitialParameters& given) {
  if (given.empty()) return;
  const std::size_t K = model.components();
  if (!given.weights.empty()) {
    require_count(given.weights, K, "initial weights", "K");
    model.weights = given.weights;
  }
  if (!given.means.empty()) {
    Part& p = gaussian_part(model, "initial means");
    require_count(given.means, K * p.dims(), "initial means", "K×D");
    p.mean = given.means;
  }
  if (!given.precisions.empty()) apply_precisions(gaussian_part(model, "initial precisions"), K, given.precisions);
  validate_model(model);
}

}  // namespace mixle::engine
