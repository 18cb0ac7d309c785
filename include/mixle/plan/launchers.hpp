// Launch parameters for external launchers, checked before anything is launched (reference
// training_launchers: LightningFabricLauncher.create, RayTrainLauncher.launch). Pure: they turn a
// ParallelPlan into the numbers a launcher needs, or refuse the plan with the reason.
#pragma once

#include <mixle/plan/parallel_plan.hpp>

#include <cstdint>
#include <map>
#include <optional>
#include <string>

namespace mixle::plan {

/// What Lightning Fabric is created with.
struct FabricLaunch {
  std::string strategy;      ///< "ddp", "fsdp", or the caller's explicit strategy
  std::int64_t devices = 1;  ///< devices per node
  std::int64_t num_nodes = 1;
};

/// Fabric owns data parallelism only: any active tp, pp, cp, ep or etp → UnrealizedModelPlacement
/// ("only owns data parallelism"), as is dp_replicate > 1 with dp_shard > 1 without an explicit
/// strategy. `devices` unset means "auto", which needs num_nodes == 1 (then devices =
/// world_size). devices · num_nodes must equal world_size (InvalidInput). Default strategy:
/// "fsdp" when dp_shard > 1, else "ddp".
FabricLaunch lightning_fabric_launch(const ParallelPlan& plan, std::optional<std::int64_t> devices = {},
                                     std::int64_t num_nodes = 1, std::optional<std::string> strategy = {});

/// What Ray Train's ScalingConfig is built with: one worker per plan rank.
struct RayScaling {
  std::int64_t num_workers = 1;  ///< = plan.world_size()
  bool use_gpu = true;
  std::map<std::string, double> resources_per_worker;
};

/// resources_per_worker: non-blank names → finite values ≥ 0. use_gpu with "GPU" ≤ 0, or
/// !use_gpu with "GPU" > 0, is a conflict (InvalidInput naming both).
RayScaling ray_train_scaling(const ParallelPlan& plan, bool use_gpu = true,
                             std::map<std::string, double> resources_per_worker = {});

}  // namespace mixle::plan
