// Worker topology attestation: binds one launched rank to one coordinate of a ParallelPlan mesh.
#pragma once

#include <mixle/error.hpp>
#include <mixle/plan/parallel_plan.hpp>

#include <concepts>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace mixle::plan {

/// Runtime proof that `rank` of a `world_size` world sits at `coordinate` of the plan's mesh.
struct WorkerTopologyAttestation {
  std::int64_t rank = 0;
  std::int64_t world_size = 1;
  /// (axis name, index) for all five physical axes, slowest first (dp_replicate … cp).
  std::vector<std::pair<std::string, std::int64_t>> coordinate;

  /// {"rank", "world_size", "coordinate": {axis: index}}.
  std::string to_json(int indent = -1) const;
  bool operator==(const WorkerTopologyAttestation&) const = default;
};

namespace detail {
WorkerTopologyAttestation attest(const ParallelPlan& plan, std::int64_t actual_world_size, std::int64_t rank);
}  // namespace detail

/// Validates the runtime world against the plan (plan.validate_world_size) and the rank
/// (0 ≤ rank < world, InvalidInput otherwise), then maps the rank by mixed radix over
/// (dp_replicate, dp_shard, tp, pp, cp), cp fastest:
/// rank = (((dpr·DS + dps)·TP + tp)·PP + pp)·CP + cp. Exact integers only (no bool, no floats).
template <std::integral W, std::integral R>
requires(!std::same_as<W, bool> && !std::same_as<R, bool>) WorkerTopologyAttestation
    attest_worker_coordinate(const ParallelPlan& plan, W actual_world_size, R rank) {
  plan.validate_world_size(actual_world_size);
  if constexpr (std::unsigned_integral<R>) {
    if (rank > static_cast<std::uint64_t>(plan.world_size())) {
      throw InvalidInput("rank=" + std::to_string(rank) +
                         " is outside the world; accepted: 0 ≤ "
                         "rank < world_size=" +
                         std::to_string(plan.world_size()));
    }
  }
  return detail::attest(plan, plan.world_size(), static_cast<std::int64_t>(rank));
}

}  // namespace mixle::plan
