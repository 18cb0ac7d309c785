// The public fitting and scoring API (include/mixle/fit.hpp) over the engine.
#include "engine/compute.hpp"
#include "engine/em.hpp"
#include "engine/encoded_data.hpp"
#include "engine/initialise.hpp"
#include "engine/local_handle.hpp"
#include "engine/report.hpp"
#include "host/builtin_backends.hpp"
#include "host/fit_driver.hpp"
#include "host/launch_env.hpp"
#include "host/missing_values.hpp"
#include "host/rows_memory.hpp"
#include "host/stepwise_fit.hpp"

#include <mixle/encoded_data.hpp>
#include <mixle/error.hpp>
#include <mixle/fit.hpp>

#include <chrono>
#include <cmath>
#include <limits>
#include <random>

namespace mixle {

FitResult fit(const Dataset& given, const FitOptions& options) {
  // The backend's registry entry says how it fits: its own driver (a process group, in-process
  // shards), or the EM loop over a handle its factory encodes.
  const engine::BackendEntry backend = host::backend_named(options.backend);
  if (backend.driver) return backend.driver(given, options);
  if (given.empty()) throw InvalidInput(given.source() + ": no data rows");
  if (options.batch_size > 0) host::validate_stepwise(options);
  const host::RowsMemory memory = host::plan_rows_memory(given, options, host::detect_launch_env().local_world_size);
  host::DroppedRows kept = host::handle_missing_rows(given, options);
  host::refuse_all_missing(kept.count, given.rows(), given.source(), options);
  const Dataset& data = kept.data;
  FitResult result;
  if (options.batch_size > 0) {
    result = host::fit_stepwise(data, options, memory);
  } else {
    const EncodedDataOptions enc{.backend = options.backend,
                                 .device = options.device,
                                 .threads = options.threads,
                                 .num_workers = options.num_workers,
                                 .prune = options.prune};
    const std::unique_ptr<EncodedData> handle = backend.factory(data, enc);
    host::hold_rows(*handle, memory);
    if (!kept.incomplete.empty())
      host::local_handle_of(*handle).set_incomplete_rows(std::move(kept.incomplete), options.threads);
    result = host::fit_handle(*handle, options);
  }
  host::note_missing_rows(result, options, kept.count, kept.first);
  return result;
}

FitResult fit(const std::shared_ptr<EncodedData>& handle, const FitOptions& options) {
  if (!handle) throw InvalidInput("fit: the encoded-data handle is null");
  const EncodedDataOptions controls{.backend = options.backend,
                                    .device = options.device,
                                    .threads = options.threads,
                                    .num_workers = options.num_workers,
                                    .prune = options.prune};
  const std::shared_ptr<EncodedData> same = encoded_data(handle, controls);  // conflicts refused here
  if (options.missing != "error")
    throw InvalidInput("fit: missing = \"" + options.missing + "\" needs the raw rows; an encoded handle (backend \"" +
                       handle->backend() + "\") holds its rows already encoded — pass the Dataset instead");
  return host::fit_handle(*same, options);
}

namespace {

struct Scored {
  std::vector<double> loglik, resp;
};

Scored run_score(const Model& model, const Dataset& data, const std::string& device, int threads,
                 const std::string& precision, bool want_loglik, bool want_resp) {
  if (threads < 0)
    throw InvalidInput("threads = " + std::to_string(threads) + " must be ≥ 0 (0 = all available cores)");
  validate_model(model);
  engine::check_data_against(model, data);
  auto compute = engine::make_compute(device, threads);
  Scored s;
  if (want_loglik) s.loglik.assign(data.rows(), 0.0);
  if (want_resp) s.resp.assign(data.rows() * model.components(), 0.0);
  const auto report = compute->score(model, data, engine::precision_from_name(precision),
                                     want_loglik ? s.loglik.data() : nullptr, want_resp ? s.resp.data() : nullptr);
  engine::raise_for(report, data.source(), data.first_row());
  return s;
}

}  // namespace

std::vector<double> score_samples(const Model& model, const Dataset& data, const std::string& device, int threads,
                                  const std::string& precision) {
  return run_score(model, data, device, threads, precision, true, false).loglik;
}

std::vector<double> predict_proba(const Model& model, const Dataset& data, const std::string& device, int threads,
                                  const std::string& precision) {
  return run_score(model, data, device, threads, precision, false, true).resp;
}

std::vector<std::int64_t> predict(const Model& model, const Dataset& data, const std::string& device, int threads,
                                  const std::string& precision) {
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

double bic_from_loglik(double loglik_sum, std::size_t free_parameters, double rows) {
  return -2.0 * loglik_sum + static_cast<double>(free_parameters) * std::log(rows);
}

double aic_from_loglik(double loglik_sum, std::size_t free_parameters) {
  return -2.0 * loglik_sum + 2.0 * static_cast<double>(free_parameters);
}

double bic(const Model& model, const Dataset& data) {
  return bic_from_loglik(total_loglik(model, data), model.free_parameters(), data.rows());
}

double aic(const Model& model, const Dataset& data) {
  return aic_from_loglik(total_loglik(model, data), model.free_parameters());
}

Dataset sample(const Model& model, std::size_t rows, std::uint64_t seed, std::vector<std::int64_t>* labels) {
  validate_model(model);
  const std::size_t C = model.columns(), K = model.components();
  std::vector<double> values(rows * C, 0.0);
  std::mt19937_64 rng(seed);
  std::discrete_distribution<std::size_t> pick(model.weights.begin(), model.weights.end());
  if (labels) labels->resize(rows);  // every entry is written below
  for (std::size_t r = 0; r < rows; ++r) {
    const std::size_t k = K == 1 ? 0 : pick(rng);
    if (labels) (*labels)[r] = static_cast<std::int64_t>(k);
    for (const Part& p : model.parts) engine::family_ops(p.family).sample(p, k, rng, values.data() + r * C);
  }
  return Dataset::from_vector(std::move(values), rows, C);
}

}  // namespace mixle
