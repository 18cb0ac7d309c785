// Calibration records, the catalog and their JSON.
#include <mixle/plan/calibration.hpp>

#include <mixle/error.hpp>

#include "plan/resources_json.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <sstream>

namespace mixle::plan {

namespace {

using detail::Json;

constexpr double kMinElapsedSeconds = 1e-12;  // a timer can read 0 for very fast runs

std::string fmt(double v) {
  std::ostringstream out;
  out.precision(17);
  out << v;
  return out.str();
}

Json result_to_json(const DeviceCalibration& r) {
  return {{"device_name", r.device_name},
          {"success", r.success},
          {"elapsed_seconds", r.elapsed_seconds},
          {"throughput", r.throughput ? Json(*r.throughput) : Json(nullptr)},
          {"error", r.error ? Json(*r.error) : Json(nullptr)}};
}

DeviceCalibration result_from_json(const Json& j, const std::string& ctx) {
  using namespace detail;
  if (!j.is_object()) throw InvalidInput(ctx + "=" + describe(j) + " is not an object");
  DeviceCalibration r;
  r.device_name = get_string(j, ctx, "device_name");
  r.success = get_bool(j, ctx, "success");
  if (auto it = j.find("elapsed_seconds"); it != j.end() && !it->is_null()) {
    if (!it->is_array()) throw InvalidInput(ctx + ".elapsed_seconds is not a list of numbers");
    for (std::size_t i = 0; i < it->size(); ++i) {
      r.elapsed_seconds.push_back(as_number((*it)[i], ctx + ".elapsed_seconds[" + std::to_string(i) + "]"));
    }
  }
  r.throughput = get_opt_number(j, ctx, "throughput");
  r.error = get_opt_string(j, ctx, "error");
  return r;  // validated with its record by CalibrationCatalog::append
}

Json record_to_json(const CalibrationRecord& r) {
  Json results = Json::array();
  for (const DeviceCalibration& d : r.device_results) results.push_back(result_to_json(d));
  return {{"model_type", r.model_type},
          {"workload", r.workload},
          {"resources", detail::resources_to_json(r.resources)},
          {"sample_size", r.sample_size},
          {"repeats", r.repeats},
          {"precision", r.precision ? Json(*r.precision) : Json(nullptr)},
          {"estimator_type", r.estimator_type},
          {"row_count", r.row_count},
          {"model_bytes", r.model_bytes},
          {"statistic_bytes", r.statistic_bytes},
          {"timestamp", r.timestamp},
          {"device_results", results}};
}

CalibrationRecord record_from_json(const Json& j, const std::string& ctx) {
  using namespace detail;
  if (!j.is_object()) throw InvalidInput(ctx + "=" + describe(j) + " is not an object");
  CalibrationRecord r;
  r.model_type = get_string(j, ctx, "model_type");
  r.workload = workload_name(get_string(j, ctx, "workload"));
  r.resources = resources_from_json(require(j, ctx, "resources"), field_path(ctx, "resources"));
  r.sample_size = get_uint(j, ctx, "sample_size");
  r.repeats = get_uint(j, ctx, "repeats");
  if (auto p = get_opt_string(j, ctx, "precision")) r.precision = precision_name(*p);
  r.estimator_type = get_string(j, ctx, "estimator_type", std::string("none"));
  r.row_count = get_uint(j, ctx, "row_count", 0);
  r.model_bytes = get_uint(j, ctx, "model_bytes", 0);
  r.statistic_bytes = get_uint(j, ctx, "statistic_bytes", 0);
  r.timestamp = get_number(j, ctx, "timestamp", 0.0);
  if (auto it = j.find("device_results"); it != j.end() && !it->is_null()) {
    if (!it->is_array()) throw InvalidInput(ctx + ".device_results is not a list");
    for (std::size_t i = 0; i < it->size(); ++i) {
      r.device_results.push_back(result_from_json((*it)[i], ctx + ".device_results[" + std::to_string(i) + "]"));
    }
  }
  return r;  // validated by CalibrationCatalog::append
}

}  // namespace

void DeviceCalibration::validate() const {
  if (device_name.find_first_not_of(" \t\r\n") == std::string::npos) {
    throw InvalidInput("calibration device_name='" + device_name +
                       "' is blank; accepted: the calibrated device's name");
  }
  const std::string where = "calibration of '" + device_name + "': ";
  for (double t : elapsed_seconds) {
    if (!std::isfinite(t) || t <= 0) {
      throw InvalidInput(where + "elapsed_seconds contains " + fmt(t) + "; accepted: finite timings > 0");
    }
  }
  if (success) {
    if (elapsed_seconds.empty()) {
      throw InvalidInput(where + "success=true with no timings; accepted: at least one timing");
    }
    if (!throughput || !std::isfinite(*throughput) || *throughput <= 0) {
      throw InvalidInput(where +
                         "success=true with throughput=" + (throughput ? fmt(*throughput) : std::string("none")) +
                         "; accepted: a finite throughput > 0 (rows/s)");
    }
    if (error) {
      throw InvalidInput(where + "success=true with error='" + *error + "'; accepted: no error on success");
    }
  } else if (!error || error->empty()) {
    throw InvalidInput(where + "success=false without an error; accepted: the failure's message");
  }
}

double throughput_from_timings(std::uint64_t rows, const std::vector<double>& elapsed) {
  if (elapsed.empty()) {
    throw InvalidInput("elapsed_seconds is empty; accepted: at least one timing");
  }
  std::vector<double> sorted = elapsed;
  std::sort(sorted.begin(), sorted.end());
  const std::size_t n = sorted.size();
  const double median = n % 2 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
  return static_cast<double>(rows) / std::max(median, kMinElapsedSeconds);
}

Resources apply_calibration(const Resources& resources, const std::vector<DeviceCalibration>& results,
                            std::optional<std::string> precision) {
  std::vector<DeviceSpec> devices = resources.devices();
  for (const DeviceCalibration& r : results) {
    r.validate();
    if (!r.success) continue;
    auto it =
        std::find_if(devices.begin(), devices.end(), [&](const DeviceSpec& d) { return d.name == r.device_name; });
    if (it == devices.end()) {
      throw InvalidInput("calibration result for device '" + r.device_name +
                         "' matches no device of the resources; accepted: their device names");
    }
    it->throughput = *r.throughput;
    if (precision) it->precision = precision_name(*precision);
  }
  return Resources(std::move(devices));
}

std::string workload_name(std::string_view workload) {
  std::string w(workload);
  for (char& c : w) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (w == "accumulate") w = "estep";
  if (w != "score" && w != "estep" && w != "em") {
    throw InvalidInput("workload='" + std::string(workload) +
                       "' is not known; accepted: score, estep (or accumulate), em");
  }
  return w;
}

bool CalibrationRecord::fully_successful() const {
  if (device_results.size() != resources.size()) return false;
  for (const DeviceSpec& d : resources.devices()) {
    auto it = std::find_if(device_results.begin(), device_results.end(),
                           [&](const DeviceCalibration& r) { return r.device_name == d.name; });
    if (it == device_results.end() || !it->success) return false;
  }
  return true;
}

void CalibrationRecord::validate() const {
  if (model_type.empty()) throw InvalidInput("calibration model_type is blank; accepted: a name");
  // What load() refuses, append() refuses: a saved catalog always loads.
  if (estimator_type.find_first_not_of(" \t\r\n") == std::string::npos) {
    throw InvalidInput("calibration estimator_type='" + estimator_type + "' is blank; accepted: a name, or \"none\"");
  }
  if (workload_name(workload) != workload) {
    throw InvalidInput("calibration workload='" + workload +
                       "' is not canonical; accepted: " + workload_name(workload));
  }
  if (!std::isfinite(timestamp) || timestamp < 0) {
    throw InvalidInput("calibration timestamp=" + fmt(timestamp) +
                       " is invalid; accepted: seconds since the epoch ≥ 0");
  }
  for (const DeviceCalibration& r : device_results) r.validate();
}

void CalibrationCatalog::append(CalibrationRecord record) {
  record.validate();
  records_.push_back(std::move(record));
}

const CalibrationRecord* CalibrationCatalog::latest(std::string_view model_type, std::string_view workload,
                                                    std::optional<std::string> precision) const {
  const std::string w = workload_name(workload);
  if (precision) precision = precision_name(*precision);
  const CalibrationRecord* best = nullptr;
  for (const CalibrationRecord& r : records_) {
    if (r.model_type != model_type || r.workload != w || r.precision != precision) continue;
    if (!best || r.timestamp >= best->timestamp) best = &r;
  }
  return best;
}

std::optional<Resources> CalibrationCatalog::resources_for(std::string_view model_type, std::string_view workload,
                                                           std::optional<std::string> precision) const {
  const CalibrationRecord* r = latest(model_type, workload, std::move(precision));
  if (!r || !r->fully_successful()) return std::nullopt;
  return r->resources;
}

std::string CalibrationCatalog::to_json(int indent) const {
  Json records = Json::array();
  for (const CalibrationRecord& r : records_) records.push_back(record_to_json(r));
  return Json{{"format", "mixle-calibration"}, {"version", 1}, {"records", records}}.dump(indent);
}

CalibrationCatalog CalibrationCatalog::from_json(std::string_view text) {
  using namespace detail;
  const Json doc = parse_object(text, "calibration catalog");
  const std::string format = get_string(doc, "", "format");
  if (format != "mixle-calibration") {
    throw InvalidInput("format='" + format +
                       "' is not a calibration catalog; accepted: "
                       "mixle-calibration");
  }
  // No floor: every version but 1, 0 and negatives included, gets the message below.
  const std::int64_t version = get_int(doc, "", "version", std::numeric_limits<std::int64_t>::min());
  if (version != 1) {
    throw InvalidInput("calibration catalog version=" + std::to_string(version) + " is not supported; accepted: 1");
  }
  CalibrationCatalog out;
  const Json& records = require(doc, "", "records");
  if (!records.is_array()) throw InvalidInput("records=" + describe(records) + " is not a list");
  for (std::size_t i = 0; i < records.size(); ++i) {
    out.append(record_from_json(records[i], "records[" + std::to_string(i) + "]"));
  }
  return out;
}

void CalibrationCatalog::save(const std::string& path) const { detail::write_text_atomic(path, to_json(2) + "\n"); }

CalibrationCatalog CalibrationCatalog::load(const std::string& path) {
  const std::string text = detail::read_text(path);
  try {
    return from_json(text);
  } catch (const InvalidInput& e) {
    throw InvalidInput("calibration catalog '" + path + "': " + e.what());
  }
}

}  // namespace mixle::plan
