#include "engine/em.hpp"

#include <mixle/error.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>

namespace mixle::engine {

namespace {

/// A row count or weight: an integer when it is one, else four significant digits.
std::string short_number(double v) {
  char buffer[32];
  if (v == std::floor(v) && std::abs(v) < 1e15)
    std::snprintf(buffer, sizeof buffer, "%.0f", v);
  else
    std::snprintf(buffer, sizeof buffer, "%.4g", v);
  return buffer;
}

}  // namespace

EmResult run_em_steps(Model initial, const EmOptions& options, const std::function<IterationStep(const Model&)>& step,
                      std::size_t component_offset) {
  if (options.max_iter < 1) throw InvalidInput("max_iter = " + std::to_string(options.max_iter) + " must be ≥ 1");
  if (!(options.tol >= 0.0)) throw InvalidInput("tol must be ≥ 0");
  using clock = std::chrono::steady_clock;
  EmResult result;
  result.model = std::move(initial);
  double previous =
      options.prior_mean_loglik.empty() ? std::numeric_limits<double>::quiet_NaN() : options.prior_mean_loglik.back();
  result.mean_loglik = options.prior_mean_loglik;
  result.iterations = options.start_iteration;
  std::vector<bool> warned(result.model.components(), false);
  for (int it = options.start_iteration + 1; it <= options.max_iter; ++it) {
    const auto t0 = clock::now();
    IterationStep done = step(result.model);
    const double mean_ll = done.loglik_sum / done.rows;
    for (const Reseeded& r : done.reseeded)
      result.warnings.push_back("component " + std::to_string(component_offset + r.component) +
                                " captured no rows at iteration " + std::to_string(it) + "; reseeded from the " +
                                short_number(r.rows) + " worst-explained rows (weight " + short_number(r.weight) + ")");
    for (std::size_t& k : done.next.empty_components) {
      const bool reseeded =
          std::any_of(done.reseeded.begin(), done.reseeded.end(), [&](const Reseeded& r) { return r.component == k; });
      if (!reseeded && !warned[k]) {
        warned[k] = true;
        result.warnings.push_back("component " + std::to_string(component_offset + k) +
                                  " captured no rows at iteration " + std::to_string(it) +
                                  "; it keeps its previous parameters with weight 0");
      }
      k += component_offset;
    }
    for (Reseeded& r : done.reseeded) r.component += component_offset;
    result.model = std::move(done.next.model);
    result.mean_loglik.push_back(mean_ll);
    result.iterations = it;
    result.rows = done.rows;
    IterationInfo info;
    info.iteration = it;
    info.mean_loglik = mean_ll;
    info.delta = mean_ll - previous;
    info.seconds = std::chrono::duration<double>(clock::now() - t0).count();
    result.iteration_seconds.push_back(info.seconds);
    info.rows = done.rows;
    info.empty_components = std::move(done.next.empty_components);
    const bool reseeded = !done.reseeded.empty();
    info.reseeded = std::move(done.reseeded);
    info.model = &result.model;
    if (options.on_iteration) options.on_iteration(info);
    if (!std::isfinite(mean_ll))
      throw InvalidInput("EM: the mean log-likelihood became " + std::to_string(mean_ll) + " at iteration " +
                         std::to_string(it) + "; the data or model is degenerate");
    if (it > 1 && !reseeded && std::abs(mean_ll - previous) < options.tol) {
      result.converged = true;
      break;
    }
    previous = mean_ll;
  }
  return result;
}

EmResult run_em(EncodedData& data, Model initial, const EmOptions& options) {
  std::vector<bool> reseeded_before(initial.components(), false);
  return run_em_steps(std::move(initial), options, [&](const Model& model) {
    MStepResult next = data.estimate(model, options.estimator);
    IterationStep step{next.rows, next.loglik_sum, std::move(next), {}};
    // A non-finite mean log-likelihood ends the loop with its own error: no reseed before it.
    if (options.empty != EmptyPolicy::reseed || !std::isfinite(step.loglik_sum)) return step;
    Model evaluated;  // copied only when a component is reseeded
    for (const std::size_t k : step.next.empty_components)
      if (!reseeded_before[k]) {
        reseeded_before[k] = true;
        if (evaluated.components() == 0) evaluated = model;
        step.reseeded.push_back(
            reseed_component(data, evaluated, step.next.model, k, options.estimator, options.threads));
      }
    return step;
  });
}

}  // namespace mixle::engine
