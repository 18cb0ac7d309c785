// DeviceSpec and Resources: validation, the simple constructors and JSON.
#include <mixle/plan/resources.hpp>

#include <mixle/error.hpp>

#include "plan/resources_json.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <set>
#include <sstream>
#include <tuple>

namespace mixle::plan {

namespace {

std::string lower(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string fmt_double(double value) {
  std::ostringstream out;
  out.precision(17);
  out << value;
  return out.str();
}

}  // namespace

std::string precision_name(std::string_view precision) {
  const std::string key = lower(precision);
  if (key == "float16" || key == "fp16" || key == "f16" || key == "half") return "float16";
  if (key == "bfloat16" || key == "bf16") return "bfloat16";
  if (key == "float32" || key == "fp32" || key == "f32" || key == "float") return "float32";
  if (key == "float64" || key == "fp64" || key == "f64" || key == "double") return "float64";
  throw InvalidInput("precision='" + std::string(precision) +
                     "' is not known; accepted: float16, bfloat16, float32, float64 (or fp16, "
                     "bf16, fp32/f32, fp64/f64)");
}

std::size_t precision_bytes(std::string_view precision) {
  const std::string name = precision_name(precision);
  if (name == "float16" || name == "bfloat16") return 2;
  if (name == "float32") return 4;
  return 8;
}

bool DeviceSpec::is_gpu() const noexcept { return kind == "cuda" || kind == "mps" || kind == "gpu"; }

void DeviceSpec::validate() const {
  if (name.find_first_not_of(" \t\r\n") == std::string::npos) {
    throw InvalidInput("device name='" + name +
                       "' is blank; accepted: a non-blank name such as "
                       "\"cpu:0\"");
  }
  const std::string where = "device '" + name + "': ";
  if (!std::isfinite(throughput) || throughput <= 0) {
    throw InvalidInput(where + "throughput=" + fmt_double(throughput) + " is invalid; accepted: a finite number > 0");
  }
  if (memory_bytes && *memory_bytes == 0) {
    throw InvalidInput(where +
                       "memory_bytes=0 is invalid; accepted: an integer > 0, or null "
                       "when unknown");
  }
  if (kind.empty()) throw InvalidInput(where + "kind='' is blank; accepted: cpu, cuda, gpu, mps");
  if (engine.empty()) throw InvalidInput(where + "engine='' is blank; accepted: e.g. cpu, cuda");
  auto check_rank = [&](const char* field, const std::optional<std::int64_t>& v) {
    if (v && *v < 0) {
      throw InvalidInput(where + field + "=" + std::to_string(*v) + " is negative; accepted: an integer ≥ 0, or null");
    }
  };
  check_rank("node_id", node_id);
  check_rank("local_rank", local_rank);
  check_rank("global_rank", global_rank);
  check_rank("compute_units", compute_units);
  if (precision && precision_name(*precision) != *precision) {
    throw InvalidInput(where + "precision='" + *precision + "' is not canonical; accepted: '" +
                       precision_name(*precision) + "'");
  }
}

Resources::Resources(std::vector<DeviceSpec> devices) : devices_(std::move(devices)) {
  if (devices_.empty()) {
    throw InvalidInput("resources need at least one device; got devices=[]");
  }
  std::set<std::string, std::less<>> names;
  std::set<std::tuple<std::int64_t, std::string, std::int64_t>> identities;
  for (const DeviceSpec& d : devices_) {
    d.validate();
    if (!names.insert(d.name).second) {
      throw InvalidInput("device name '" + d.name + "' appears twice; accepted: unique names");
    }
    if (d.node_id && d.local_rank && !identities.emplace(*d.node_id, d.kind, *d.local_rank).second) {
      throw InvalidInput("device '" + d.name +
                         "' repeats the physical device identity (node_id=" + std::to_string(*d.node_id) +
                         ", kind=" + d.kind + ", local_rank=" + std::to_string(*d.local_rank) +
                         "): duplicate physical device identities; accepted: one device per "
                         "(node_id, kind, local_rank)");
    }
  }
}

const DeviceSpec* Resources::find(std::string_view name) const noexcept {
  for (const DeviceSpec& d : devices_) {
    if (d.name == name) return &d;
  }
  return nullptr;
}

const DeviceSpec& Resources::fastest() const noexcept {
  const DeviceSpec* best = &devices_.front();
  for (const DeviceSpec& d : devices_) {
    if (d.throughput > best->throughput) best = &d;  // strict: the first wins ties
  }
  return *best;
}

Resources Resources::single_cpu(const SlotOptions& options) { return local(1, options); }

Resources Resources::local(std::size_t num_cpus, const SlotOptions& options) {
  if (num_cpus == 0) throw InvalidInput("num_cpus=0 is invalid; accepted: an integer ≥ 1");
  std::optional<std::string> precision;
  if (options.precision) precision = precision_name(*options.precision);
  std::vector<DeviceSpec> devices;
  for (std::size_t i = 0; i < num_cpus; ++i) {
    DeviceSpec d;
    d.name = "cpu:" + std::to_string(i);
    if (options.memory_bytes) d.memory_bytes = std::max<std::uint64_t>(1, *options.memory_bytes / num_cpus);
    d.throughput = options.throughput;
    d.precision = precision;
    devices.push_back(std::move(d));
  }
  return Resources(std::move(devices));
}

Resources Resources::from_specs(std::vector<DeviceSpec> devices) { return Resources(std::move(devices)); }

std::string Resources::to_json(int indent) const { return detail::resources_to_json(*this).dump(indent); }

Resources Resources::from_json(std::string_view text) {
  return detail::resources_from_json(detail::parse_object(text, "resources document"), "");
}

void Resources::save(const std::string& path) const { detail::write_text_atomic(path, to_json(2) + "\n"); }

Resources Resources::load(const std::string& path) {
  const std::string text = detail::read_text(path);
  try {
    return from_json(text);
  } catch (const InvalidInput& e) {
    throw InvalidInput("resources file '" + path + "': " + e.what());
  }
}

namespace detail {

namespace {
template <class T>
Json or_null(const std::optional<T>& value) {
  return value ? Json(*value) : Json(nullptr);
}
}  // namespace

Json device_to_json(const DeviceSpec& d) {
  Json out = Json::object();
  out["name"] = d.name;
  out["kind"] = d.kind;
  out["memory_bytes"] = or_null(d.memory_bytes);
  out["engine"] = d.engine;
  out["throughput"] = d.throughput;
  out["precision"] = or_null(d.precision);
  out["node_id"] = or_null(d.node_id);
  out["local_rank"] = or_null(d.local_rank);
  out["global_rank"] = or_null(d.global_rank);
  if (d.product) out["product"] = *d.product;
  if (d.compute_units) out["compute_units"] = *d.compute_units;
  return out;
}

DeviceSpec device_from_json(const Json& obj, std::string_view context) {
  if (!obj.is_object()) {
    throw InvalidInput(std::string(context) + "=" + describe(obj) +
                       " is not an object; accepted: {\"name\": …, \"kind\": …, …}");
  }
  DeviceSpec d;
  d.name = as_string(require(obj, context, "name"), field_path(context, "name"));
  d.kind = get_string(obj, context, "kind", std::string("cpu"));
  if (auto it = obj.find("memory_bytes"); it != obj.end() && !it->is_null()) {
    d.memory_bytes = as_uint(*it, field_path(context, "memory_bytes"));
  }
  d.engine = get_string(obj, context, "engine", std::string("cpu"));
  d.throughput = get_number(obj, context, "throughput", 1.0);
  if (auto p = get_opt_string(obj, context, "precision")) d.precision = precision_name(*p);
  d.node_id = get_opt_int(obj, context, "node_id", 0);
  d.local_rank = get_opt_int(obj, context, "local_rank", 0);
  d.global_rank = get_opt_int(obj, context, "global_rank", 0);
  d.product = get_opt_string(obj, context, "product");
  d.compute_units = get_opt_int(obj, context, "compute_units", 0);
  d.validate();
  return d;
}

Json resources_to_json(const Resources& resources) {
  Json devices = Json::array();
  for (const DeviceSpec& d : resources.devices()) devices.push_back(device_to_json(d));
  return Json{{"devices", devices}};
}

Resources resources_from_json(const Json& obj, std::string_view context) {
  const Json& devices = require(obj, context, "devices");
  const std::string path = field_path(context, "devices");
  if (!devices.is_array()) {
    throw InvalidInput(path + "=" + describe(devices) +
                       " is not a list; accepted: a list of "
                       "device objects");
  }
  std::vector<DeviceSpec> out;
  for (std::size_t i = 0; i < devices.size(); ++i) {
    out.push_back(device_from_json(devices[i], path + "[" + std::to_string(i) + "]"));
  }
  return Resources(std::move(out));
}

}  // namespace detail
}  // namespace mixle::plan
