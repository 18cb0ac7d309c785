// The largest-remainder rule's step (plan/ internal): plan() splits rows over devices and
// model_sharding_plan() splits components over shards with it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace mixle::plan::detail {

/// The index whose share w[i] falls furthest short of counts[i] / total — where the next unit
/// goes; the first of equal deficits. `w` and `counts` have the same, non-zero, size.
std::size_t largest_deficit(const std::vector<double>& w, const std::vector<std::uint64_t>& counts,
                            std::uint64_t total);

}  // namespace mixle::plan::detail
