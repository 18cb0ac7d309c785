// Adapter from bench results to the planning layer's calibration records (plan/calibration).
#pragma once

#include "host/bench/bench.hpp"

#include <mixle/plan/calibration.hpp>

#include <cstdint>
#include <string>
#include <string_view>

namespace mixle::host::bench {

/// `result` as the calibration of Resources device `device_spec_name` ("cpu:0", "cuda:1"):
/// the timings of the workload's phase ("estep" → e_step, "em" → iteration; plan::workload_name
/// spellings), throughput = rows / median of those timings; success only when the run's check
/// passed (else `error` says why). Throws InvalidInput for workload "score" (not timed here).
plan::DeviceCalibration to_calibration(const BenchResult& result, std::uint64_t rows,
                                       const std::string& device_spec_name, std::string_view workload);

}  // namespace mixle::host::bench
