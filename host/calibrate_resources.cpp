// calibrate_resources (include/mixle/calibrate.hpp): every device of a Resources times the user's
// model on a sample of the user's rows; its rows/s becomes its planning throughput. The
// reference's rules (workload names, throughput = rows / median, a failure keeps the device's
// spec, the record appended before the error is raised) with two additions a native engine needs:
// CPU slots are timed on their own width, and every device's statistics are checked against the
// CPU before its speed is believed.
#include "engine/compute.hpp"
#include "engine/estimator.hpp"
#include "engine/local_handle.hpp"
#include "engine/model_summary.hpp"
#include "engine/report.hpp"
#include "host/bench/bench.hpp"

#include <mixle/calibrate.hpp>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <map>
#include <utility>
#include <vector>

namespace mixle {
namespace {

using Clock = std::chrono::steady_clock;

/// The engine precision a device computes in: the option, else the device's pinned precision,
/// else float32. The kernels compute in float32 or float64 only.
engine::Precision compute_precision(const std::optional<std::string>& canonical) {
  const std::string p = canonical.value_or("float32");
  if (p == "float32") return engine::Precision::fp32;
  if (p == "float64") return engine::Precision::fp64;
  throw InvalidInput("precision \"" + p + "\": mixle's kernels compute in float32 or float64");
}

/// The CUDA device index of a spec: the number after the last "cuda:" in its name when the name
/// ends in one, else its local rank.
int cuda_index(const plan::DeviceSpec& d) {
  const auto at = d.name.rfind("cuda:");
  if (at != std::string::npos) {
    try {
      return *engine::cuda_index(std::string_view(d.name).substr(at));
    } catch (const InvalidInput&) {  // "…cuda:" and something else: not an index
    }
  }
  return static_cast<int>(d.local_rank.value_or(0));
}

/// CPU threads of a slot: its compute_units, else every thread (0).
int cpu_threads(const plan::DeviceSpec& d) {
  return d.compute_units && *d.compute_units > 0 ? static_cast<int>(*d.compute_units) : 0;
}

std::unique_ptr<engine::Compute> compute_for(const plan::DeviceSpec& d) {
  if (d.kind == "cpu") return engine::make_cpu_compute(cpu_threads(d));
  if (d.kind == "cuda" || d.kind == "gpu") {
    const int index = cuda_index(d);
    try {
      return engine::make_cuda_compute(index);
    } catch (const Error& e) {
      throw Error("CUDA device " + std::to_string(index) + ": " + e.what());
    }
  }
  throw InvalidInput("device kind \"" + d.kind + "\" has no mixle engine (cpu and cuda devices calibrate)");
}

std::string default_model_type(const Model& model) {
  std::string out;
  for (const Part& part : model.parts) {
    if (!out.empty()) out += '+';
    out += family_name(part.family);
  }
  return out;
}

struct Workload {
  const Model& model;
  const Dataset& sample;
  std::string name;  // score | estep | em
};

/// Times `repeats` runs of the workload on one device after one untimed warm-up (uploads,
/// first-touch pages, thread pools), then checks its statistics against `oracle`.
plan::DeviceCalibration measure(const plan::DeviceSpec& device, const Workload& w, engine::Precision precision,
                                int repeats, const std::vector<double>& oracle) {
  plan::DeviceCalibration out;
  out.device_name = device.name;
  try {
    const auto compute = compute_for(device);
    const std::size_t rows = w.sample.rows();
    std::vector<double> stats(static_cast<std::size_t>(engine::stat_layout(w.model).size), 0.0);
    std::vector<double> loglik(rows);  // the score workload's output: written whole, never read
    const engine::EstimatorOptions estimator{.m_step = {}, .precision = precision};
    const engine::ShiftTable shifts = engine::shift_table(w.model, precision);
    auto e_step = [&] {
      std::fill(stats.begin(), stats.end(), 0.0);
      engine::raise_for(compute->accumulate(w.model, w.sample, precision, stats), w.sample.source(),
                        w.sample.first_row());
    };
    auto run = [&] {
      if (w.name == "score") {
        engine::raise_for(compute->score(w.model, w.sample, precision, loglik.data(), nullptr), w.sample.source(),
                          w.sample.first_row());
      } else {
        e_step();
        if (w.name == "em") (void)engine::m_step(w.model, stats, shifts, estimator);
      }
    };
    run();  // untimed warm-up
    // The record keeps the timings only of a calibration whose check passed.
    std::vector<double> elapsed;
    for (int i = 0; i < repeats; ++i) {
      const auto t0 = Clock::now();
      run();
      elapsed.push_back(std::max(1e-12, std::chrono::duration<double>(Clock::now() - t0).count()));
    }
    e_step();
    const host::bench::CheckResult check =
        host::bench::compare_statistics(stats, oracle, host::bench::check_bound(precision));
    if (!check.passed) {
      out.error =
          std::string("statistics differ from the CPU's (") + engine::precision_name(precision) + "): " + check.message;
      return out;
    }
    out.throughput = plan::throughput_from_timings(rows, elapsed);
    out.elapsed_seconds = std::move(elapsed);
    out.success = true;
  } catch (const Error& e) {
    out.error = e.what();
  }
  return out;
}

void append_record(const CalibrateOptions& options, plan::CalibrationRecord record) {
  if (options.catalog) options.catalog->append(record);
  if (!options.catalog_path.empty()) {
    plan::CalibrationCatalog file;
    if (std::filesystem::exists(options.catalog_path)) file = plan::CalibrationCatalog::load(options.catalog_path);
    file.append(std::move(record));
    file.save(options.catalog_path);
  }
}

}  // namespace

plan::Resources calibrate_resources(const Dataset& data, const Model& model, const plan::Resources& resources,
                                    const CalibrateOptions& options) {
  if (data.empty()) throw InvalidInput(data.source() + ": no data rows to calibrate on");
  if (options.sample_size < 1) throw InvalidInput("calibration sample_size 0: must be ≥ 1 row");
  if (options.repeats < 1)
    throw InvalidInput("calibration repeats " + std::to_string(options.repeats) + ": must be ≥ 1");
  const std::string workload = plan::workload_name(options.workload);
  std::optional<std::string> precision;
  if (options.precision) precision = plan::precision_name(*options.precision);
  if (precision) (void)compute_precision(precision);
  validate_model(model);
  const Dataset sample = data.slice(0, std::min(options.sample_size, data.rows()));
  engine::check_data_against(model, sample);

  // The oracle: the sample's statistics on the CPU in the device's precision (so both are taken
  // about the same shifts). A row the model cannot score is the data's fault, not a device's,
  // and is reported before any device runs, as fit reports it.
  std::map<engine::Precision, std::vector<double>> oracles;
  auto oracle = [&](engine::Precision p) -> const std::vector<double>& {
    auto [at, fresh] = oracles.try_emplace(p, static_cast<std::size_t>(engine::stat_layout(model).size), 0.0);
    if (fresh)
      engine::raise_for(engine::make_cpu_compute(0)->accumulate(model, sample, p, at->second), sample.source(),
                        sample.first_row());
    return at->second;
  };
  (void)oracle(engine::Precision::fp64);

  const Workload w{model, sample, workload};
  std::vector<plan::DeviceCalibration> results;
  // CPU slots of one width and precision are measured once.
  std::map<std::pair<int, engine::Precision>, plan::DeviceCalibration> cpu_slots;
  for (const plan::DeviceSpec& device : resources.devices()) {
    plan::DeviceCalibration r;
    try {
      const engine::Precision p = compute_precision(precision ? precision : device.precision);
      const bool cpu = device.kind == "cpu";
      const std::pair slot{cpu_threads(device), p};
      const auto seen = cpu ? cpu_slots.find(slot) : cpu_slots.end();
      if (seen != cpu_slots.end()) {
        r = seen->second;
        r.device_name = device.name;
      } else {
        r = measure(device, w, p, options.repeats, oracle(p));
        if (cpu) cpu_slots.emplace(slot, r);
      }
    } catch (const Error& e) {
      r = {};
      r.device_name = device.name;
      r.error = e.what();
    }
    if (options.progress) options.progress(r);
    results.push_back(std::move(r));
  }
  plan::Resources calibrated = plan::apply_calibration(resources, results, precision);

  if (options.catalog || !options.catalog_path.empty()) {
    plan::CalibrationRecord record;
    record.model_type = options.model_type.empty() ? default_model_type(model) : options.model_type;
    record.workload = workload;
    record.resources = calibrated;
    record.sample_size = sample.rows();
    record.repeats = static_cast<std::uint64_t>(options.repeats);
    record.precision = precision;
    record.estimator_type = "mixle-em";
    record.row_count = data.rows();
    const plan::ModelSummary summary = engine::summarise(model);
    record.model_bytes = summary.parameter_bytes();
    record.statistic_bytes = summary.statistic_bytes();
    record.timestamp = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
    record.device_results = results;
    append_record(options, std::move(record));
  }

  std::string failed;
  for (const plan::DeviceCalibration& r : results) {
    if (r.success) continue;
    failed += (failed.empty() ? "" : "; ") + r.device_name + ": " + r.error.value_or("failed");
  }
  if (!failed.empty())
    throw ResourceCalibrationError("calibration failed on " + failed, std::move(results), std::move(calibrated));
  return calibrated;
}

plan::Resources calibrate_resources(const Dataset& data, const Model& model, const CalibrateOptions& options) {
  return calibrate_resources(data, model, plan::Resources::discover(), options);
}

}  // namespace mixle
