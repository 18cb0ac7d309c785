// Calibration records: measured throughput per device (rows/s) and a catalog of past runs.
// The measuring itself belongs to `mixle bench`; these types carry and store its results.
#pragma once

#include <mixle/plan/resources.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace mixle::plan {

/// One device's calibration result.
struct DeviceCalibration {
  std::string device_name;
  bool success = false;
  std::vector<double> elapsed_seconds;  ///< one timing per repeat, each finite > 0
  std::optional<double> throughput;     ///< rows/s = sample rows / median(elapsed)
  std::optional<std::string> error;

  /// InvalidInput: blank name; timings not finite > 0; success without timings or a finite
  /// throughput > 0, or with an error; failure without an error.
  void validate() const;
  bool operator==(const DeviceCalibration&) const = default;
};

/// rows / median(elapsed_seconds) (elapsed floored at 1e-12 s); InvalidInput when empty.
double throughput_from_timings(std::uint64_t rows, const std::vector<double>& elapsed_seconds);

/// Resources with each successfully calibrated device's throughput replaced (and precision,
/// when given); failed or absent devices keep their spec.
Resources apply_calibration(const Resources& resources, const std::vector<DeviceCalibration>& results,
                            std::optional<std::string> precision = {});

/// One calibration run.
struct CalibrationRecord {
  std::string model_type;
  std::string workload;                           ///< "score", "estep" or "em" (lowercased; "accumulate" → "estep")
  Resources resources = Resources::single_cpu();  ///< with calibrated throughput
  std::uint64_t sample_size = 0;
  std::uint64_t repeats = 0;
  std::optional<std::string> precision;  ///< canonical
  std::string estimator_type = "none";   ///< non-blank; "none" as when a catalog omits it
  std::uint64_t row_count = 0;
  std::uint64_t model_bytes = 0;
  std::uint64_t statistic_bytes = 0;
  double timestamp = 0;  ///< seconds since the epoch
  std::vector<DeviceCalibration> device_results;

  /// One successful result per device of `resources`.
  bool fully_successful() const;
  void validate() const;
  bool operator==(const CalibrationRecord&) const = default;
};

/// Canonical workload name; InvalidInput listing score, estep, em.
std::string workload_name(std::string_view workload);

/// An append-only list of records, stored as JSON {"format":"mixle-calibration","version":1,
/// "records":[…]}.
class CalibrationCatalog {
 public:
  void append(CalibrationRecord record);
  const std::vector<CalibrationRecord>& records() const noexcept { return records_; }
  /// The newest record (largest timestamp; the later appended on ties) for this model type,
  /// workload and precision (canonicalised; none matches records without one), or nullptr.
  const CalibrationRecord* latest(std::string_view model_type, std::string_view workload,
                                  std::optional<std::string> precision = {}) const;
  /// latest()'s resources when it is fully successful.
  std::optional<Resources> resources_for(std::string_view model_type, std::string_view workload,
                                         std::optional<std::string> precision = {}) const;
  std::string to_json(int indent = -1) const;
  static CalibrationCatalog from_json(std::string_view text);
  /// Atomic write (temporary file in the same folder, then rename).
  void save(const std::string& path) const;
  static CalibrationCatalog load(const std::string& path);
  bool operator==(const CalibrationCatalog&) const = default;

 private:
  std::vector<CalibrationRecord> records_;
};

}  // namespace mixle::plan
