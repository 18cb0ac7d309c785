// auto_parallel_estimator (engine/auto_parallel.hpp).
#include "engine/auto_parallel.hpp"

#include <mixle/error.hpp>

#include <algorithm>

namespace mixle {
namespace {

plan::PlanOptions plan_options(const EstimatorOptions& estimator, const plan::ModelSummary& model, std::uint64_t rows,
                               std::uint64_t chunks) {
  plan::PlanOptions o;
  o.rows = rows;
  o.model = model;
  o.columns = std::max<std::size_t>(model.columns(), 1);
  o.precision = estimator.precision == Precision::fp64 ? "float64" : "float32";
  o.num_chunks = chunks;
  return o;
}

std::string shards_json(const std::vector<plan::ModelShard>& shards) {
  std::string s = "[";
  for (std::size_t i = 0; i < shards.size(); ++i) s += (i ? "," : "") + shards[i].to_json();
  return s + "]";
}

}  // namespace

ParallelChoice auto_parallel_estimator(const EstimatorOptions& estimator, const plan::ModelSummary& model,
                                       const plan::Resources& resources, std::uint64_t n_data,
                                       std::uint64_t min_components_per_shard, int world_size) {
  const int world = world_size > 0 ? world_size : static_cast<int>(resources.size());  // Resources hold ≥ 1
  ParallelChoice choice;
  std::string plain_error;
  try {
    // plan() validates the model before anything else.
    choice.placement = plan::plan(resources, plan_options(estimator, model, n_data, resources.size()));
    choice.reason = "the model (" + std::to_string(model.parameter_bytes() + model.statistic_bytes()) +
                    " parameter + statistic bytes) fits every device; rows split over " +
                    std::to_string(resources.size()) + " device(s)";
    return choice;
  } catch (const MemoryError& e) {
    plain_error = e.what();
  }
  // The fixed state does not fit: cut the components.
  std::vector<plan::ModelShard> shards;
  plan::ShardingOptions so;
  so.min_components_per_shard = min_components_per_shard;
  try {
    shards = plan::model_sharding_plan(model, resources, so);
  } catch (const MemoryError& e) {
    throw UnrealizedModelPlacement("the model does not fit one device (" + plain_error +
                                   ") and no component split over " + std::to_string(resources.size()) +
                                   " device(s) fits either: " + e.what());
  }
  const int G = static_cast<int>(shards.size());
  const std::string chosen = shards_json(shards);
  const std::string carried = "; plan: " + plain_error + "; shards: " + chosen;
  if (G < 2)
    throw UnrealizedModelPlacement("the model does not fit one device and model_sharding_plan gives " +
                                       std::to_string(G) + " shard (K = " + std::to_string(model.components) +
                                       ", min_components_per_shard = " + std::to_string(min_components_per_shard) +
                                       ", " + std::to_string(resources.size()) + " device(s))" + carried,
                                   chosen);
  if (world < G || world % G != 0)
    throw UnrealizedModelPlacement("the model needs " + std::to_string(G) + " component shards but the world of " +
                                       std::to_string(world) + " rank(s) does not divide into groups of " +
                                       std::to_string(G) +
                                       " (component-sharded execution needs world = data groups × G)" + carried,
                                   chosen);
  // Rows beside the largest shard's state, over one device per data group (ranks d·G).
  plan::ModelSummary largest = model;
  largest.components = 0;
  for (const auto& s : shards) largest.components = std::max<std::size_t>(largest.components, s.num_components());
  std::vector<plan::DeviceSpec> groups;
  for (int d = 0; d < world / G; ++d)
    groups.push_back(resources.devices()[std::min<std::size_t>(static_cast<std::size_t>(d * G), resources.size() - 1)]);
  try {
    choice.placement = plan::plan(plan::Resources(groups), plan_options(estimator, largest, n_data, groups.size()));
  } catch (const MemoryError& e) {
    throw UnrealizedModelPlacement(
        "the model is cut into " + std::to_string(G) +
            " component shards, but the rows do not fit beside a shard's state: " + e.what() + carried,
        chosen);
  }
  choice.kind = "sharded";
  choice.shard_components = G;
  choice.shards = std::move(shards);
  choice.reason = "the model does not fit one device (" + plain_error + "); components cut into " + std::to_string(G) +
                  " shards per data group, " + std::to_string(world / G) + " data group(s)";
  return choice;
}

}  // namespace mixle

namespace mixle::engine {

std::string parallel_summary(int data_groups, int shard_components, const std::string& reason) {
  const std::string why = reason.empty() ? "" : " (" + reason + ")";
  if (shard_components <= 1) return "data parallel" + why;
  return "component sharded: " + std::to_string(data_groups) + " data group(s) × " + std::to_string(shard_components) +
         " component shards" + why;
}

}  // namespace mixle::engine
