// Reporting benchmark results: the readable table (one row per device and phase, after
// nccl-tests) and the versioned JSON document defined in bench/README.md.
#pragma once

#include "host/bench/bench.hpp"

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace mixle::host::bench {

/// Version of the JSON document; bump on any change of a documented field's name or meaning.
constexpr int kSchemaVersion = 1;

/// The machine the benchmark ran on (Linux: /proc/cpuinfo, /proc/meminfo, uname).
struct MachineInfo {
  std::string cpu_model;
  int logical_cpus = 0;
  std::int64_t memory_bytes = 0;
  std::string os;
};
MachineInfo machine_info();

/// The table printed on stdout: a header describing the case, one row per device × phase,
/// then one line per device with its peak and its check.
std::string format_table(const PreparedCase& prepared, const std::vector<BenchResult>& results);

/// "N device check(s) FAILED (see the table)" when any result's check failed, else "".
std::string failed_checks_line(const std::vector<BenchResult>& results);
/// What `mixle bench` ends with: the failed-checks line on `err` ("mixle: bench: …") and exit
/// status 1 when a device check failed; nothing and 0 otherwise.
int report_failed_checks(const std::vector<BenchResult>& results, std::FILE* err);

/// The JSON document {"format":"mixle-bench","schema_version":1,…}, indented.
std::string format_json(const PreparedCase& prepared, const std::vector<BenchResult>& results);

}  // namespace mixle::host::bench
