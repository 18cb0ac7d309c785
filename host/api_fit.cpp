// The public fitting and scoring API (include/mixle/fit.hpp) over the engine.
#include "engine/compute.hpp"
#include "engine/em.hpp"
#include "engine/encoded_data.hpp"
#include "engine/initialise.hpp"
#include "engine/local_handle.hpp"
#include "engine/report.hpp"

#include <mixle/error.hpp>
#include <mixle/fit.hpp>

#include <chrono>
#include <cmath>
#include <limits>
#include <random>

namespace mixle {
namespace {

engine::EstimatorOptions estimator_options(const FitOptions& o) {
  if (!(o.reg_covar >= 0.0)) throw InvalidInput("reg_covar = " + std::to_string(o.reg_covar) + " must be ≥ 0");
  if (!(o.pseudo_count >= 0.0)) throw InvalidInput("pseudo_count must be ≥ 0");
  if (!(o.rate_floor > 0.0)) throw InvalidInput("rate_floor must be > 0");
  engine::EstimatorOptions e;
  e.m_step.reg_covar = o.reg_covar;
  e.m_step.pseudo_count = o.pseudo_count;
  e.m_step.rate_floor = o.rate_floor;
  e.precision = engine::precision_from_name(o.precision);
  return e;
}

}  // namespace

FitResult fit(const Dataset& data, const FitOptions& options) {
  using clock = std::chrono::steady_clock;
  const auto start = clock::now();
  if (data.empty()) throw InvalidInput(data.source() + ": no data rows");
  if (options.n_init < 1) throw InvalidInput("n_init = " + std::to_string(options.n_init) + " must be ≥ 1");
  if (options.init == InitMethod::model && !options.init_model)
    throw InvalidInput("init = model needs FitOptions::init_model");
  if (options.init != InitMethod::model && options.components == 0)
    throw InvalidInput("components = 0; a mixture needs K ≥ 1 (--components)");
  const engine::EstimatorOptions est = estimator_options(options);

  engine::EncodedDataOptions enc;
  enc.backend = options.backend;
  enc.device = options.device;
  enc.threads = options.threads;
  enc.num_workers = options.num_workers;
  const auto handle = engine::encoded_data(data, enc);

  // Validate everything before any EM work.
  Model shape;
  if (options.init == InitMethod::model) {
    validate_model(*options.init_model);
    shape = *options.init_model;
    if (shape.components() > data.rows())
      throw InvalidInput("the initial model has K = " + std::to_string(shape.components()) +
                         " components but the data has only " + std::to_string(data.rows()) + " rows");
  } else {
    shape = engine::model_shape(*handle, parse_layout(options.layout, data.cols()), options.components);
  }
  handle->check(shape);

  FitResult best;
  double best_ll = -std::numeric_limits<double>::infinity();
  const int restarts = options.init == InitMethod::model ? 1 : options.n_init;
  for (int restart = 0; restart < restarts; ++restart) {
    const std::uint64_t seed = options.seed + static_cast<std::uint64_t>(restart);
    Model initial;
    switch (options.init) {
      case InitMethod::model: initial = shape; break;
      case InitMethod::select: initial = handle->initialize(shape, seed, options.init_p, est); break;
      case InitMethod::kmeanspp: initial = engine::initialise_kmeans_pp(*handle, shape, seed, est); break;
    }
    engine::EmOptions em;
    em.max_iter = options.max_iter;
    em.tol = options.tol;
    em.estimator = est;
    if (options.progress)
      em.on_iteration = [&](const engine::IterationInfo& info) {
        FitProgress p;
        p.restart = restart;
        p.iteration = info.iteration;
        p.max_iter = options.max_iter;
        p.mean_loglik = info.mean_loglik;
        p.delta = info.delta;
        p.seconds = info.seconds;
        p.rows_per_second = info.seconds > 0 ? info.rows / info.seconds : 0.0;
        options.progress(p);
      };
    engine::EmResult r = engine::run_em(*handle, std::move(initial), em);
    const auto [n, ll] = handle->log_density_sum(r.model, est);
    const double final_ll = ll / n;
    if (restart == 0 || final_ll > best_ll) {
      best_ll = final_ll;
      best.model = std::move(r.model);
      best.mean_loglik = std::move(r.mean_loglik);
      best.iteration_seconds = std::move(r.iteration_seconds);
      best.iterations = r.iterations;
      best.converged = r.converged;
      best.final_mean_loglik = final_ll;
      best.warnings = std::move(r.warnings);
      best.rows = static_cast<std::size_t>(n);
      best.best_restart = restart;
    }
  }
  if (!best.converged)
    best.warnings.push_back("EM did not converge in " + std::to_string(options.max_iter) +
                            " iterations (tol " + std::to_string(options.tol) + "); raise --max-iter or --tol");
  best.seconds = std::chrono::duration<double>(clock::now() - start).count();
  return best;
}

namespace {

struct Scored {
  std::vector<double> loglik, resp;
};

Scored run_score(const Model& model, const Dataset& data, const std::string& device, int threads,
                 const std::string& precision, bool want_loglik, bool want_resp) {
  validate_model(model);
  engine::check_data_against(model, data);
  auto compute = engine::make_compute(device, threads);
  Scored s;
  if (want_loglik) s.loglik.assign(data.rows(), 0.0);
  if (want_resp) s.resp.assign(data.rows() * model.components(), 0.0);
  const auto report = compute->score(model, data, engine::precision_from_name(precision),
                                     want_loglik ? s.loglik.data() : nullptr,
                                     want_resp ? s.resp.data() : nullptr);
  engine::raise_for(report, data.source(), data.first_row());
  return s;
}

}  // namespace

std::vector<double> score_samples(const Model& model, const Dataset& data, const std::string& device,
                                  int threads, const std::string& precision) {
  return run_score(model, data, device, threads, precision, true, false).loglik;
}

std::vector<double> predict_proba(const Model& model, const Dataset& data, const std::string& device,
                                  int threads, const std::string& precision) {
  return run_score(model, data, device, threads, precision, false, true).resp;
}

std::vector<std::int64_t> predict(const Model& model, const Dataset& data, const std::string& device,
                                  int threads, const std::string& precision) {
  const auto resp = predict_proba(model, data, device, threads, precision);
  const std::size_t K = model.components();
  std::vector<std::int64_t> labels(data.rows());
  for (std::size_t r = 0; r < data.rows(); ++r) {
    std::size_t arg = 0;
    for (std::size_t k = 1; k < K; ++k)
      if (resp[r * K + k] > resp[r * K + arg]) arg = k;
    labels[r] = static_cast<std::int64_t>(arg);
  }
  return labels;
}

namespace {
double total_loglik(const Model& model, const Dataset& data) {
  double s = 0.0;
  for (double v : score_samples(model, data)) s += v;
  return s;
}
}  // namespace

double bic(const Model& model, const Dataset& data) {
  return -2.0 * total_loglik(model, data) +
         static_cast<double>(model.free_parameters()) * std::log(static_cast<double>(data.rows()));
}

double aic(const Model& model, const Dataset& data) {
  return -2.0 * total_loglik(model, data) + 2.0 * static_cast<double>(model.free_parameters());
}

Dataset sample(const Model& model, std::size_t rows, std::uint64_t seed, std::vector<std::int64_t>* labels) {
  validate_model(model);
  const std::size_t C = model.columns(), K = model.components();
  std::vector<double> values(rows * C, 0.0);
  std::mt19937_64 rng(seed);
  std::discrete_distribution<std::size_t> pick(model.weights.begin(), model.weights.end());
  if (labels) labels->assign(rows, 0);
  for (std::size_t r = 0; r < rows; ++r) {
    const std::size_t k = K == 1 ? 0 : pick(rng);
    if (labels) (*labels)[r] = static_cast<std::int64_t>(k);
    for (const Part& p : model.parts) engine::family_ops(p.family).sample(p, k, rng, values.data() + r * C);
  }
  return Dataset::from_vector(std::move(values), rows, C);
}

}  // namespace mixle
