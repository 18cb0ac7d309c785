// Timing one case on one device: warm-up, timed E-step / M-step / EM iteration, the in-run
// check against the CPU oracle, and the metrics of bench/README.md.
#include "host/bench/bench.hpp"

#include "engine/compute.hpp"
#include "engine/report.hpp"

#include <mixle/error.hpp>
#include <mixle/family.hpp>

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <numeric>

namespace mixle::host::bench {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// Throws when a pass saw rows it could not use (the synthetic case is then broken): the timings
// of such a pass mean nothing.
void require_clean(const kernels::PassReport& report, const std::string& device) {
  engine::raise_for(report, "benchmark pass on " + device, 0);
}

PhaseMetrics metrics_of(const PhaseTimings& t, const WorkModel& w, const BenchCase& c, const Peak& peak) {
  PhaseMetrics m;
  m.flops = w.flops;
  m.bytes = w.bytes;
  if (t.median <= 0.0) return m;
  const double N = static_cast<double>(c.rows);
  m.rows_per_s = N / t.median;
  m.nkd_per_s = N * static_cast<double>(c.components) * static_cast<double>(c.dims) / t.median;
  m.gflop_per_s = giga(w.flops / t.median);
  m.gb_per_s = giga(w.bytes / t.median);
  m.peak_fraction = peak.gflop_per_s > 0.0 ? m.gflop_per_s / peak.gflop_per_s : 0.0;
  return m;
}

/// The share of the check rows' responsibilities under the evaluated model that are exactly 0.
double zero_share(const PreparedCase& p, engine::Compute& compute) {
  const Dataset rows = p.data.slice(0, std::min(p.spec.check_rows, p.spec.rows));
  std::vector<double> resp(rows.rows() * p.evaluated.components());
  require_clean(compute.score(p.evaluated, rows, p.spec.precision, nullptr, resp.data()), compute.name());
  const auto zeros = std::count(resp.begin(), resp.end(), 0.0);
  return resp.empty() ? 0.0 : static_cast<double>(zeros) / static_cast<double>(resp.size());
}

}  // namespace

CheckResult check_against_oracle(const PreparedCase& p, engine::Compute& compute, const std::string& device) {
  const BenchCase& c = p.spec;
  CheckResult check;
  check.rows = std::min(c.check_rows, c.rows);
  check.bound = check_bound(c.precision);
  const Dataset rows = p.data.slice(0, check.rows);
  const std::size_t S = static_cast<std::size_t>(engine::stat_layout(p.evaluated).size);

  std::vector<double> oracle(S, 0.0), got(S, 0.0);
  auto cpu = engine::make_cpu_compute(c.threads);
  require_clean(cpu->accumulate(p.evaluated, rows, engine::Precision::fp64, oracle), "cpu (oracle)");
  require_clean(compute.accumulate(p.evaluated, rows, c.precision, got), device);

  const CheckResult compared = compare_statistics(got, oracle, check.bound);
  check.max_rel_error = compared.max_rel_error;
  check.passed = compared.passed;
  if (!compared.passed) check.message = compared.message + " (" + engine::precision_name(c.precision) + ")";
  return check;
}

CheckResult compare_statistics(const std::vector<double>& got, const std::vector<double>& oracle, double bound) {
  CheckResult check;
  check.bound = bound;
  if (got.size() != oracle.size()) {
    check.max_rel_error = std::numeric_limits<double>::infinity();
    check.message = "statistics sizes differ: " + std::to_string(got.size()) + " vs " + std::to_string(oracle.size());
    return check;
  }
  // Normwise (∞-norm) relative error: entries such as shifted first moments are near zero by
  // construction, so an element-wise relative error would be noise over noise.
  double norm = 0.0, diff = 0.0;
  bool finite = true;
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (!std::isfinite(got[i])) finite = false;
    norm = std::max(norm, std::abs(oracle[i]));
    diff = std::max(diff, std::abs(got[i] - oracle[i]));
  }
  check.max_rel_error = norm > 0.0 ? diff / norm : diff;
  check.passed = finite && check.max_rel_error <= bound;
  if (!finite) {
    check.max_rel_error = std::numeric_limits<double>::infinity();
    check.message = "non-finite statistics";
  } else if (!check.passed) {
    check.message =
        "max relative error " + std::to_string(check.max_rel_error) + " exceeds the bound " + std::to_string(bound);
  }
  return check;
}

double check_bound(engine::Precision precision) noexcept {
  switch (precision) {
    // Same accumulation order class as the oracle, only reduction order may differ.
    case engine::Precision::fp64: return 1e-10;
    // fp32 log-densities (relative error ~ε·|ℓ|, ε = 6e-8, |ℓ| ≲ 1e2) and fp32 sums inside
    // 128-row blocks (~128·ε): a few 1e-6; ten times that leaves room for the shift rounding.
    case engine::Precision::fp32: return 1e-4;
    // TF32 operands keep 10 mantissa bits (ε ≈ 4.9e-4): log-density errors of ~1e-2 absolute
    // move responsibilities of ambiguous rows by about that much. An estimate: confirm on a GPU.
    case engine::Precision::tf32: return 5e-2;
  }
  return 0.0;
}

