// The fit driver (host/fit_driver.hpp).
#include "host/fit_driver.hpp"

#include "engine/initial_parameters.hpp"
#include "engine/initialise.hpp"
#include "comms/failpoint.hpp"
#include "engine/row_hash.hpp"
#include "engine/tf32_expansion.hpp"
#include "host/missing_values.hpp"

#include <mixle/error.hpp>

#include <chrono>
#include <cmath>
#include <iomanip>
#include <limits>
#include <sstream>
#include <string>
#include <tuple>

namespace mixle::host {

FitProgress fit_progress(int restart, int max_iter, const engine::IterationInfo& info) {
  FitProgress p;
  p.restart = restart;
  p.iteration = info.iteration;
  p.max_iter = max_iter;
  p.mean_loglik = info.mean_loglik;
  p.delta = info.delta;
  p.seconds = info.seconds;
  p.rows_per_second = info.seconds > 0 ? info.rows / info.seconds : 0.0;
  return p;
}

engine::EstimatorOptions estimator_options(const FitOptions& o) {
  if (!(o.reg_covar >= 0.0)) throw InvalidInput("reg_covar = " + std::to_string(o.reg_covar) + " must be ≥ 0");
  if (!(o.pseudo_count >= 0.0)) throw InvalidInput("pseudo_count must be ≥ 0");
  if (!(o.rate_floor > 0.0)) throw InvalidInput("rate_floor must be > 0");
  engine::EstimatorOptions e;
  e.m_step.reg_covar = o.reg_covar;
  e.m_step.pseudo_count = o.pseudo_count;
  e.m_step.rate_floor = o.rate_floor;
  e.precision = engine::precision_from_name(o.precision);
  e.marginalise = missing_policy_from_name(o.missing) == MissingPolicy::marginalise;
  return e;
}

// Neighbouring seeds share no start this way (seed + r made `--seed 0 --n-init 5` and
// `--seed 1 --n-init 5` share four of their five starts).
std::uint64_t restart_seed(std::uint64_t seed, int restart) {
  return restart == 0 ? seed : engine::row_draw(seed, 4, static_cast<std::uint64_t>(restart));
}

namespace {

/// A resumed fit with restarts left must be the fit its checkpoint came from: the same K and
/// parts (families, columns, categories) as the options describe.
void require_same_structure(const Model& resumed, const Model& fresh) {
  auto describe = [](const Model& m) {
    std::string text = "K = " + std::to_string(m.components()) + ", parts";
    for (const Part& p : m.parts) {
      text.append(" ").append(family_name(p.family)).append(":").append(std::to_string(p.col_begin));
      text.append("-").append(std::to_string(p.col_end));
      if (p.family == Family::categorical) text.append(":").append(std::to_string(p.categories));
    }
    return text;
  };
  if (describe(resumed) != describe(fresh))
    throw InvalidInput("the checkpoint's model (" + describe(resumed) + ") is not the one these options fit (" +
                       describe(fresh) + "); resume with the --components and --layout of the run that wrote it");
}

}  // namespace

std::string tf32_note(const engine::Tf32Expansion& cost) {
  std::ostringstream text;
  text << std::setprecision(3)
       << "precision tf32: the gaussian_diag log-densities were expanded about the midpoint of the means, from "
          "which a fitted component lies up to "
       << cost.r << " of its standard deviations in one dimension (R*sqrt(D) = " << cost.r_sqrt_d
       << "), so a row's log-density may be off by up to " << cost.row_bound
       << " nats (bound (E) of docs/numerics.md); fp32 does not expand";
  return text.str();
}

FitResult fit_handle(engine::EncodedData& handle, const FitOptions& options, const FitHooks& hooks) {
  using clock = std::chrono::steady_clock;
  const auto start = clock::now();
  const std::size_t rows = handle.rows();
  if (rows == 0) throw InvalidInput("no data rows");
  if (options.n_init < 1) throw InvalidInput("n_init = " + std::to_string(options.n_init) + " must be ≥ 1");
  if (options.threads < 0)
    throw InvalidInput("threads = " + std::to_string(options.threads) + " must be ≥ 0 (0 = all available cores)");
  if (options.init == InitMethod::model && !options.init_model)
    throw InvalidInput("init = model needs FitOptions::init_model");
  if (options.init != InitMethod::model && options.components == 0)
    throw InvalidInput("components = 0; a mixture needs K ≥ 1 (--components)");
  const engine::EstimatorOptions est = estimator_options(options);
  const engine::EmptyPolicy empty = engine::empty_policy_from_name(options.empty);

  const int restarts = options.init == InitMethod::model ? 1 : options.n_init;
  const int first = hooks.resume_model ? hooks.start_restart : 0;
  if (first < 0 || first >= restarts)
    throw InvalidInput("the checkpoint to resume belongs to restart " + std::to_string(first) +
                       " (counted from 0), but " +
                       (options.init == InitMethod::model ? std::string("a fit from an initial model has one restart")
                                                          : "n_init = " + std::to_string(options.n_init)) +
                       "; resume with the n_init of the run that wrote it");

  // Validate everything before any EM work. `shape` is what fresh restarts initialise from — as
  // in a fit that was never interrupted — so a resumed fit with restarts left needs it too.
  const bool fresh_restarts = !hooks.resume_model || first + 1 < restarts;
  Model shape;
  if (fresh_restarts && options.init == InitMethod::model) {
    validate_model(*options.init_model);
    shape = *options.init_model;
    if (shape.components() > rows)
      throw InvalidInput("the initial model has K = " + std::to_string(shape.components()) +
                         " components but the data has only " + std::to_string(rows) + " rows");
  } else if (fresh_restarts) {
    shape = engine::model_shape(handle, parse_layout(options.layout, handle.columns()), options.components);
  }
  const engine::InitialParameters given{options.init_weights, options.init_means, options.init_precisions};
  if (!given.empty() && options.init == InitMethod::model)
    throw InvalidInput(
        "initial weights, means or precisions replace what the initialisation draws; with init = "
        "model the initial model already gives them all (put them in that model)");
  if (fresh_restarts && !given.empty()) {
    Model check = shape;  // sizes and values checked before any EM work
    engine::apply_initial_parameters(check, given);
  }
  if (hooks.resume_model) {
    validate_model(*hooks.resume_model);
    if (fresh_restarts) require_same_structure(*hooks.resume_model, shape);
    handle.check(*hooks.resume_model);
  } else {
    handle.check(shape);
  }

  if (!(handle.total_weight() > 0.0))
    throw InvalidInput("every row has sample weight 0: a fit needs at least one row of weight > 0");

  FitResult best;
  double best_ll = -std::numeric_limits<double>::infinity();
  bool have_best = false;
  if (hooks.resume_model && hooks.prior_best) {
    best = *hooks.prior_best;
    best_ll = best.final_mean_loglik;
    have_best = true;
  }
  for (int restart = first; restart < restarts; ++restart) {
    const std::uint64_t seed = restart_seed(options.seed, restart);
    const bool resumed = hooks.resume_model && restart == first;
    Model initial;
    const auto init_start = clock::now();
    if (resumed) {
      initial = *hooks.resume_model;
    } else {
      comms::failpoint(comms::kFailpointInitialisation);
      switch (options.init) {
        case InitMethod::model: initial = shape; break;
        case InitMethod::select: initial = handle.initialize(shape, seed, options.init_p, est); break;
        case InitMethod::kmeanspp:
          initial = engine::initialise_kmeans_pp(handle, shape, seed, est, options.threads);
          break;
        case InitMethod::kmeans: initial = engine::initialise_kmeans(handle, shape, seed, est, options.threads); break;
      }
      engine::apply_initial_parameters(initial, given);
    }
    const double init_seconds = std::chrono::duration<double>(clock::now() - init_start).count();
    engine::EmOptions em;
    em.max_iter = options.max_iter;
    em.tol = options.tol;
    em.estimator = est;
    em.empty = empty;
    em.threads = options.threads;
    if (resumed) {
      em.start_iteration = hooks.start_iteration;
      em.prior_mean_loglik = hooks.prior_mean_loglik;
    }
    const auto* local = dynamic_cast<const engine::LocalEncodedData*>(&handle);
    em.on_iteration = [&](const engine::IterationInfo& given) {
      engine::IterationInfo info = given;
      if (local) info.pairs_per_row = local->pairs_per_row();
      if (hooks.after_iteration) hooks.after_iteration(restart, info);
      if (!options.progress) return;
      FitProgress p = fit_progress(restart, options.max_iter, info);
      p.pairs_per_row = info.pairs_per_row;
      options.progress(p);
    };
    double n = 0.0, ll = 0.0;
    engine::EmResult r;
    if (hooks.run_restart) {
      r = hooks.run_restart(std::move(initial), em, n, ll);
    } else {
      r = engine::run_em(handle, std::move(initial), em);
      comms::failpoint(comms::kFailpointFinished);
      std::tie(n, ll) = handle.log_density_sum(r.model, est);
    }
    const double final_ll = ll / n;
    // Restarts within kRestartTie of each other (relative) count as equal and the first is kept:
    // two restarts that found the same optimum differ by rounding, and a sum over ranks rounds
    // otherwise than one over a process's rows, so a strict comparison could choose differently.
    constexpr double kRestartTie = 1e-10;
    if (!have_best || final_ll > best_ll + kRestartTie * std::max(1.0, std::abs(best_ll))) {
      have_best = true;
      best_ll = final_ll;
      best.model = std::move(r.model);
      best.mean_loglik = std::move(r.mean_loglik);
      best.iteration_seconds = std::move(r.iteration_seconds);
      best.init_seconds = resumed ? 0.0 : init_seconds;  // a resumed restart was initialised elsewhere
      best.iterations = r.iterations;
      best.converged = r.converged;
      best.final_mean_loglik = final_ll;
      best.warnings = std::move(r.warnings);
      best.rows = rows;
      best.total_weight = n;
      best.best_restart = restart;
    }
    if (hooks.after_restart) hooks.after_restart(best);
  }
  if (!best.converged)
    best.warnings.push_back(!hooks.not_converged.empty()
                                ? hooks.not_converged
                                : "EM did not converge in " + std::to_string(options.max_iter) + " iterations (tol " +
                                      std::to_string(options.tol) + "); raise --max-iter or --tol");
  if (est.precision == engine::Precision::tf32) {
    const engine::Tf32Expansion cost = engine::tf32_expansion(best.model);
    if (cost.applies) best.warnings.push_back(tf32_note(cost));
  }
  best.seconds = std::chrono::duration<double>(clock::now() - start).count();
  return best;
}

}  // namespace mixle::host
