// Calibration as a library call: each device of a Resources runs the user's own model on a
// sample of the user's own rows, and its measured rows/s becomes its planning throughput.
// (`mixle resources --calibrate` is this call on a synthetic case.)
#pragma once

#include <mixle/data.hpp>
#include <mixle/error.hpp>
#include <mixle/model.hpp>
#include <mixle/plan/calibration.hpp>
#include <mixle/plan/resources.hpp>

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace mixle {

struct CalibrateOptions {
  /// What is timed: "score" (log-likelihood of every sample row), "estep" (alias "accumulate":
  /// the E-step statistics) or "em" (E-step and M-step).
  std::string workload = "score";
  /// Rows timed: the first min(sample_size, rows) rows of the data (≥ 1).
  std::size_t sample_size = 512;
  /// Timed repetitions per device (≥ 1), after one untimed warm-up run.
  int repeats = 3;
  /// Compute precision for every device ("float32", "float64" or an alias); written into each
  /// calibrated device. Unset: a device's own pinned precision, else float32.
  std::optional<std::string> precision;
  /// A catalog to append the run's record to, and/or a catalog file to append it to (read when it
  /// exists, then saved atomically). Either, both or neither.
  plan::CalibrationCatalog* catalog = nullptr;
  std::string catalog_path;
  /// The record's model type; empty = the model's part families joined by '+'.
  std::string model_type;
  /// Called with each device's result as soon as it is measured (progress output).
  std::function<void(const plan::DeviceCalibration&)> progress;
};

/// One or more devices failed to calibrate. The record (when a catalog was given) is appended
/// before this is thrown; `resources()` holds the devices that did calibrate, measured.
class ResourceCalibrationError : public Error {
 public:
  ResourceCalibrationError(const std::string& message, std::vector<plan::DeviceCalibration> results,
                           plan::Resources resources)
      : Error(message), results_(std::move(results)), resources_(std::move(resources)) {}
  const std::vector<plan::DeviceCalibration>& results() const noexcept { return results_; }
  const plan::Resources& resources() const noexcept { return resources_; }

 private:
  std::vector<plan::DeviceCalibration> results_;
  plan::Resources resources_;
};

/// Measures every device of `resources` on `model` and the first rows of `data` and returns the
/// resources with throughput = sample rows / median seconds of a repetition (rows/s).
///
/// A CPU slot runs on as many threads as its `compute_units` (all the process's threads when
/// unset), so `--cpu-workers N` slots are each measured as one slot; slots of equal width are
/// measured once. A CUDA device ("cuda:i", else local_rank) runs the CUDA kernels. Every device's
/// E-step statistics on the sample are also checked against the CPU's in the same precision
/// (within `mixle bench`'s bound): a device that computes wrong statistics fails however fast it is.
///
/// Throws InvalidInput for empty data, bad options or data the model cannot score (naming the
/// row, as `fit` does) — before any device runs; ResourceCalibrationError when any device failed
/// (a device of an engine this build lacks, an error while it ran, a failed check).
plan::Resources calibrate_resources(const Dataset& data, const Model& model, const plan::Resources& resources,
                                    const CalibrateOptions& options = {});
/// The same on this machine's devices (plan::Resources::discover()).
plan::Resources calibrate_resources(const Dataset& data, const Model& model, const CalibrateOptions& options = {});

}  // namespace mixle
