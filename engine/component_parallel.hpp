// Component parallelism inside one process (reference: model_parallel.py). The E-step threads
// independent component work — log-densities per component range, central normalisation,
// per-component accumulation — and the result is bit-identical to serial, because every
// component's arithmetic is the same whichever thread runs it.
#pragma once

#include "engine/encoded_data.hpp"
#include "engine/local_handle.hpp"

#include <mixle/parallel.hpp>

namespace mixle::engine {

using mixle::ComponentParallelEstimator;
using mixle::ModelParallelEstimator;

/// Resolves num_workers 0 to the hardware thread count (a negative count is refused).
int resolve_workers(int num_workers);
/// The same, never more workers than components.
int resolve_workers(int num_workers, std::size_t components);

using mixle::component_parallel_fold;
using mixle::model_parallel_fold;

/// The `component_parallel` encoded-data handle (aliases `model_parallel`, `mp_model`): all rows
/// in this process, fully resident model, component-threaded E-step on the CPU.
class ComponentParallelEncodedData final : public LocalEncodedData {
 public:
  ComponentParallelEncodedData(Dataset data, int num_workers, Prune prune = Prune::automatic);
  static std::unique_ptr<EncodedData> create(const Dataset& data, const EncodedDataOptions& options);
  std::string backend() const override { return "component_parallel"; }
  int num_workers() const { return workers_; }

 private:
  int workers_;
};

}  // namespace mixle::engine
