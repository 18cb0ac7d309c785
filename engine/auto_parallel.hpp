// auto_parallel_estimator (docs/design.md §9; public in <mixle/parallel.hpp>): chooses between
// the plain data-parallel estimator and component-sharded execution from the plan, and raises
// UnrealizedModelPlacement only where no executor exists — never a silent fallback.
#pragma once

#include "engine/estimator.hpp"

#include <mixle/parallel.hpp>

#include <string>

namespace mixle::engine {

using mixle::auto_parallel_estimator;
using mixle::ParallelChoice;

/// How a distributed fit describes its layout (the summary's `parallel:` line, `mixle plan
/// --shard-components`): "data parallel (reason)" for one shard per group, else "component
/// sharded: D data group(s) × G component shards (reason)".
std::string parallel_summary(int data_groups, int shard_components, const std::string& reason);

}  // namespace mixle::engine
