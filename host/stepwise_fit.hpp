// `fit` with a batch size: stepwise EM (engine/stepwise_em.hpp) inside the fit driver, which
// still does validation, initialisation on every row, restarts and the final log-likelihood.
#pragma once

#include <mixle/data.hpp>
#include <mixle/fit.hpp>

namespace mixle::host {

/// Throws InvalidInput naming the control for a stepwise control out of range, or for a fit
/// stepwise EM cannot run (component sharding, reseeding, marginalised missing values).
void validate_stepwise(const FitOptions& options);

/// Fits `data` by stepwise EM (options.batch_size > 0): batches of batch_size consecutive rows,
/// the last one shorter; options.full_batch_iterations full-batch iterations after the epochs.
FitResult fit_stepwise(const Dataset& data, const FitOptions& options);

}  // namespace mixle::host
