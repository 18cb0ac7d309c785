// The distributed backend (aliases torchrun, mpi) of the encoded-data registry: each process's
// rows are its rank's share of a process group joined from the launcher's environment — a
// world of one without a launcher (docs/distributed.md).
#pragma once

#include <mixle/data.hpp>
#include <mixle/encoded_data.hpp>
#include <mixle/fit.hpp>

#include <memory>

namespace mixle::host {

/// A handle over this rank's `rows`: joins the group (options.comm: auto | single | gloo | mpi |
/// nccl; the device is this rank's, as fit_distributed chooses it), learns every rank's row count
/// (rank r's rows follow ranks 0 … r−1) and keeps the communicator for the handle's lifetime.
/// Every rank must encode at the same point, as for any collective. Throws InvalidInput when the
/// ranks' column counts differ or every rank passes 0 rows.
std::unique_ptr<EncodedData> distributed_encoded_data(const Dataset& rows, const EncodedDataOptions& options);

/// The distributed backend's fit of this rank's rows: fit_distributed(rows, options, {}) —
/// contracts, missing values and stepwise EM included.
FitResult fit_rank_rows(const Dataset& rows, const FitOptions& options);

}  // namespace mixle::host
