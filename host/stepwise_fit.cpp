// Stepwise EM through the fit driver (host/stepwise_fit.hpp).
#include "host/stepwise_fit.hpp"

#include "engine/local_handle.hpp"
#include "engine/stepwise_em.hpp"
#include "host/backend_shape.hpp"
#include "host/fit_driver.hpp"

#include <mixle/error.hpp>

#include <algorithm>

namespace mixle::host {
namespace {

engine::StepwiseOptions stepwise_options(const FitOptions& o) {
  return {.step_decay = o.step_decay,
          .step_offset = o.step_offset,
          .epochs = o.epochs,
          .shuffle = o.shuffle,
          .seed = o.seed};
}

/// The rows as their batches: E-steps add the batches' statistics, so the full-batch iterations
/// and the final log-likelihood stream the batches' encoded rows instead of making the whole
/// data's float32 copy beside them. Initialisation's passes (rows by global index) go to `whole`,
/// which never encodes its rows for them.
class BatchSum final : public EncodedData {
 public:
  BatchSum(EncodedData& whole, const std::vector<std::shared_ptr<EncodedData>>& batches)
      : whole_(whole), batches_(batches) {}
  std::string backend() const override { return whole_.backend(); }
  std::size_t rows() const override { return whole_.rows(); }
  std::size_t columns() const override { return whole_.columns(); }
  double total_weight() override { return whole_.total_weight(); }
  void check(const Model& model) override { whole_.check(model); }
  std::vector<double> column_max() override { return whole_.column_max(); }
  Statistics stream_accumulate(const Model& model, const EstimatorOptions& options) override {
    Statistics sum = batches_.front()->stream_accumulate(model, options);
    for (std::size_t b = 1; b < batches_.size(); ++b) sum.combine(batches_[b]->stream_accumulate(model, options));
    return sum;
  }
  Statistics accumulate_assigned(const Model& shape, const Assigner& assign) override {
    return whole_.accumulate_assigned(shape, assign);
  }
  void fold_rows(std::vector<double>& sums, const RowVisitor& visit) override { whole_.fold_rows(sums, visit); }
  Dataset sample(std::uint64_t seed, std::size_t target) override { return whole_.sample(seed, target); }

 private:
  EncodedData& whole_;
  const std::vector<std::shared_ptr<EncodedData>>& batches_;
};

}  // namespace

void validate_stepwise(const FitOptions& o) {
  engine::validate(stepwise_options(o));
  if (o.full_batch_iterations < 0)
    throw InvalidInput("full_batch_iterations " + std::to_string(o.full_batch_iterations) + ": must be ≥ 0");
  const BackendShape shape = backend_shape(o.backend);
  if (shape != BackendShape::data_parallel && shape != BackendShape::component_threads)
    throw InvalidInput("stepwise EM (a batch size) runs on the local or component_parallel backend, not \"" +
                       o.backend + "\"");
  if (o.empty == "reseed")
    throw InvalidInput("stepwise EM (a batch size) does not reseed empty components: use empty = keep");
  if (o.missing == "marginalise")
    throw InvalidInput("stepwise EM (a batch size) does not marginalise missing values: use missing = drop or error");
}

FitResult fit_stepwise(const Dataset& data, const FitOptions& options, const RowsMemory& memory) {
  const EncodedDataOptions enc{.backend = options.backend,
                               .device = options.device,
                               .threads = options.threads,
                               .num_workers = options.num_workers,
                               .prune = options.prune};
  const std::shared_ptr<EncodedData> whole = encoded_data(data, enc);
  hold_rows(*whole, memory);
  // The built-in backends' batches share the whole data's Compute (one set of device buffers,
  // not one per batch); a host program's backend encodes each batch its own way.
  const auto* local = dynamic_cast<const engine::LocalEncodedData*>(whole.get());
  std::vector<std::shared_ptr<EncodedData>> batches;
  for (std::size_t begin = 0; begin < data.rows(); begin += options.batch_size) {
    const Dataset rows = data.slice(begin, std::min(data.rows(), begin + options.batch_size));
    batches.push_back(local ? std::make_shared<engine::LocalEncodedData>(rows, local->shared_compute())
                            : encoded_data(rows, enc));
    hold_rows(*batches.back(), memory);
  }
  return fit_stepwise_batches(*whole, batches, options);
}

FitResult fit_stepwise_batches(EncodedData& whole, const std::vector<std::shared_ptr<EncodedData>>& batches,
                               const FitOptions& options) {
  BatchSum all(whole, batches);
  const engine::StepwiseOptions stepwise = stepwise_options(options);

  FitOptions driver = options;
  driver.max_iter = options.epochs + options.full_batch_iterations;
  FitHooks hooks;
  hooks.run_restart = [&](Model initial, const engine::EmOptions& em, double& rows, double& loglik) {
    engine::EmOptions epochs = em;
    epochs.max_iter = options.epochs;
    engine::EmResult r = engine::run_stepwise_em(batches, all.total_weight(), std::move(initial), epochs, stepwise);
    if (options.full_batch_iterations > 0) {
      // Counted after the epochs, but not compared with them: an epoch's mean is taken over
      // models that changed during it, so the first full-batch iteration never ends the run.
      engine::EmOptions full = em;
      full.start_iteration = r.iterations;
      full.max_iter = r.iterations + options.full_batch_iterations;
      engine::EmResult f = engine::run_em(all, std::move(r.model), full);
      r.model = std::move(f.model);
      r.mean_loglik.insert(r.mean_loglik.end(), f.mean_loglik.begin(), f.mean_loglik.end());
      r.iteration_seconds.insert(r.iteration_seconds.end(), f.iteration_seconds.begin(), f.iteration_seconds.end());
      r.warnings.insert(r.warnings.end(), f.warnings.begin(), f.warnings.end());
      r.iterations = f.iterations;
      r.converged = f.converged;
    }
    std::tie(rows, loglik) = all.log_density_sum(r.model, em.estimator);
    return r;
  };
  hooks.not_converged = "stepwise EM did not converge in " + std::to_string(options.epochs) + " epoch(s)" +
                        (options.full_batch_iterations > 0
                             ? " and " + std::to_string(options.full_batch_iterations) + " full-batch iteration(s)"
                             : std::string()) +
                        " (tol " + std::to_string(options.tol) + "); raise --epochs or add --full-batch-iterations";
  return fit_handle(all, driver, hooks);
}

}  // namespace mixle::host
