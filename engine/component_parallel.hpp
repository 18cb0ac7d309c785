// Component parallelism inside one process (reference: model_parallel.py). The E-step threads
// independent component work — log-densities per component range, central normalisation,
// per-component accumulation — and the result is bit-identical to serial, because every
// component's arithmetic is the same whichever thread runs it.
#pragma once

#include "engine/encoded_data.hpp"
#include "engine/local_handle.hpp"

#include <span>

namespace mixle::engine {

/// The reference's ModelParallelEstimator / ComponentParallelEstimator(inner, num_workers):
/// the inner estimator's M-step and statistics, with a component-threaded E-step.
/// num_workers 0 = the hardware's thread count.
struct ComponentParallelEstimator {
  EstimatorOptions inner;
  int num_workers = 0;
};
using ModelParallelEstimator = ComponentParallelEstimator;

/// Resolves num_workers 0 to the hardware thread count (a negative count is refused).
int resolve_workers(int num_workers);
/// The same, never more workers than components.
int resolve_workers(int num_workers, std::size_t components);

/// component_parallel_fold / model_parallel_fold: the E-step statistics of `rows` under
/// `model` (stat_layout(model).size values), component work threaded over `num_workers`; rows
/// carrying sample weights (Dataset::weights) fold weighted. Throws ImpossibleEvidence /
/// InvalidInput for impossible / NaN rows, naming them.
Statistics component_parallel_fold(const Model& model, const Dataset& rows,
                                   const ComponentParallelEstimator& estimator);
/// The reference's form, per-row `weights` given beside the rows (rows.rows() values, ≥ 0).
Statistics component_parallel_fold(const Model& model, const Dataset& rows, std::span<const double> weights,
                                   const ComponentParallelEstimator& estimator);
inline Statistics model_parallel_fold(const Model& model, const Dataset& rows,
                                      const ModelParallelEstimator& estimator) {
  return component_parallel_fold(model, rows, estimator);
}

/// The `component_parallel` encoded-data handle (aliases `model_parallel`, `mp_model`): all rows
/// in this process, fully resident model, component-threaded E-step on the CPU.
class ComponentParallelEncodedData final : public LocalEncodedData {
 public:
  ComponentParallelEncodedData(Dataset data, int num_workers);
  static std::unique_ptr<EncodedData> create(const Dataset& data, const EncodedDataOptions& options);
  std::string backend() const override { return "component_parallel"; }
  int num_workers() const { return workers_; }

 private:
  int workers_;
};

}  // namespace mixle::engine
