// Launch parameters for Lightning Fabric and Ray Train (checked before any launch).
#include <mixle/plan/launchers.hpp>

#include <mixle/error.hpp>

#include <cmath>
#include <sstream>
#include <vector>

namespace mixle::plan {

namespace {
std::string fmt(double v) {
  std::ostringstream out;
  out << v;
  return out.str();
}
}  // namespace

FabricLaunch lightning_fabric_launch(const ParallelPlan& plan, std::optional<std::int64_t> devices,
                                     std::int64_t num_nodes, std::optional<std::string> strategy) {
  std::string model_axes;
  for (ParallelAxis axis : plan.active_axes()) {
    if (axis == ParallelAxis::dp_replicate || axis == ParallelAxis::dp_shard) continue;
    model_axes += (model_axes.empty() ? "" : ", ") + std::string(axis_name(axis));
  }
  if (!model_axes.empty()) {
    throw UnrealizedModelPlacement(
        "Lightning Fabric only owns data parallelism, but the plan has "
        "active axes " +
        model_axes +
        "; accepted: dp_replicate or "
        "dp_shard only (use a native or Megatron backend for the rest)");
  }
  const bool hybrid = plan.size(ParallelAxis::dp_replicate) > 1 && plan.size(ParallelAxis::dp_shard) > 1;
  if (hybrid && !strategy) {
    throw UnrealizedModelPlacement("dp_replicate=" + std::to_string(plan.size(ParallelAxis::dp_replicate)) +
                                   " with dp_shard=" + std::to_string(plan.size(ParallelAxis::dp_shard)) +
                                   " needs hybrid sharding, which Fabric only runs with an explicit "
                                   "strategy; accepted: pass strategy, or use one data axis");
  }
  if (num_nodes < 1) {
    throw InvalidInput("num_nodes=" + std::to_string(num_nodes) + " is invalid; accepted: an integer ≥ 1");
  }
  FabricLaunch out;
  out.num_nodes = num_nodes;
  if (!devices) {
    if (num_nodes != 1) {
      throw InvalidInput("devices=\"auto\" with num_nodes=" + std::to_string(num_nodes) +
                         " cannot be checked against world_size=" + std::to_string(plan.world_size()) +
                         "; accepted: an explicit devices count per node");
    }
    out.devices = plan.world_size();
  } else {
    if (*devices < 1) {
      throw InvalidInput("devices=" + std::to_string(*devices) + " is invalid; accepted: an integer ≥ 1");
    }
    out.devices = *devices;
  }
  if (out.devices * out.num_nodes != plan.world_size()) {
    throw InvalidInput("devices=" + std::to_string(out.devices) + " × num_nodes=" + std::to_string(out.num_nodes) +
                       " = " + std::to_string(out.devices * out.num_nodes) +
                       " processes, but the plan needs world_size=" + std::to_string(plan.world_size()) +
                       "; accepted: devices · num_nodes = world_size");
  }
  out.strategy = strategy ? *strategy : (plan.size(ParallelAxis::dp_shard) > 1 ? "fsdp" : "ddp");
  return out;
}

RayScaling ray_train_scaling(const ParallelPlan& plan, bool use_gpu,
                             std::map<std::string, double> resources_per_worker) {
  for (const auto& [name, amount] : resources_per_worker) {
    if (name.find_first_not_of(" \t\r\n") == std::string::npos) {
      throw InvalidInput(
          "resources_per_worker has a blank resource name; accepted: names such as "
          "\"CPU\", \"GPU\"");
    }
    if (!std::isfinite(amount) || amount < 0) {
      throw InvalidInput("resources_per_worker[" + name + "]=" + fmt(amount) +
                         " is invalid; accepted: a finite number ≥ 0");
    }
  }
  auto gpu = resources_per_worker.find("GPU");
  if (use_gpu && gpu != resources_per_worker.end() && gpu->second <= 0) {
    throw InvalidInput("use_gpu=true conflicts with resources_per_worker[GPU]=" + fmt(gpu->second) +
                       "; accepted: GPU > 0, or use_gpu=false");
  }
  if (!use_gpu && gpu != resources_per_worker.end() && gpu->second > 0) {
    throw InvalidInput("use_gpu=false conflicts with resources_per_worker[GPU]=" + fmt(gpu->second) +
                       "; accepted: no GPU entry (or 0), or use_gpu=true");
  }
  return {plan.world_size(), use_gpu, std::move(resources_per_worker)};
}

}  // namespace mixle::plan
