// plan(): throughput-proportional row ranges, then memory-cap splitting (docs/planning.md).
#include <mixle/plan/placement.hpp>

#include <mixle/error.hpp>

#include "plan/apportion.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>

namespace mixle::plan {

namespace {

struct Range {
  std::size_t device = 0;  // index into resources.devices()
  std::uint64_t start = 0;
  std::uint64_t stop = 0;
};

std::vector<double> normalized_throughput(const Resources& resources) {
  double total = 0;
  for (const DeviceSpec& d : resources.devices()) total += d.throughput;
  std::vector<double> w;
  for (const DeviceSpec& d : resources.devices()) w.push_back(d.throughput / total);
  return w;
}

/// Integer counts summing to `total`, as close to w·total as the largest-deficit rule allows:
/// floor first, then +1 where w − count/total is largest (first on ties), −1 where largest.
std::vector<std::uint64_t> proportional_counts(const std::vector<double>& w, std::uint64_t total) {
  std::vector<std::uint64_t> counts(w.size());
  std::uint64_t sum = 0;
  for (std::size_t i = 0; i < w.size(); ++i) {
    counts[i] = static_cast<std::uint64_t>(std::floor(w[i] * static_cast<double>(total)));
    sum += counts[i];
  }
  while (sum < total) {
    ++counts[detail::largest_deficit(w, counts, total)];
    ++sum;
  }
  while (sum > total) {  // floating rounding can overshoot by a little
    auto it = std::max_element(counts.begin(), counts.end());
    --*it;
    --sum;
  }
  return counts;
}

/// [start, stop) in `parts` near-equal contiguous pieces; boundaries start + floor(i·len/parts);
/// empty pieces dropped.
std::vector<std::pair<std::uint64_t, std::uint64_t>> split_range(std::uint64_t start, std::uint64_t stop,
                                                                 std::uint64_t parts) {
  std::vector<std::pair<std::uint64_t, std::uint64_t>> out;
  const unsigned __int128 len = stop - start;
  for (std::uint64_t i = 0; i < parts; ++i) {
    const auto a = start + static_cast<std::uint64_t>(len * i / parts);
    const auto b = start + static_cast<std::uint64_t>(len * (i + 1) / parts);
    if (b > a) out.emplace_back(a, b);
  }
  return out;
}

std::vector<Range> chunk_ranges(const Resources& resources, std::uint64_t rows,
                                std::optional<std::uint64_t> num_chunks) {
  const std::vector<double> w = normalized_throughput(resources);
  std::vector<Range> out;
  if (!num_chunks) {
    const std::vector<std::uint64_t> counts = proportional_counts(w, rows);
    std::uint64_t start = 0;
    for (std::size_t i = 0; i < counts.size(); ++i) {
      if (counts[i] == 0) continue;
      out.push_back({i, start, start + counts[i]});
      start += counts[i];
    }
    return out;
  }
  // Block assignment: device i takes counts[i] consecutive ranges (1:3 over 4 → slow, fast×3).
  const std::vector<std::uint64_t> slots = proportional_counts(w, *num_chunks);
  const auto ranges = split_range(0, rows, *num_chunks);
  std::size_t r = 0;
  for (std::size_t i = 0; i < slots.size() && r < ranges.size(); ++i) {
    for (std::uint64_t k = 0; k < slots[i] && r < ranges.size(); ++k, ++r) {
      out.push_back({i, ranges[r].first, ranges[r].second});
    }
  }
  return out;
}

std::uint64_t ceil_bytes(double value) { return static_cast<std::uint64_t>(std::ceil(value)); }

struct ByteModel {
  double erb = 0;  // encoded bytes per row
  double trb = 0;  // working-set bytes per row of a chunk
  double sf = 1.25;
  std::uint64_t rows_per_chunk = 0;
  std::uint64_t fixed = 0;  // ceil((model + statistic bytes) · sf)

