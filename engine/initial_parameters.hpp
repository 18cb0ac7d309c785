// Given initial parameters (scikit-learn's weights_init, means_init, precisions_init): any of
// them replaces what the initialisation drew, the others stay as drawn.
#pragma once

#include <mixle/model.hpp>

#include <vector>

namespace mixle::engine {

/// The given parameters, each empty when not given. Means and precisions belong to the model's
/// one Gaussian part (gaussian_diag, gaussian_spherical, gaussian_full or gaussian_tied):
///   weights     K values (a probability vector)
///   means       K×D
///   precisions  inverse covariances: K×D (diag), K (spherical), K×D×D (full), D×D (tied)
struct InitialParameters {
  std::vector<double> weights, means, precisions;
  bool empty() const noexcept { return weights.empty() && means.empty() && precisions.empty(); }
};

/// Replaces `model`'s weights, means and covariances (the inverses of the precisions) by those
/// given, then validates the model. Throws InvalidInput naming the parameter and what is
/// expected: a size that does not match K and D, a model with no or several Gaussian parts for
/// means or precisions, a precision that is not positive (definite).
void apply_initial_parameters(Model& model, const InitialParameters& given);

}  // namespace mixle::engine
