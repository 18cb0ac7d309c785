#include "engine/component_parallel.hpp"
#include "engine/report.hpp"

#include <mixle/error.hpp>

#include <algorithm>
#include <thread>

namespace mixle::engine {

int resolve_workers(int num_workers) {
  if (num_workers < 0)
    throw InvalidInput("num_workers = " + std::to_string(num_workers) + " must be ≥ 0 (0 = all hardware threads)");
  return num_workers > 0 ? num_workers : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

int resolve_workers(int num_workers, std::size_t components) {
  const std::size_t w = static_cast<std::size_t>(resolve_workers(num_workers));
  return static_cast<int>(std::clamp<std::size_t>(components, 1, w));
}

}  // namespace mixle::engine

namespace mixle {

Statistics component_parallel_fold(const Model& model, const Dataset& rows,
                                   const ComponentParallelEstimator& estimator) {
  using namespace engine;
  validate_model(model);
  const auto compute = make_cpu_compute(1, resolve_workers(estimator.num_workers, model.components()));
  Statistics s = Statistics::zero(static_cast<std::size_t>(stat_layout(model).size));
  raise_for(compute->accumulate(model, rows, estimator.inner.precision, s.values), rows.source(), rows.first_row());
  return s;
}

Statistics component_parallel_fold(const Model& model, const Dataset& rows, std::span<const double> weights,
                                   const ComponentParallelEstimator& estimator) {
  return component_parallel_fold(model, rows.with_weights(std::vector<double>(weights.begin(), weights.end())),
                                 estimator);
}

}  // namespace mixle

namespace mixle::engine {

ComponentParallelEncodedData::ComponentParallelEncodedData(Dataset data, int num_workers, Prune prune)
    : LocalEncodedData(std::move(data), make_cpu_compute(1, std::max(1, num_workers), prune)), workers_(num_workers) {}

std::unique_ptr<EncodedData> ComponentParallelEncodedData::create(const Dataset& data,
                                                                  const EncodedDataOptions& options) {
  if (options.device != "cpu" && options.device != "auto")
    throw InvalidInput("the component_parallel backend threads components on the CPU; device \"" + options.device +
                       "\" is not supported with it (use the local backend for CUDA)");
  return std::make_unique<ComponentParallelEncodedData>(data, resolve_workers(options.num_workers),
                                                        prune_from_name(options.prune));
}

}  // namespace mixle::engine