  std::uint64_t encoded(std::uint64_t rows) const { return ceil_bytes(static_cast<double>(rows) * erb * sf); }
  std::uint64_t transient(std::uint64_t rows) const {
    const std::uint64_t chunk = rows_per_chunk == 0 ? rows : std::min(rows, rows_per_chunk);
    return ceil_bytes(static_cast<double>(chunk) * trb * sf) + fixed;
  }
  std::uint64_t total(std::uint64_t rows) const { return encoded(rows) + transient(rows); }
};

/// Largest row count whose shard fits `memory` (0 when not even one row fits). total(rows) is
/// non-decreasing in rows, so a binary search is exact despite the ceil() roundings.
std::uint64_t max_rows_fitting(const ByteModel& m, std::uint64_t memory, std::uint64_t upper) {
  if (m.total(1) > memory) return 0;
  std::uint64_t lo = 1, hi = upper;
  while (lo < hi) {
    const std::uint64_t mid = lo + (hi - lo + 1) / 2;
    if (m.total(mid) <= memory)
      lo = mid;
    else
      hi = mid - 1;
  }
  return lo;
}

}  // namespace

Placement plan(const Resources& resources, const PlanOptions& options) {
  if (!std::isfinite(options.safety_factor) || options.safety_factor <= 0) {
    std::ostringstream v;
    v << options.safety_factor;
    throw InvalidInput("safety_factor=" + v.str() + " is invalid; accepted: a finite number > 0");
  }
  if (options.sub_chunks < 1) {
    throw InvalidInput("sub_chunks=0 is invalid; accepted: an integer ≥ 1");
  }
  if (options.num_chunks && *options.num_chunks < 1) {
    throw InvalidInput(
        "num_chunks=0 is invalid; accepted: an integer ≥ 1, or unset for one "
        "range per device");
  }
  if (options.data_dtype_bytes != 4 && options.data_dtype_bytes != 8) {
    throw InvalidInput("data_dtype_bytes=" + std::to_string(options.data_dtype_bytes) +
                       " is invalid; accepted: 4 (float32 data) or 8 (float64 data)");
  }
  const std::size_t dtype_bytes = precision_bytes(options.precision);
  std::uint64_t components = 1;
  std::uint64_t model_bytes = 0, statistic_bytes = 0;
  std::size_t columns = options.columns.value_or(0);
  if (options.model) {
    components = options.model->components;
    model_bytes = options.model->parameter_bytes();  // validates the summary first
    statistic_bytes = options.model->statistic_bytes();
    if (!options.columns) columns = options.model->columns();
    if (options.columns && *options.columns < options.model->columns()) {
      throw InvalidInput("columns=" + std::to_string(*options.columns) + " is fewer than the " +
                         std::to_string(options.model->columns()) +
                         " columns the model's parts cover; accepted: columns ≥ Σ part dims");
    }
  }
  if (columns == 0 && options.rows > 0) {
    throw InvalidInput("columns=0 with rows=" + std::to_string(options.rows) +
                       "; accepted: a model (its parts give the columns) or columns ≥ 1");
  }

  ByteModel m;
  m.erb = static_cast<double>(columns * options.data_dtype_bytes);
  m.trb = static_cast<double>(components * dtype_bytes);
  m.sf = options.safety_factor;
  m.rows_per_chunk = options.rows_per_chunk;
  m.fixed = ceil_bytes(static_cast<double>(model_bytes + statistic_bytes) * m.sf);

  Placement out;
  out.total_rows = options.rows;
  out.encoded_row_bytes = m.erb;
  out.transient_row_bytes = m.trb;
  out.model_bytes = model_bytes;
  out.statistic_bytes = statistic_bytes;
  out.dtype_bytes = dtype_bytes;
  out.resources = resources;
  out.rows_per_chunk = options.rows_per_chunk;
  out.safety_factor = options.safety_factor;

  if (options.rows == 0) {
    out.shards.push_back({resources.fastest(), 0, 0, options.sub_chunks, 0, m.transient(0)});
    out.validate();
    return out;
  }
  for (const Range& r : chunk_ranges(resources, options.rows, options.num_chunks)) {
    const DeviceSpec& device = resources.devices()[r.device];
    std::uint64_t max_rows = r.stop - r.start;
    if (device.memory_bytes) {
      const std::uint64_t memory = *device.memory_bytes;
      if (m.fixed >= memory) {
        throw MemoryError("fixed model/statistic state requires " + std::to_string(m.fixed) + " bytes ((model_bytes " +
                          std::to_string(model_bytes) + " + statistic_bytes " + std::to_string(statistic_bytes) +
                          ") × safety_factor " + std::to_string(m.sf) + ") but device '" + device.name +
                          "' has memory_bytes=" + std::to_string(memory) +
                          "; accepted: devices with more memory, or shard the components "
                          "(model_sharding_plan)");
      }
      max_rows = max_rows_fitting(m, memory, max_rows);
      if (max_rows == 0) {
        throw MemoryError("one row needs " + std::to_string(m.total(1)) + " bytes on device '" + device.name +
                          "' (fixed " + std::to_string(m.fixed) + " + encoded " + std::to_string(m.encoded(1)) +
                          " + working set " + std::to_string(m.transient(1) - m.fixed) +
                          ") but it has memory_bytes=" + std::to_string(memory) + "; accepted: more memory per device");
      }
    }
    const std::uint64_t size = r.stop - r.start;
    const std::uint64_t pieces = (size + max_rows - 1) / max_rows;
    for (const auto& [a, b] : split_range(r.start, r.stop, pieces)) {
      out.shards.push_back({device, a, b, options.sub_chunks, m.encoded(b - a), m.transient(b - a)});
    }
  }
  out.validate();
  return out;
}

}  // namespace mixle::plan
