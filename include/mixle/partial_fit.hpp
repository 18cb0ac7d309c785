// Stepwise EM one batch at a time, for rows that arrive as a stream: each partial_fit call folds
// one batch into a running state and returns the model after its M-step (docs/streaming.md).
// `fit` with FitOptions::batch_size does the same over a whole dataset.
#pragma once

#include <mixle/data.hpp>
#include <mixle/model.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace mixle {

/// What stepwise EM carries from one batch to the next. Plain data: save it with
/// stepwise_state_to_json to resume a stream later. Empty (steps 0) before the first batch.
struct StepwiseState {
  std::vector<double> statistics;  ///< running sufficient statistics, on the scale of `scale_weight`
  std::vector<double> shifts;      ///< the centres the moments in `statistics` are taken about
  std::uint64_t steps = 0;         ///< batches folded so far (t of the next step)
  double scale_weight = 0.0;       ///< the weight every batch's statistics are scaled to
  bool operator==(const StepwiseState&) const = default;
};

struct PartialFitOptions {
  double step_decay = 0.6;   ///< α ∈ (0.5, 1] in ρ_t = (t + t0)^−α
  double step_offset = 2.0;  ///< t0 ≥ 0
  /// The weight each batch's statistics are scaled to — the stream's total weight when known, so
  /// that reg_covar, pseudo_count and rate_floor act as in a full-batch fit of it; 0 = the first
  /// batch's weight. Fixed at the first batch (StepwiseState::scale_weight).
  double total_weight = 0.0;
  std::string precision = "fp32";  ///< fp32 | fp64 (CPU, CUDA) | tf32 (CUDA)
  std::string device = "cpu";      ///< auto | cpu | cuda | cuda:i
  int threads = 0;                 ///< CPU threads, 0 = all available
  double reg_covar = 1e-6;
  double pseudo_count = 1e-3;
  double rate_floor = 1e-6;
};

/// Folds `rows` (one batch; sample weights honoured) into `state` under `model` — the model the
/// previous call returned, or an initial one — and returns the next model. The first batch's
/// statistics become the running ones; later batches move them by ρ_t toward theirs, after
/// moving them to the current model's shifts in float64. A batch whose weights are all 0 changes
/// nothing. Throws InvalidInput for bad rows (named as `fit` names them), bad options, or a state
/// that belongs to a model of another shape.
Model partial_fit(const Model& model, const Dataset& rows, StepwiseState& state, const PartialFitOptions& options = {});

/// The state as JSON ({"format":"mixle-stepwise-state","version":1,…}; doubles round-trip
/// exactly) and back; from_json throws InvalidInput naming the field.
std::string stepwise_state_to_json(const StepwiseState& state);
StepwiseState stepwise_state_from_json(const std::string& text);

}  // namespace mixle