PhaseTimings summarise(std::vector<double> samples) {
  PhaseTimings t;
  t.samples = samples;
  if (samples.empty()) return t;
  std::sort(samples.begin(), samples.end());
  const std::size_t n = samples.size();
  t.min = samples.front();
  t.max = samples.back();
  t.median = n % 2 ? samples[n / 2] : 0.5 * (samples[n / 2 - 1] + samples[n / 2]);
  t.mean = std::accumulate(samples.begin(), samples.end(), 0.0) / static_cast<double>(n);
  return t;
}

WorkModel work_model(const BenchCase& c, const Model& model) {
  const double N = static_cast<double>(c.rows), K = static_cast<double>(c.components);
  WorkModel w;
  // The family's work model per (row, component): e.g. gaussian_diag's E 4D + M 4D.
  const SizeRule& flops = family_descriptor(c.family).flops;
  w.flops =
      N * K *
      static_cast<double>(flops.count(static_cast<std::int64_t>(c.dims), static_cast<std::int64_t>(c.categories)));
  w.statistics = engine::stat_layout(model).size;
  // Data read once per E-step (float32) plus the float64 statistics written once.
  w.bytes = 4.0 * N * static_cast<double>(model.columns()) + 8.0 * static_cast<double>(w.statistics);
  return w;
}

std::vector<std::string> expand_devices(const std::string& device) {
  if (device == "all") {
    std::vector<std::string> out{"cpu"};
    for (int i = 0; i < engine::cuda_device_count(); ++i) out.push_back("cuda:" + std::to_string(i));
    return out;
  }
  if (device == "cuda") return {"cuda:0"};
  return {device};
}

BenchResult run_case(const PreparedCase& p, const std::string& device, const std::optional<Peak>& cpu_peak) {
  const BenchCase& c = p.spec;
  auto compute = engine::make_compute(device, c.threads, c.prune);  // NotCompiled / InvalidInput here
  const bool is_cpu = compute->name() == "cpu";                     // "auto" runs on the CPU without a GPU

  BenchResult r;
  r.device = compute->name();
  r.precision = c.precision;
  r.threads = is_cpu ? (c.threads > 0 ? c.threads : omp_get_max_threads()) : 0;
  r.device_name = is_cpu ? cpu_model_name() : cuda_device_name(*engine::cuda_index(r.device));

  const engine::EstimatorOptions options{.m_step = {}, .precision = c.precision};
  const std::size_t S = static_cast<std::size_t>(engine::stat_layout(p.evaluated).size);
  std::vector<double> stats(S, 0.0);

  // Every repetition evaluates the same model, so each does identical work; the M-step's
  // output is discarded (an EM run would carry it to the next iteration).
  kernels::PassReport last;
  auto e_step = [&] {
    std::fill(stats.begin(), stats.end(), 0.0);
    last = compute->accumulate(p.evaluated, p.data, c.precision, stats);
    require_clean(last, r.device);
  };
  auto m_step = [&] {
    const engine::MStepResult next =
        engine::m_step(p.evaluated, stats, engine::shift_table(p.evaluated, c.precision), options);
    if (next.model.weights.size() != p.evaluated.weights.size())
      throw Error("m_step returned " + std::to_string(next.model.weights.size()) + " components");
  };
  auto time_phase = [&](auto&& body) {
    std::vector<double> samples;
    for (int i = 0; i < c.iters; ++i) {
      const auto t0 = Clock::now();
      body();
      samples.push_back(seconds_since(t0));
    }
    return summarise(std::move(samples));
  };

  // Warm-up: first-touch pages, GPU upload/residency, caches, OpenMP thread pool.
  for (int i = 0; i < c.warmup; ++i) {
    e_step();
    m_step();
  }
  r.e_step = time_phase(e_step);
  r.m_step = time_phase(m_step);
  r.iteration = time_phase([&] {
    e_step();
    m_step();
  });

  r.evaluated_pairs = last.evaluated_pairs;
  r.pairs = last.pairs;
  r.zero_responsibility_share = zero_share(p, *compute);
  // The check runs where responsibilities are not 0/1 (the means overlapping), whatever the
  // timed case: on separated data it could not see an E-step's mistakes.
  BenchCase overlapping = c;
  overlapping.rows = std::min(c.check_rows, c.rows);
  overlapping.centre_scale = kOverlappingCentreScale;
  r.check = check_against_oracle(prepare_case(overlapping), *compute, r.device);

  if (is_cpu) {
    r.peak = cpu_peak ? *cpu_peak : measure_cpu_peak(c.precision, r.threads);
  } else {
    r.peak = datasheet_peak(r.device_name, c.precision);
  }
  const WorkModel w = work_model(c, p.evaluated);
  r.e_step_metrics = metrics_of(r.e_step, w, c, r.peak);
  r.iteration_metrics = metrics_of(r.iteration, w, c, r.peak);
  return r;
}

BenchResult run_case(const BenchCase& c, const std::string& device) { return run_case(prepare_case(c), device); }

}  // namespace mixle::host::bench
