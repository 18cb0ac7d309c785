// The benchmark library behind `mixle bench` (and, later, `mixle resources --calibrate`, which
// needs rows/s per device): synthetic cases, timed E-step / M-step / EM iteration per device, a
// correctness check against the CPU oracle inside every run, and the metrics defined in
// bench/README.md. Host-only; no CLI or JSON here (see bench_json.hpp).
#pragma once

#include "engine/compute.hpp"
#include "engine/estimator.hpp"
#include "engine/families/family_ops.hpp"

#include <mixle/data.hpp>
#include <mixle/model.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace mixle::engine {
class Compute;
}

namespace mixle::host::bench {

/// What to benchmark: one synthetic problem and how to time it.
struct BenchCase {
  Family family = Family::gaussian_diag;
  std::size_t rows = 200000;    // N
  std::size_t dims = 32;        // D (columns of the data)
  std::size_t components = 64;  // K
  std::size_t categories = 4;   // V, categorical only
  engine::Precision precision = engine::Precision::fp32;
  int threads = 0;  // CPU threads, 0 = OpenMP's default
  int iters = 10;   // timed repetitions per phase
  int warmup = 2;   // untimed whole iterations first
  std::uint64_t seed = 0;
  std::size_t check_rows = 4096;  // rows of the correctness check (the first ones)
  /// Gaussian families' generating means are centre_scale·N(0, 1) per dimension (σ in
  /// [0.5, 1.5]): 4 separates the components (responsibilities one-hot, most pairs prunable),
  /// 0.5 overlaps them (responsibilities dense).
  double centre_scale = engine::kBenchmarkCentreScale;
  engine::Prune prune = engine::Prune::automatic;  // the timed passes' exact pruning (CPU)
};

/// The centre scale of the case every run's accuracy check uses: overlapping components.
inline constexpr double kOverlappingCentreScale = 0.5;

/// Checks the case's values at the door; throws InvalidInput naming the field and the rule.
void validate_case(const BenchCase& c);

/// A case made concrete: the generating model, the model the timed passes evaluate (the
/// generating one perturbed, so responsibilities are not all 0/1) and the data (float32).
struct PreparedCase {
  BenchCase spec;
  Model generating;
  Model evaluated;
  Dataset data;
  double prepare_seconds = 0.0;
};
PreparedCase prepare_case(const BenchCase& c);

/// Timings of one phase over the timed repetitions, seconds (std::chrono::steady_clock).
struct PhaseTimings {
  std::vector<double> samples;
  double min = 0.0, median = 0.0, mean = 0.0, max = 0.0;
};
PhaseTimings summarise(std::vector<double> samples);

/// A rate in units of 1e9 a second (GFLOP/s, GB/s): the one unit every bench figure is
/// reported in, as nccl-tests' and the datasheets' are.
constexpr double giga(double per_second) noexcept { return per_second / 1e9; }

/// The work model of one phase (bench/README.md "Metrics") and the rates derived from its
/// median time.
struct PhaseMetrics {
  double flops = 0.0;          // model flops per repetition
  double bytes = 0.0;          // model bytes moved per repetition
  double rows_per_s = 0.0;     // N / median
  double nkd_per_s = 0.0;      // N·K·D / median
  double gflop_per_s = 0.0;    // flops / median / 1e9
  double gb_per_s = 0.0;       // bytes / median / 1e9
  double peak_fraction = 0.0;  // gflop_per_s / peak.gflop_per_s (0 when the peak is unknown)
};

/// A device's compute peak for the case's precision.
struct Peak {
  double gflop_per_s = 0.0;  // 0 = unknown
  std::string source;        // "measured" (CPU FMA micro-benchmark), "datasheet", "unknown"
  std::string detail;        // how: instruction set and threads, or the datasheet entry
};

/// The in-run correctness check: the device's statistics on the first check_rows rows against
/// the CPU kernels in fp64 (the oracle) on the same rows.
struct CheckResult {
  std::size_t rows = 0;
  double max_rel_error = 0.0;  // ‖device − oracle‖∞ / ‖oracle‖∞ over the statistics buffer
  double bound = 0.0;          // the precision's bound (check_bound)
  bool passed = false;
  std::string message;  // why it failed, empty when passed
};
/// Compares statistics buffers (same size) by the normwise relative error above; fails on a
/// non-finite value in `got` (then max_rel_error is +inf) or an error above `bound`.
CheckResult compare_statistics(const std::vector<double>& got, const std::vector<double>& oracle, double bound);
/// The documented bound on max_rel_error per precision (bench/README.md gives the reasons).
double check_bound(engine::Precision precision) noexcept;
/// The check itself: `compute`'s statistics of the evaluated model on the case's first
/// min(check_rows, rows) rows at the case's precision, against the CPU's in fp64 on those rows.
/// `device` names the device in a message. Throws when a pass reports rows it could not use.
CheckResult check_against_oracle(const PreparedCase& p, engine::Compute& compute, const std::string& device);

/// One device's result.
struct BenchResult {
  std::string device;       // "cpu", "cuda:0", …
  std::string device_name;  // CPU model or GPU name ("unknown" when not found)
  engine::Precision precision = engine::Precision::fp32;
  int threads = 0;  // CPU threads used (0 for GPUs)
  PhaseTimings e_step, m_step, iteration;
  PhaseMetrics e_step_metrics, iteration_metrics;
  Peak peak;
  CheckResult check;
  /// The last timed E-step's (row, component) pairs evaluated and of how many (exact pruning;
  /// equal where every pair was evaluated), and the share of the check rows' responsibilities
  /// under the evaluated model that are exactly 0.
  std::int64_t evaluated_pairs = 0, pairs = 0;
  double zero_responsibility_share = 0.0;
};

/// Work model of one EM iteration of `c` (bench/README.md states the formulas per family).
struct WorkModel {
  double flops = 0.0;
  double bytes = 0.0;
  std::int64_t statistics = 0;  // float64 values in the statistics buffer
};
WorkModel work_model(const BenchCase& c, const Model& model);

/// Runs the case on `device` ("cpu", "cuda", "cuda:i"): warm-up, timed phases, the check,
/// metrics. `cpu_peak` reuses a CPU peak measured earlier in the same process. Throws
/// NotCompiled for CUDA in a CPU-only build, InvalidInput for an unknown device.
BenchResult run_case(const PreparedCase& prepared, const std::string& device,
                     const std::optional<Peak>& cpu_peak = std::nullopt);
/// Convenience: prepare_case then run_case.
BenchResult run_case(const BenchCase& c, const std::string& device);

/// Expands a --device value to device names: "all" = cpu and every CUDA device; "cuda" = cuda:0.
std::vector<std::string> expand_devices(const std::string& device);

// ---- peaks and machine description (peak.cpp) -----------------------------------------------

/// Independent FMA chains per thread of the CPU peak's micro-benchmark: enough to cover 2 FMA
/// ports × 4-cycle latency.
inline constexpr int kFmaChains = 12;
/// One kernel of that micro-benchmark: `run(trips)` issues trips × kFmaChains FMAs a ← a·b + c
/// of `lanes` lanes each (b = 0.999999, c = 1e-6, chain j starting at 1 + j, each rounded to
/// the lanes' type) and returns the sum of every lane of every chain, chain by chain, lane by
/// lane, in double.
struct FmaKernel {
  double (*run)(long trips) = nullptr;
  int lanes = 1;
  bool double_lanes = true;  // lanes of double (else float)
  const char* isa = "scalar";
};
/// The vector instruction sets the FMA kernels use (x86: all false elsewhere).
struct VectorIsa {
  bool avx512f = false;
  bool avx2 = false;
  bool fma = false;  // FMA3: AVX2's kernel needs both (some CPUs have one without the other)
};
/// What this CPU supports.
VectorIsa this_cpu_isa();
/// The kernels a CPU supporting `isa` runs for `precision`, widest instruction set first; the last
/// is always the scalar one (double lanes, also for fp32). Off x86 only the scalar one.
std::vector<FmaKernel> fma_kernels(engine::Precision precision, const VectorIsa& isa);
/// This CPU's kernels; measure_cpu_peak times the first.
std::vector<FmaKernel> fma_kernels(engine::Precision precision);
/// The floating-point operations k.run(trips) performs: two (a multiply and an add) per FMA, one
/// FMA per trip in each lane of each of the kFmaChains chains.
double fma_flops(const FmaKernel& k, long trips) noexcept;
/// One trial's rate, flop/s: every thread's `flops` over the slowest thread's span (`spans`,
/// seconds), so a descheduled thread lowers the figure instead of hiding; 0 when nothing was timed.
double trial_rate(const std::vector<double>& flops, const std::vector<double>& spans);
/// Peak FMA throughput of this CPU measured now: `threads` threads (0 = hardware concurrency)
/// each run independent FMA chains with the widest vector ISA available, for about `seconds`.
Peak measure_cpu_peak(engine::Precision precision, int threads, double seconds = 0.2);
/// Datasheet peak of a CUDA device by name (SIMT fp32/fp64, dense TF32 tensor); "unknown" when
/// the name is not in the table.
Peak datasheet_peak(const std::string& gpu_name, engine::Precision precision);
/// Product name of CUDA device `index` (host::cuda_devices()), or "unknown".
std::string cuda_device_name(int index);
/// "model name" from /proc/cpuinfo, or "unknown".
std::string cpu_model_name();

}  // namespace mixle::host::bench
