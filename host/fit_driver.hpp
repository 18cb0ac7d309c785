// The fit driver shared by the local and the distributed fit: validation before any EM work,
// initialisation, restarts, EM, and hooks for checkpoints and receipts.
#pragma once

#include "engine/em.hpp"
#include "engine/encoded_data.hpp"
#include "engine/tf32_expansion.hpp"

#include <mixle/fit.hpp>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace mixle::host {

/// Restart r's seed: the fit's seed for restart 0, then a hash of (seed, r).
std::uint64_t restart_seed(std::uint64_t seed, int restart);

struct FitHooks {
  /// Called after every EM iteration with the iteration's information (info.model is the model
  /// after the M-step). Runs on every rank in a distributed fit.
  std::function<void(int restart, const engine::IterationInfo& info)> after_iteration;
  /// Resume: the model to continue from (replaces the initialisation of restart
  /// `start_restart`), the iterations already done and their mean log-likelihoods, and the best
  /// of the restarts finished before it; the restarts after it run as in a fresh fit.
  const Model* resume_model = nullptr;
  int start_restart = 0;
  int start_iteration = 0;
  std::vector<double> prior_mean_loglik;
  const FitResult* prior_best = nullptr;
  /// Called after every restart with the best result so far (for checkpoints).
  std::function<void(const FitResult& best)> after_restart;
  /// Runs EM from `initial` (the global initial model) and fills `final_rows`/`final_loglik`
  /// with the final model's row count and log-likelihood sum. Default: engine::run_em over the
  /// handle. The in-process component-sharded fit runs sharded EM on threads instead.
  std::function<engine::EmResult(Model initial, const engine::EmOptions& em, double& final_rows, double& final_loglik)>
      run_restart;
  /// The warning when the chosen restart did not converge. Default: EM's, which advises
  /// --max-iter or --tol; stepwise EM names its own controls.
  std::string not_converged;
};

/// The user-facing progress record of one EM iteration.
FitProgress fit_progress(int restart, int max_iter, const engine::IterationInfo& info);

/// The EstimatorOptions that `options` describe; throws InvalidInput on bad values.
engine::EstimatorOptions estimator_options(const FitOptions& options);

/// The warning a TF32 fit carries: how far its components lie from the centre the log-densities
/// were expanded about, and the error bound that gives (engine/tf32_expansion.hpp).
std::string tf32_note(const engine::Tf32Expansion& cost);

/// Fits through an encoded-data handle (local or distributed: the same calls on every rank).
FitResult fit_handle(engine::EncodedData& handle, const FitOptions& options, const FitHooks& hooks = {});

}  // namespace mixle::host
