// SLURM's layout of tasks over nodes (plan/ internal): Resources::from_slurm places ranks with it,
// and the launch environment takes a rank's node-local world size from it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace mixle::plan::detail {

/// SLURM_TASKS_PER_NODE, e.g. "2(x3),1" → {2, 2, 2, 1}: one count per node, each ≥ 1.
/// InvalidInput naming the variable, its value and the accepted form otherwise.
std::vector<std::int64_t> slurm_tasks_per_node(const std::string& text);

}  // namespace mixle::plan::detail
