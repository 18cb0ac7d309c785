// Model parallelism for host programs (the reference layer's model_parallel and auto-parallel
// names): the component-threaded fold of one process, and the choice between data-parallel and
// component-sharded execution that `mixle fit --resources FILE` makes (docs/sharding.md).
#pragma once

#include <mixle/data.hpp>
#include <mixle/encoded_data.hpp>
#include <mixle/estimator.hpp>
#include <mixle/model.hpp>
#include <mixle/plan/placement.hpp>
#include <mixle/plan/resources.hpp>

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace mixle {

/// The reference's ComponentParallelEstimator(inner, num_workers) / ModelParallelEstimator: the
/// inner estimator's statistics with the E-step's component work threaded over `num_workers`
/// CPU threads (0: the hardware's thread count, never more than the model's components).
struct ComponentParallelEstimator {
  EstimatorOptions inner;
  int num_workers = 0;
};
using ModelParallelEstimator = ComponentParallelEstimator;

/// component_parallel_fold / model_parallel_fold: the E-step statistics of `rows` under `model`,
/// bit for bit the serial fold's whatever the worker count (every component's arithmetic is the
/// same whichever thread runs it). Rows carrying sample weights (Dataset::with_weights) fold
/// weighted. Throws ImpossibleEvidence or InvalidInput naming impossible or NaN rows, InvalidInput
/// for a negative worker count or an invalid model.
Statistics component_parallel_fold(const Model& model, const Dataset& rows,
                                   const ComponentParallelEstimator& estimator);
/// The reference's form: per-row `weights` beside the rows (rows.rows() values, each ≥ 0).
Statistics component_parallel_fold(const Model& model, const Dataset& rows, std::span<const double> weights,
                                   const ComponentParallelEstimator& estimator);
inline Statistics model_parallel_fold(const Model& model, const Dataset& rows,
                                      const ModelParallelEstimator& estimator) {
  return component_parallel_fold(model, rows, estimator);
}

/// How EM runs over a Resources list: auto_parallel_estimator's answer.
struct ParallelChoice {
  /// "plain": the model replicated, rows split (data parallel). "sharded": components split over
  /// `shard_components` ranks per data group.
  std::string kind = "plain";
  int shard_components = 1;              // G
  plan::Placement placement;             // the rows' placement (over the data groups when sharded)
  std::vector<plan::ModelShard> shards;  // the component split (sharded only)
  std::string reason;                    // why, as the run prints it

  bool sharded() const noexcept { return kind == "sharded"; }
};

/// Chooses how to run EM with `estimator` for `model` on `resources` — one device per rank of a
/// world of `world_size` ranks (0: resources.size()) — over `n_data` rows:
///  - plan() places the rows with the whole model on every device → "plain";
///  - plan() refuses for memory (the model and its statistics do not fit a device), and
///    model_sharding_plan cuts the components into G ≥ 2 shards of at least
///    `min_components_per_shard`, the world divides into data groups of G ranks, and the rows fit
///    beside the largest shard → "sharded" with G;
///  - otherwise throws UnrealizedModelPlacement, whose plan() holds what the planner chose (the
///    whole-model plan's refusal and the shards, as JSON). Other planning errors (InvalidInput)
///    propagate unchanged.
/// (The reference layer's function of this name raises whenever its plan needs component
/// placement; mixle executes the sharded plan instead.)
ParallelChoice auto_parallel_estimator(const EstimatorOptions& estimator, const plan::ModelSummary& model,
                                       const plan::Resources& resources, std::uint64_t n_data,
                                       std::uint64_t min_components_per_shard = 1, int world_size = 0);

}  // namespace mixle
