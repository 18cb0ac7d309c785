// `fit` with a batch size: stepwise EM (engine/stepwise_em.hpp) inside the fit driver, which
// still does validation, initialisation on every row, restarts and the final log-likelihood.
#pragma once

#include "host/rows_memory.hpp"

#include <mixle/data.hpp>
#include <mixle/encoded_data.hpp>
#include <mixle/fit.hpp>

#include <memory>
#include <vector>

namespace mixle::host {

/// Throws InvalidInput naming the control for a stepwise control out of range, or for a fit
/// stepwise EM cannot run (component sharding, reseeding, marginalised missing values).
void validate_stepwise(const FitOptions& options);

/// Both fits below take options that passed validate_stepwise (fit and fit_distributed check
/// them at their entry, before any work).
///
/// Fits `data` by stepwise EM (options.batch_size > 0): batches of batch_size consecutive rows,
/// the last one shorter; options.full_batch_iterations full-batch iterations after the epochs.
/// Every handle holds its rows as `memory` says (resident by default).
FitResult fit_stepwise(const Dataset& data, const FitOptions& options, const RowsMemory& memory = {});

/// The same over handles made elsewhere: `batches[b]`'s E-step gives batch b's statistics (under
/// a launcher, this rank's rows of it all-reduced with the other ranks'), and `whole` holds every
/// row for initialisation. The handles must outlive the call.
FitResult fit_stepwise_batches(EncodedData& whole, const std::vector<std::shared_ptr<EncodedData>>& batches,
                               const FitOptions& options);

}  // namespace mixle::host
