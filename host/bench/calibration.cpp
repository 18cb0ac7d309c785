// A bench result as a planning-layer calibration entry: what `mixle resources --calibrate`
// records per device. Kept here so the calibrate command only discovers devices, runs run_case on
// each and stores the entries.
#include "host/bench/calibration.hpp"

#include <mixle/error.hpp>

namespace mixle::host::bench {

plan::DeviceCalibration to_calibration(const BenchResult& result, std::uint64_t rows,
                                       const std::string& device_spec_name, std::string_view workload) {
  const std::string w = plan::workload_name(workload);
  if (w == "score") throw InvalidInput("calibration workload \"score\": mixle bench times estep and em only");
  const PhaseTimings& phase = w == "estep" ? result.e_step : result.iteration;
  plan::DeviceCalibration out;
  out.device_name = device_spec_name;
  out.elapsed_seconds = phase.samples;
  // A device whose statistics are wrong must not steer the planner, however fast it is.
  out.success = result.check.passed && !phase.samples.empty();
  if (out.success) {
    out.throughput = plan::throughput_from_timings(rows, phase.samples);
  } else {
    out.error = result.check.message.empty() ? "no timings" : "check failed: " + result.check.message;
  }
  out.validate();
  return out;
}

}  // namespace mixle::host::bench
