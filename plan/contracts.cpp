// ParameterLayout and DistributedUpdate: validation and JSON.
#include <mixle/plan/contracts.hpp>

#include <mixle/error.hpp>

#include "plan/json_fields.hpp"

#include <algorithm>
#include <cmath>
#include <set>
#include <sstream>

namespace mixle::plan {

namespace {

using detail::Json;

constexpr const char* kPayloads[] = {"gradient", "sufficient_statistic", "parameter", "activation", "kv_block", "token",
                                     "message"};
constexpr const char* kCollectives[] = {"none",      "all_reduce", "reduce_scatter", "all_gather", "all_to_all",
                                        "broadcast", "p2p",        "custom"};
constexpr const char* kLayouts[] = {"replicated", "sharded", "pipeline_local", "expert_local", "offloaded"};

template <class Enum, std::size_t N>
Enum from_name(std::string_view name, const char* const (&names)[N], const char* what) {
  std::string accepted;
  for (std::size_t i = 0; i < N; ++i) {
    if (name == names[i]) return static_cast<Enum>(i);
    accepted += (i ? ", " : "") + std::string(names[i]);
  }
  throw InvalidInput(std::string(what) + "='" + std::string(name) + "' is not known; accepted: " + accepted);
}

bool blank(const std::string& s) { return s.find_first_not_of(" \t\r\n") == std::string::npos; }

std::string fmt(double v) {
  std::ostringstream out;
  out.precision(17);
  out << v;
  return out.str();
}

}  // namespace

const char* payload_name(PayloadKind kind) noexcept { return kPayloads[static_cast<int>(kind)]; }
const char* collective_name(CollectiveKind kind) noexcept { return kCollectives[static_cast<int>(kind)]; }
const char* state_layout_name(StateLayout layout) noexcept { return kLayouts[static_cast<int>(layout)]; }
PayloadKind payload_from_name(std::string_view name) { return from_name<PayloadKind>(name, kPayloads, "payload"); }
CollectiveKind collective_from_name(std::string_view name) {
  return from_name<CollectiveKind>(name, kCollectives, "collective");
}
StateLayout state_layout_from_name(std::string_view name) {
  return from_name<StateLayout>(name, kLayouts, "state_layout");
}

void ParameterLayout::validate() const {
  if (blank(logical_id)) {
    throw InvalidInput("parameter layout logical_id='" + logical_id + "' is blank; accepted: a non-blank identifier");
  }
  const std::string where = "parameter layout '" + logical_id + "': ";
  for (std::size_t i = 0; const auto extent : global_shape) {
    if (extent < 0) {
      throw InvalidInput(where + "global_shape[" + std::to_string(i) + "]=" + std::to_string(extent) +
                         " is negative; accepted: exact integers ≥ 0");
    }
    ++i;
  }
  std::set<std::string> axes;
  for (const auto& [axis, placement] : placements) {
    if (blank(axis) || blank(placement)) {
      throw InvalidInput(where + "placement ('" + axis + "', '" + placement +
                         "') has a blank entry; accepted: non-blank (axis, placement) pairs");
    }
    if (!axes.insert(axis).second) {
      throw InvalidInput(where + "placements repeat axis '" + axis + "'; accepted: each axis at most once");
    }
  }
  if (shared_group && blank(*shared_group)) {
    throw InvalidInput(where + "shared_group='" + *shared_group +
                       "' is blank; accepted: a non-blank group name or none");
  }
}

std::string ParameterLayout::to_json(int indent) const {
  Json placements_json = Json::object();
  for (const auto& [axis, placement] : placements) placements_json[axis] = placement;
  Json out = {{"logical_id", logical_id},
              {"global_shape", global_shape},
              {"placements", placements_json},
              {"shared_group", shared_group ? Json(*shared_group) : Json(nullptr)},
              {"optimizer_state", state_layout_name(optimizer_state)}};
  return out.dump(indent);
}

ParameterLayout ParameterLayout::from_json(std::string_view text) {
  using namespace detail;
  const Json doc = parse_object(text, "parameter layout document");
  ParameterLayout out;
  out.logical_id = get_string(doc, "", "logical_id");
  const Json& shape = require(doc, "", "global_shape");
  if (!shape.is_array()) {
    throw InvalidInput("global_shape=" + describe(shape) +
                       " is not a list; accepted: a list of "
                       "exact integers ≥ 0");
  }
  for (std::size_t i = 0; i < shape.size(); ++i) {
    out.global_shape.push_back(as_int(shape[i], "global_shape[" + std::to_string(i) + "]", 0));
  }
  if (auto it = doc.find("placements"); it != doc.end() && !it->is_null()) {
    if (!it->is_object()) {
      throw InvalidInput("placements=" + describe(*it) +
                         " is not an object; accepted: "
                         "{axis: placement}");
    }
    for (const auto& [axis, placement] : it->items()) {
      out.placements.emplace_back(axis, as_string(placement, "placements." + axis));
    }
  }
  out.shared_group = get_opt_string(doc, "", "shared_group");
  out.optimizer_state = state_layout_from_name(get_string(doc, "", "optimizer_state", "replicated"));
  out.validate();
  return out;
}

void DistributedUpdate::validate() const {
  if (blank(node_id)) {
    throw InvalidInput("distributed update node_id='" + node_id + "' is blank; accepted: a non-blank identifier");
  }
  const std::string where = "distributed update '" + node_id + "': ";
  std::set<ParallelAxis> seen;
  for (ParallelAxis axis : mesh_axes) {
    if (!seen.insert(axis).second) {
      throw InvalidInput(where + "mesh_axes repeat '" + axis_name(axis) + "'; accepted: each axis at most once");
    }
  }
  if (exact && collective != CollectiveKind::none) {
    throw InvalidInput(where + "exact=true with collective=" + collective_name(collective) +
                       ": a distributed collective cannot claim guaranteed numerical exactness; "
                       "accepted: exact=false (record the maths' exactness in contract_exact)");
  }
  auto check_bound = [&](const char* field, const std::optional<double>& v) {
    if (v && (!std::isfinite(*v) || *v < 0)) {
      throw InvalidInput(where + field + "=" + fmt(*v) + " is invalid; accepted: a finite number ≥ 0, or none");
    }
  };
  check_bound("maximum_absolute_error", maximum_absolute_error);
  check_bound("maximum_relative_error", maximum_relative_error);
  if (numerics_sample_count < 0) {
    throw InvalidInput(where + "numerics_sample_count=" + std::to_string(numerics_sample_count) +
                       " is negative; accepted: an integer ≥ 0");
  }
  if (numerics_evidence_id && blank(*numerics_evidence_id)) {
    throw InvalidInput(where + "numerics_evidence_id='" + *numerics_evidence_id +
                       "' is blank; accepted: a non-blank id or none");
  }
  const bool has_id = numerics_evidence_id.has_value();
  if (has_id != (numerics_sample_count > 0)) {
    throw InvalidInput(where +
                       "numerics_evidence_id=" + (has_id ? "'" + *numerics_evidence_id + "'" : std::string("none")) +
                       " with numerics_sample_count=" + std::to_string(numerics_sample_count) +
                       "; accepted: an evidence id exactly when the sample count is > 0");
  }
  if (has_id && (!determinism_observed || !maximum_absolute_error || !maximum_relative_error)) {
    throw InvalidInput(where + "numerics evidence '" + *numerics_evidence_id +
                       "' lacks determinism_observed, maximum_absolute_error or "
                       "maximum_relative_error; accepted: all three set with evidence");
  }
}

std::string DistributedUpdate::to_json(int indent) const {
  Json axes = Json::array();
  for (ParallelAxis axis : mesh_axes) axes.push_back(axis_name(axis));
  auto opt = [](const auto& v) { return v ? Json(*v) : Json(nullptr); };
  Json out = {{"node_id", node_id},
              {"payload", payload_name(payload)},
              {"collective", collective_name(collective)},
              {"mesh_axes", axes},
              {"state_layout", state_layout_name(state_layout)},
              {"exact", exact},
              {"notes", notes},
              {"contract_exact", contract_exact},
              {"determinism_observed", opt(determinism_observed)},
              {"maximum_absolute_error", opt(maximum_absolute_error)},
              {"maximum_relative_error", opt(maximum_relative_error)},
              {"numerics_evidence_id", opt(numerics_evidence_id)},
              {"numerics_sample_count", numerics_sample_count}};
  return out.dump(indent);
}

DistributedUpdate DistributedUpdate::from_json(std::string_view text) {
  using namespace detail;
  const Json doc = parse_object(text, "distributed update document");
  DistributedUpdate u;
  u.node_id = get_string(doc, "", "node_id");
  u.payload = payload_from_name(get_string(doc, "", "payload"));
  u.collective = collective_from_name(get_string(doc, "", "collective"));
  const Json& axes = require(doc, "", "mesh_axes");
  if (!axes.is_array()) {
    throw InvalidInput("mesh_axes=" + describe(axes) +
                       " is not a list; accepted: a list of axis "
                       "names");
  }
  for (std::size_t i = 0; i < axes.size(); ++i) {
    u.mesh_axes.push_back(axis_from_name(as_string(axes[i], "mesh_axes[" + std::to_string(i) + "]")));
  }
  u.state_layout = state_layout_from_name(get_string(doc, "", "state_layout"));
  u.exact = get_bool(doc, "", "exact");
  if (auto it = doc.find("notes"); it != doc.end() && !it->is_null()) {
    if (!it->is_array()) throw InvalidInput("notes=" + describe(*it) + " is not a list of strings");
    for (std::size_t i = 0; i < it->size(); ++i) {
      u.notes.push_back(as_string((*it)[i], "notes[" + std::to_string(i) + "]", true));
    }
  }
  u.contract_exact = get_bool(doc, "", "contract_exact", false);
  if (auto it = doc.find("determinism_observed"); it != doc.end() && !it->is_null()) {
    u.determinism_observed = as_bool(*it, "determinism_observed");
  }
  u.maximum_absolute_error = get_opt_number(doc, "", "maximum_absolute_error");
  u.maximum_relative_error = get_opt_number(doc, "", "maximum_relative_error");
  u.numerics_evidence_id = get_opt_string(doc, "", "numerics_evidence_id");
  u.numerics_sample_count = get_int(doc, "", "numerics_sample_count", 0, 0);
  u.validate();
  return u;
}

DistributedUpdate em_statistics_update(const ParallelPlan& plan, std::string node_id) {
  DistributedUpdate u;
  u.node_id = std::move(node_id);
  u.payload = PayloadKind::sufficient_statistic;
  u.state_layout = StateLayout::replicated;
  for (ParallelAxis axis : {ParallelAxis::dp_replicate, ParallelAxis::dp_shard}) {
    if (plan.size(axis) > 1) u.mesh_axes.push_back(axis);
  }
  u.collective = u.mesh_axes.empty() ? CollectiveKind::none : CollectiveKind::all_reduce;
  u.exact = u.mesh_axes.empty();
  u.contract_exact = true;  // statistics are sums: the maths is exact, only float transport isn't
  u.validate();
  return u;
}

}  // namespace mixle::plan
