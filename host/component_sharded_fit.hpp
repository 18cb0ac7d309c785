// Component-sharded EM inside one process (FitOptions::backend "component_sharded"): G threads,
// each holding one component shard's parameters and statistics on its own compute device (with
// device "cuda"/"auto" on a multi-GPU host, shard g on cuda:(g mod #devices)), joined by the
// `threads` communicator (comms/thread_group.hpp). The same ShardedEstimator as across processes
// (engine/component_sharded.hpp, docs/sharding.md), so K can exceed what one device holds
// without launching ranks. Initialisation, restarts and the choice of the best restart are
// fit_handle's, so the fit starts from exactly the unsharded fit's initial model.
#pragma once

#include <mixle/data.hpp>
#include <mixle/encoded_data.hpp>
#include <mixle/fit.hpp>

#include <memory>
#include <string>

namespace mixle::host {

/// Fits `data` with options.num_workers component shards (0: one per CUDA device when the
/// device is CUDA and there are ≥ 2, else 2). Throws UsageError when K < shards.
FitResult fit_component_sharded(const Dataset& data, const FitOptions& options);

/// The component_sharded backend's fit of a Dataset as the user gave it: rows with missing
/// values dropped or refused (marginalising is refused), then fit_component_sharded.
FitResult fit_component_sharded_rows(const Dataset& data, const FitOptions& options);

/// The component_sharded backend's factory: refuses, saying why — its shards hold the model only
/// while fit runs, so there is no handle to keep between calls.
std::unique_ptr<EncodedData> component_sharded_encoded_data(const Dataset& data, const EncodedDataOptions& options);

/// The automatic shard count for `device` on a host with `gpus` CUDA devices: one per device
/// when the device is "cuda" or "auto" and there are ≥ 2, else 2.
int default_shards(const std::string& device, int gpus);

/// Shard g's device: "cuda"/"auto" with GPUs spread the shards over the devices (cuda:(g mod
/// gpus)); "cuda:i", "cpu" and "auto" without GPUs put every shard there.
std::string shard_device(const std::string& device, int g, int gpus);

/// CPU threads of each of `shards` shards, which run at the same time: `threads` (0: all
/// `cores`) split evenly, at least 1 each.
int shard_threads(int threads, int cores, int shards);

}  // namespace mixle::host
