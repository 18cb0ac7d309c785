// attest_worker_coordinate: rank → mesh coordinate (mixed radix, cp fastest).
#include <mixle/plan/attestation.hpp>

#include <mixle/error.hpp>

#include "plan/json_fields.hpp"

namespace mixle::plan {

namespace detail {

WorkerTopologyAttestation attest(const ParallelPlan& plan, std::int64_t world, std::int64_t rank) {
  if (rank < 0 || rank >= world) {
    throw InvalidInput("rank=" + std::to_string(rank) +
                       " is outside the world; accepted: 0 ≤ rank "
                       "< world_size=" +
                       std::to_string(world));
  }
  WorkerTopologyAttestation out;
  out.rank = rank;
  out.world_size = world;
  out.coordinate.resize(std::size(kPhysicalAxes));
  std::int64_t remainder = rank;
  for (std::size_t i = std::size(kPhysicalAxes); i-- > 0;) {
    const ParallelAxis axis = kPhysicalAxes[i];
    out.coordinate[i] = {axis_name(axis), remainder % plan.size(axis)};
    remainder /= plan.size(axis);
  }
  if (remainder != 0) {  // unreachable once the world size matched; kept as a guard
    throw Error("internal error: rank " + std::to_string(rank) + " does not fit the plan mesh");
  }
  return out;
}

}  // namespace detail

std::string WorkerTopologyAttestation::to_json(int indent) const {
  detail::Json coord = detail::Json::object();
  for (const auto& [axis, index] : coordinate) coord[axis] = index;
  detail::Json out = {{"rank", rank}, {"world_size", world_size}, {"coordinate", coord}};
  return out.dump(indent);
}

}  // namespace mixle::plan
