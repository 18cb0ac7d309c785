// The EM loop, written once for every encoded-data backend: E-step (stream_accumulate), then
// M-step, until |Δ mean log-likelihood| < tol or max_iter.
#pragma once

#include "engine/encoded_data.hpp"
#include "engine/reseed.hpp"

#include <functional>
#include <string>
#include <vector>

namespace mixle::engine {

struct IterationInfo {
  int iteration = 0;         // 1-based
  double mean_loglik = 0.0;  // of the model evaluated in this iteration's E-step, per row
  double delta = 0.0;        // change from the previous iteration (NaN at iteration 1)
  double seconds = 0.0;      // this iteration's wall time
  double rows = 0.0;
  std::vector<std::size_t> empty_components;
  std::vector<Reseeded> reseeded;  // the empty components restarted after this M-step (EmptyPolicy::reseed)
  const Model* model = nullptr;    // the model after this iteration's M-step (valid in the callback)
  /// (row, component) pairs the E-step evaluated per row of this process (exact pruning; K where
  /// every pair was), where the handle counts them; 0 otherwise. Set by the fit driver.
  double pairs_per_row = 0.0;
};

struct EmOptions {
  int max_iter = 100;
  double tol = 1e-3;
  EstimatorOptions estimator;
  std::function<void(const IterationInfo&)> on_iteration;  // called after each iteration
  /// Components that capture no rows: kept at weight 0, or restarted (run_em only; reseed_component).
  EmptyPolicy empty = EmptyPolicy::keep;
  int threads = 0;  // CPU threads for a reseed's scoring passes (0: OpenMP's default)
  /// Resuming from a checkpoint: iterations already done and their mean log-likelihoods; the
  /// loop continues at start_iteration + 1 and max_iter still counts all iterations.
  int start_iteration = 0;
  std::vector<double> prior_mean_loglik;
};

struct EmResult {
  Model model;
  std::vector<double> mean_loglik;  // one entry per iteration
  std::vector<double> iteration_seconds;
  int iterations = 0;
  bool converged = false;
  std::vector<std::string> warnings;
  double rows = 0.0;
};

/// One iteration's work on `model`: its E-step totals and the M-step's next model. Component
/// indices in `next.empty_components` are local to `model`.
struct IterationStep {
  double rows = 0.0;
  double loglik_sum = 0.0;
  MStepResult next;
  std::vector<Reseeded> reseeded;  // components of `next.empty_components` restarted after the M-step
};

/// The EM loop itself — iteration count, convergence, history, warnings, callbacks — around a
/// step function, so that every execution (local, distributed, component-sharded) shares it.
/// `component_offset` is added to component indices in warnings and IterationInfo (a shard's
/// first global component).
EmResult run_em_steps(Model initial, const EmOptions& options, const std::function<IterationStep(const Model&)>& step,
                      std::size_t component_offset = 0);

/// Runs EM from `initial`. Each iteration's E-step evaluates the current model (so a fit
/// started from a model file first evaluates that model, as scikit-learn does with
/// means_init/precisions_init); the returned model is the last M-step's. With
/// EmptyPolicy::reseed, a component that captures no rows is restarted from the worst-explained
/// rows (reseed_component, at most once per component and run), and EM does not stop at that
/// iteration.
EmResult run_em(EncodedData& data, Model initial, const EmOptions& options);

}  // namespace mixle::engine
