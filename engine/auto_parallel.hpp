// auto_parallel_estimator (docs/design.md §9): chooses between the plain data-parallel estimator
// and component-sharded execution from the plan, and raises UnrealizedModelPlacement only where
// no executor exists — never a silent fallback. (The reference layer's function of that name
// raises whenever its plan needs component placement; mixle runs the sharded plan instead.)
#pragma once

#include "engine/estimator.hpp"

#include <mixle/plan/placement.hpp>
#include <mixle/plan/resources.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace mixle::engine {

struct ParallelChoice {
  /// "plain": model replicated, rows split (data parallel). "sharded": components split over
  /// `shard_components` ranks per group (engine/component_sharded.hpp).
  std::string kind = "plain";
  int shard_components = 1;              // G
  plan::Placement placement;             // the row placement (over the data groups when sharded)
  std::vector<plan::ModelShard> shards;  // the component split (sharded only)
  std::string reason;                    // why this choice, for the run's output

  bool sharded() const noexcept { return kind == "sharded"; }
};

/// Chooses how to run EM with `estimator` for `model` on `resources` (one device per rank of a
/// world of `world_size` ranks; 0 = resources.size()) over `n_data` rows:
///  - plan() places the rows with the whole model on every device → "plain";
///  - plan() raises MemoryError (the fixed model + statistics state does not fit a device) and
///    model_sharding_plan cuts the components into G ≥ 2 shards of ≥ min_components_per_shard,
///    the world divides into data groups of G ranks, and the rows fit beside one shard's state
///    → "sharded" with G;
///  - otherwise throws UnrealizedModelPlacement whose message carries the plan's error and the
///    shards (JSON). Other plan errors (InvalidInput) propagate unchanged.
ParallelChoice auto_parallel_estimator(const EstimatorOptions& estimator, const plan::ModelSummary& model,
                                       const plan::Resources& resources, std::uint64_t n_data,
                                       std::uint64_t min_components_per_shard = 1, int world_size = 0);

}  // namespace mixle::engine
