// model_sharding_plan(): contiguous component ranges, throughput-weighted (docs/planning.md).
#include <mixle/plan/placement.hpp>

#include <mixle/error.hpp>

#include "plan/apportion.hpp"
#include "plan/resources_json.hpp"

#include <algorithm>
#include <cmath>

namespace mixle::plan {

namespace {
// Total log-likelihood and row count: two float64 values at the end of the statistics buffer.
constexpr std::uint64_t kGlobalStatisticBytes = 16;
}  // namespace

void ModelShard::validate() const {
  const std::string where =
      "model shard " + device.name + "[" + std::to_string(component_start) + ":" + std::to_string(component_stop) + "]";
  if (component_stop <= component_start) {
    throw InvalidInput(where +
                       " has an empty component range; accepted: component_start < "
                       "component_stop");
  }
  if (device.memory_bytes && parameter_bytes + statistic_bytes > *device.memory_bytes) {
    throw MemoryError(where + " needs " + std::to_string(parameter_bytes + statistic_bytes) + " bytes (parameters " +
                      std::to_string(parameter_bytes) + " + statistics " + std::to_string(statistic_bytes) +
                      "), over the capacity of device '" + device.name + "' (memory_bytes=" +
                      std::to_string(*device.memory_bytes) + "); accepted: more devices or devices with more memory");
  }
}

std::string ModelShard::to_json(int indent) const {
  detail::Json out = {{"device", detail::device_to_json(device)},
                      {"component_start", component_start},
                      {"component_stop", component_stop},
                      {"parameter_bytes", parameter_bytes},
                      {"statistic_bytes", statistic_bytes}};
  return out.dump(indent);
}

ModelShard ModelShard::from_json(std::string_view text) {
  using namespace detail;
  const Json doc = parse_object(text, "model shard document");
  ModelShard s;
  s.device = device_from_json(require(doc, "", "device"), "device");
  s.component_start = get_uint(doc, "", "component_start");
  s.component_stop = get_uint(doc, "", "component_stop");
  s.parameter_bytes = get_uint(doc, "", "parameter_bytes", 0);
  s.statistic_bytes = get_uint(doc, "", "statistic_bytes", 0);
  s.validate();
  return s;
}

std::vector<ModelShard> model_sharding_plan(const ModelSummary& model, const Resources& resources,
                                            const ShardingOptions& options) {
  if (options.axis != "components") {
    throw InvalidInput("axis='" + options.axis + "' cannot be sharded; accepted: components");
  }
  model.validate();
  const std::uint64_t k = model.components;
  const std::uint64_t min = options.min_components_per_shard;
  if (min == 0) {
    throw InvalidInput("min_components_per_shard=0 is invalid; accepted: an integer ≥ 1");
  }
  if (min > k) {
    throw InvalidInput("min_components_per_shard=" + std::to_string(min) +
                       " cannot exceed the number of components K=" + std::to_string(k) +
                       "; accepted: 1 ≤ min_components_per_shard ≤ " + std::to_string(k));
  }
  const std::size_t shards = std::max<std::size_t>(1, std::min<std::uint64_t>(resources.size(), k / min));
  double total = 0;
  for (std::size_t i = 0; i < shards; ++i) total += resources.devices()[i].throughput;
  std::vector<double> w(shards);
  std::vector<std::uint64_t> counts(shards);
  std::uint64_t sum = 0;
  for (std::size_t i = 0; i < shards; ++i) {
    w[i] = resources.devices()[i].throughput / total;
    counts[i] = std::max(min, static_cast<std::uint64_t>(std::floor(w[i] * static_cast<double>(k))));
    sum += counts[i];
  }
  // Every count is at least `min` and shards ≤ K / min, so while the counts sum past K the
  // largest is above `min`: taking one from it keeps every shard at the minimum or more.
  while (sum > k) {
    --*std::max_element(counts.begin(), counts.end());
    --sum;
  }
  while (sum < k) {
    ++counts[detail::largest_deficit(w, counts, k)];
    ++sum;
  }
  // Exact per-component bytes; the statistics buffer's two global values (log-likelihood, rows)
  // are replicated on every shard.
  const std::uint64_t param_per = model.parameter_bytes() / k;
  const std::uint64_t stat_per = (model.statistic_bytes() - kGlobalStatisticBytes) / k;
  std::vector<ModelShard> out;
  std::uint64_t start = 0;
  for (std::size_t i = 0; i < shards; ++i) {  // the counts, each ≥ min ≥ 1, sum to K
    const std::uint64_t n = counts[i];
    out.push_back({resources.devices()[i], start, start + n, n * param_per, n * stat_per + kGlobalStatisticBytes});
    out.back().validate();
    start += n;
  }
  // Post-conditions: contiguous cover of [0, K), each shard at least `min` components.
  std::uint64_t cursor = 0;
  for (const ModelShard& s : out) {
    if (s.component_start != cursor || s.num_components() < min) {
      throw Error(
          "internal error: model_sharding_plan produced a non-contiguous or undersized "
          "shard; please report it");
    }
    cursor = s.component_stop;
  }
  if (cursor != k) throw Error("internal error: model_sharding_plan left components unassigned");
  return out;
}

}  // namespace mixle::plan
