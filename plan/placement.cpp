// Placement: validation, printing and JSON (reference `to_dict` shape).
#include <mixle/plan/placement.hpp>

#include <mixle/error.hpp>

#include "plan/resources_json.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>

namespace mixle::plan {

namespace {

using detail::Json;

std::string range_text(const PlacementShard& s) {
  return s.device.name + "[" + std::to_string(s.start) + ":" + std::to_string(s.stop) + "]";
}

}  // namespace

void Placement::validate(std::optional<std::uint64_t> expected_rows, const Resources* passed) const {
  if (dtype_bytes < 1) {
    throw InvalidInput("placement dtype_bytes=0 is invalid; accepted: an integer ≥ 1");
  }
  if (!std::isfinite(encoded_row_bytes) || encoded_row_bytes < 0) {
    throw InvalidInput("placement encoded_row_bytes=" + std::to_string(encoded_row_bytes) +
                       " is invalid; accepted: a finite non-negative number");
  }
  if (!std::isfinite(transient_row_bytes) || transient_row_bytes < 0) {
    throw InvalidInput("placement transient_row_bytes=" + std::to_string(transient_row_bytes) +
                       " is invalid; accepted: a finite non-negative number");
  }
  if (!std::isfinite(safety_factor) || safety_factor <= 0) {
    throw InvalidInput("placement safety_factor=" + std::to_string(safety_factor) +
                       " is invalid; accepted: a finite number > 0");
  }
  if (expected_rows && *expected_rows != total_rows) {
    throw InvalidInput("placement total_rows=" + std::to_string(total_rows) + " does not match execution data length=" +
                       std::to_string(*expected_rows) + "; accepted: a placement planned for these rows");
  }
  if (passed && resources && !(*passed == *resources)) {
    throw InvalidInput(
        "placement was planned for different resources than the execution "
        "resources; accepted: the declared resources (re-plan for the new ones)");
  }
  const Resources* effective = passed ? passed : (resources ? &*resources : nullptr);
  for (const PlacementShard& s : shards) {
    if (s.start > s.stop) {
      throw InvalidInput("placement shard " + range_text(s) + " has start > stop; accepted: 0 ≤ start ≤ stop");
    }
    if (s.sub_chunks < 1) {
      throw InvalidInput("placement shard " + range_text(s) + " has sub_chunks=0; accepted: sub_chunks ≥ 1");
    }
    if (effective) {
      const DeviceSpec* known = effective->find(s.device.name);
      if (!known || !(*known == s.device)) {
        throw InvalidInput("placement shard " + range_text(s) + " uses device '" + s.device.name +
                           "', which is not in declared resources" + (known ? " (a device of that name differs)" : "") +
                           "; accepted: devices of the resources the placement was planned for");
      }
    }
    if (s.device.memory_bytes && s.total_bytes() > *s.device.memory_bytes) {
      throw MemoryError("placement shard " + range_text(s) + " needs " + std::to_string(s.total_bytes()) +
                        " bytes (encoded " + std::to_string(s.encoded_bytes) + " + transient " +
                        std::to_string(s.transient_bytes) + ") but device '" + s.device.name +
                        "' has memory_bytes=" + std::to_string(*s.device.memory_bytes) +
                        "; accepted: at most the device memory (re-plan with more devices or "
                        "smaller chunks)");
    }
  }
  if (total_rows > 0 && shards.empty()) {
    throw InvalidInput("placement of total_rows=" + std::to_string(total_rows) +
                       " has no shards; accepted: shards covering [0, total_rows)");
  }
  std::vector<const PlacementShard*> order;
  for (const PlacementShard& s : shards) order.push_back(&s);
  std::stable_sort(order.begin(), order.end(), [](const PlacementShard* a, const PlacementShard* b) {
    return a->start != b->start ? a->start < b->start : a->stop < b->stop;
  });
  if (total_rows == 0) {
    for (const PlacementShard* s : order) {
      if (s->start != 0 || s->stop != 0) {
        throw InvalidInput("placement of total_rows=0 has shard " + range_text(*s) + "; accepted: only [0:0]");
      }
    }
    if (order.size() > 1) {
      throw InvalidInput("placement of total_rows=0 has " + std::to_string(order.size()) +
                         " shards; accepted: one shard [0:0]");
    }
    return;
  }
  std::uint64_t cursor = 0;
  for (const PlacementShard* s : order) {
    if (s->size() == 0) {
      throw InvalidInput("placement shard " + range_text(*s) +
                         " is empty; accepted: non-empty shards (only a zero-row placement has "
                         "[0:0])");
    }
    if (s->start < cursor) {
      throw InvalidInput("placement shards overlap at row " + std::to_string(s->start) + " (" + range_text(*s) +
                         " starts before row " + std::to_string(cursor) +
                         "); accepted: shards tiling [0, total_rows) without overlap");
    }
    if (s->start > cursor) {
      throw InvalidInput("placement has a gap at row " + std::to_string(cursor) + " (next shard " + range_text(*s) +
                         "); accepted: shards tiling [0, total_rows) without gaps");
    }
    cursor = s->stop;
  }
  if (cursor != total_rows) {
    const bool over = cursor > total_rows;
    throw InvalidInput(std::string("placement ") + (over ? "overlaps the end" : "has a gap") + " at row " +
                       std::to_string(over ? total_rows : cursor) + ": shards end at row " + std::to_string(cursor) +
                       " but total_rows=" + std::to_string(total_rows) +
                       "; accepted: shards ending exactly at total_rows");
  }
}

std::vector<PlacementShard> Placement::for_device(std::string_view name) const {
  std::vector<PlacementShard> out;
  for (const PlacementShard& s : shards) {
    if (s.device.name == name) out.push_back(s);
  }
  return out;
}

std::string Placement::to_string() const {
  std::ostringstream out;
  out << "Placement(rows=" << total_rows << ", shards=" << shards.size() << ", encoded_row_bytes=" << encoded_row_bytes
      << ", transient_row_bytes=" << transient_row_bytes << ", model_bytes=" << model_bytes
      << ", statistic_bytes=" << statistic_bytes << ", dtype_bytes=" << dtype_bytes << ")\n";
  for (const PlacementShard& s : shards) {
    out << "  " << range_text(s) << " rows=" << s.size() << " sub_chunks=" << s.sub_chunks
        << " estimated_bytes=" << s.total_bytes() << "\n";
  }
  return out.str();
}

std::string Placement::to_json(int indent) const {
  Json shards_json = Json::array();
  for (const PlacementShard& s : shards) {
    shards_json.push_back(Json{{"device", s.device.name},
                               {"kind", s.device.kind},
                               {"engine", s.device.engine},
                               {"start", s.start},
                               {"stop", s.stop},
                               {"sub_chunks", s.sub_chunks},
                               {"encoded_bytes", s.encoded_bytes},
                               {"transient_bytes", s.transient_bytes}});
  }
  Json out = {{"total_rows", total_rows},
              {"encoded_row_bytes", encoded_row_bytes},
              {"transient_row_bytes", transient_row_bytes},
              {"model_bytes", model_bytes},
              {"statistic_bytes", statistic_bytes},
              {"dtype_bytes", dtype_bytes},
              {"resources", resources ? detail::resources_to_json(*resources) : Json(nullptr)},
              {"shards", shards_json},
              {"rows_per_chunk", rows_per_chunk},
              {"safety_factor", safety_factor}};
  return out.dump(indent);
}

Placement Placement::from_json(std::string_view text) {
  using namespace detail;
  const Json doc = parse_object(text, "placement document");
  Placement p;
  p.total_rows = get_uint(doc, "", "total_rows");
  p.encoded_row_bytes = get_number(doc, "", "encoded_row_bytes");
  p.transient_row_bytes = get_number(doc, "", "transient_row_bytes");
  p.model_bytes = get_uint(doc, "", "model_bytes");
  p.statistic_bytes = get_uint(doc, "", "statistic_bytes");
  p.dtype_bytes = get_uint(doc, "", "dtype_bytes");
  p.rows_per_chunk = get_uint(doc, "", "rows_per_chunk", 0);
  p.safety_factor = get_number(doc, "", "safety_factor", 1.25);
  if (auto it = doc.find("resources"); it != doc.end() && !it->is_null()) {
    p.resources = resources_from_json(*it, "resources");
  }
  const Json& shards = require(doc, "", "shards");
  if (!shards.is_array()) {
    throw InvalidInput("shards=" + describe(shards) + " is not a list; accepted: a list of shards");
  }
  for (std::size_t i = 0; i < shards.size(); ++i) {
    const std::string ctx = "shards[" + std::to_string(i) + "]";
    const Json& s = shards[i];
    if (!s.is_object()) throw InvalidInput(ctx + "=" + describe(s) + " is not an object");
    PlacementShard shard;
    const std::string name = get_string(s, ctx, "device");
    // Shards name their device; its full description comes from the declared resources.
    if (p.resources) {
      const DeviceSpec* d = p.resources->find(name);
      if (!d) {
        throw InvalidInput(ctx + ".device='" + name +
                           "' is not in declared resources; accepted: "
                           "a device listed under resources.devices");
      }
      shard.device = *d;
    } else {
      shard.device.name = name;
      shard.device.kind = get_string(s, ctx, "kind", std::string("cpu"));
      shard.device.engine = get_string(s, ctx, "engine", std::string("cpu"));
    }
    shard.start = get_uint(s, ctx, "start");
    shard.stop = get_uint(s, ctx, "stop");
    shard.sub_chunks = get_uint(s, ctx, "sub_chunks", 1);
    shard.encoded_bytes = get_uint(s, ctx, "encoded_bytes", 0);
    shard.transient_bytes = get_uint(s, ctx, "transient_bytes", 0);
    p.shards.push_back(std::move(shard));
  }
  p.validate();
  return p;
}

}  // namespace mixle::plan
