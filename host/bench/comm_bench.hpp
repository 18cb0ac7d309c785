// `mixle bench --comm`: all-reduce latency and bandwidth across the ranks of this job, by
// message size, with nccl-tests' definitions (doc/PERFORMANCE.md there):
//   algbw = S / t              (S bytes per rank, t seconds per all-reduce)
//   busbw = algbw · 2(n − 1)/n (what each link carries in a ring all-reduce of n ranks)
// Each run checks its result: rank r contributes r + 1 in every element, so every element of
// the sum must equal n(n + 1)/2 exactly.
#pragma once

#include "comms/communicator.hpp"

#include <cstddef>
#include <string>
#include <vector>

namespace mixle::host::bench {

struct CommBenchRow {
  std::size_t bytes = 0;   // per rank
  std::size_t count = 0;   // float64 elements
  double seconds = 0.0;    // median over the timed repetitions (max over ranks)
  double algbw_gbs = 0.0;  // GB/s (1e9 bytes)
  double busbw_gbs = 0.0;
  bool correct = true;
};

/// Runs warm-up + `iters` all-reduces for each size from `min_bytes` to `max_bytes` (×4 steps).
std::vector<CommBenchRow> run_comm_bench(comms::Communicator& comm, std::size_t min_bytes, std::size_t max_bytes,
                                         int iters, int warmup);

/// nccl-tests-style table and a versioned JSON document ({"format":"mixle-comm-bench",…}).
std::string format_comm_table(const comms::Communicator& comm, const std::vector<CommBenchRow>& rows);
std::string format_comm_json(const comms::Communicator& comm, const std::vector<CommBenchRow>& rows);

}  // namespace mixle::host::bench
