// Component-sharded EM inside one process (FitOptions::backend "component_sharded"): G threads,
// each holding one component shard's parameters and statistics on its own compute device (with
// device "cuda"/"auto" on a multi-GPU host, shard g on cuda:(g mod #devices)), joined by the
// `threads` communicator (comms/thread_group.hpp). The same ShardedEstimator as across processes
// (engine/component_sharded.hpp, docs/sharding.md), so K can exceed what one device holds
// without launching ranks. Initialisation, restarts and the choice of the best restart are
// fit_handle's, so the fit starts from exactly the unsharded fit's initial model.
#pragma once

#include <mixle/data.hpp>
#include <mixle/fit.hpp>

namespace mixle::host {

/// Fits `data` with options.num_workers component shards (0: one per CUDA device when the
/// device is CUDA and there are ≥ 2, else 2). Throws UsageError when K < shards.
FitResult fit_component_sharded(const Dataset& data, const FitOptions& options);

}  // namespace mixle::host
