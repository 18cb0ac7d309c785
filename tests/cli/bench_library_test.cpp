// The bench library's pieces that the CLI test cannot reach: the statistics comparison (a wrong
// or non-finite result must fail), the timing summary, the work model and the peak sources.
#include "host/bench/bench.hpp"
#include "host/bench/comm_bench.hpp"
#include "host/bench/report.hpp"
#include "host/resources_discovery.hpp"

#include "engine/compute.hpp"

#include <gtest/gtest.h>

#include <mixle/error.hpp>
#include <mixle/data.hpp>
#include <mixle/family.hpp>
#include <mixle/model.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cmath>
#include <limits>
#include <sstream>
#include <utility>

namespace mb = mixle::host::bench;
using mixle::engine::Precision;

TEST(BenchLibrary, CompareStatisticsPassesWithinBoundAndFailsOutside) {
  const std::vector<double> oracle{1000.0, -2.0, 0.0, 500.0};
  EXPECT_TRUE(mb::compare_statistics(oracle, oracle, 1e-10).passed);
  EXPECT_EQ(mb::compare_statistics(oracle, oracle, 1e-10).max_rel_error, 0.0);

  std::vector<double> close = oracle;
  close[1] += 1e-3;  // 1e-3 / 1000 = 1e-6 normwise
  const mb::CheckResult ok = mb::compare_statistics(close, oracle, 1e-4);
  EXPECT_TRUE(ok.passed);
  EXPECT_NEAR(ok.max_rel_error, 1e-6, 1e-12);

  std::vector<double> wrong = oracle;
  wrong[3] = 510.0;  // 10 / 1000 = 1e-2
  const mb::CheckResult bad = mb::compare_statistics(wrong, oracle, 1e-4);
  EXPECT_FALSE(bad.passed);
  EXPECT_NEAR(bad.max_rel_error, 1e-2, 1e-12);
  EXPECT_FALSE(bad.message.empty());
}

TEST(BenchLibrary, CompareStatisticsFailsOnNonFiniteAndSizeMismatch) {
  const std::vector<double> oracle{1.0, 2.0};
  // A NaN drops out of the running maximum of differences, so the error is stated as infinite.
  const mb::CheckResult nan = mb::compare_statistics({1.0, std::nan("")}, oracle, 1.0);
  EXPECT_FALSE(nan.passed);
  EXPECT_EQ(nan.max_rel_error, std::numeric_limits<double>::infinity());
  EXPECT_EQ(nan.message, "non-finite statistics");
  EXPECT_FALSE(mb::compare_statistics({1.0, std::numeric_limits<double>::infinity()}, oracle, 1.0).passed);
  EXPECT_FALSE(mb::compare_statistics({1.0}, oracle, 1.0).passed);
}

// The bounds of bench/README.md's check table, one per precision.
TEST(BenchLibrary, CheckBoundsAreTheDocumentedOnes) {
  EXPECT_EQ(mb::check_bound(Precision::fp64), 1e-10);
  EXPECT_EQ(mb::check_bound(Precision::fp32), 1e-4);
  EXPECT_EQ(mb::check_bound(Precision::tf32), 5e-2);
}

TEST(BenchLibrary, SummariseOrderStatistics) {
  const mb::PhaseTimings odd = mb::summarise({3.0, 1.0, 2.0});
  EXPECT_EQ(odd.min, 1.0);
  EXPECT_EQ(odd.median, 2.0);
  EXPECT_EQ(odd.max, 3.0);
  EXPECT_DOUBLE_EQ(odd.mean, 2.0);
  EXPECT_EQ(odd.samples, (std::vector<double>{3.0, 1.0, 2.0}));  // in the order measured
  EXPECT_EQ(mb::summarise({4.0, 1.0, 2.0, 3.0}).median, 2.5);
}

TEST(BenchLibrary, WorkModelFollowsThePerformanceAnchors) {
  mb::BenchCase c;
  c.rows = 1000;
  c.dims = 8;
  c.components = 4;
  c.iters = 1;
  c.warmup = 0;
  const mb::PreparedCase p = mb::prepare_case(c);
  const mb::WorkModel w = mb::work_model(c, p.evaluated);
  EXPECT_EQ(w.flops, 8.0 * 1000 * 4 * 8);
  EXPECT_EQ(w.statistics, mixle::engine::stat_layout(p.evaluated).size);
  EXPECT_EQ(w.bytes, 4.0 * 1000 * 8 + 8.0 * static_cast<double>(w.statistics));
  EXPECT_EQ(p.data.dtype(), mixle::DType::f32);
  EXPECT_EQ(p.data.rows(), 1000u);

  c.family = mixle::Family::gaussian_full;
  EXPECT_EQ(mb::work_model(c, p.evaluated).flops, 4.0 * 1000 * 4 * 64 + 4.0 * 1000 * 4 * 8);
}

// The seed picks the case: the same seed draws the same model and rows, each other seed others
// (seeds next to each other included — the generator's seed spreads them over 64 bits).
TEST(BenchLibrary, TheSeedPicksTheModelAndTheRows) {
  mb::BenchCase c;
  c.rows = 64;
  c.dims = 2;
  c.components = 3;
  auto drawn = [&](std::uint64_t seed) {
    c.seed = seed;
    const mb::PreparedCase p = mb::prepare_case(c);
    return std::make_pair(mixle::model_to_json(p.generating), p.data.values());
  };
  EXPECT_EQ(drawn(7), drawn(7));
  const auto first = drawn(0);
  for (const std::uint64_t seed : {1ull, 2ull, 1ull << 40}) {
    const auto other = drawn(seed);
    EXPECT_NE(other.first, first.first) << seed;
    EXPECT_NE(other.second, first.second) << seed;
  }
}

// The timed model is the generating one perturbed as bench/README.md says: means moved by
// 0.5 σ·N(0, 1) (so |Δμ|/σ averages 0.5·√(2/π) ≈ 0.40; 1024 draws put the estimate within ±0.03
// at 3 standard errors), variances and rates scaled by U(0.8, 1.25), categorical probabilities
// mixed 20% with uniform.
TEST(BenchLibrary, TheTimedModelIsPerturbedByTheStatedAmounts) {
  mb::BenchCase c;
  c.rows = 10;
  c.dims = 16;
  c.components = 64;
  const mb::PreparedCase diag = mb::prepare_case(c);
  const mixle::Part& g = diag.generating.parts.front();
  const mixle::Part& e = diag.evaluated.parts.front();
  double moved = 0.0;
  for (std::size_t i = 0; i < g.mean.size(); ++i) {
    moved += std::abs(e.mean[i] - g.mean[i]) / std::sqrt(g.var[i]);
    EXPECT_GE(e.var[i] / g.var[i], 0.8 - 1e-12) << i;
    EXPECT_LE(e.var[i] / g.var[i], 1.25 + 1e-12) << i;
  }
  EXPECT_NEAR(moved / static_cast<double>(g.mean.size()), 0.5 * std::sqrt(2.0 / M_PI), 0.03);
  EXPECT_NE(diag.evaluated.weights, diag.generating.weights);
  // Both models' weights are U(0.5, 1.5) draws normalised: their ratios stay within 3, and 64
  // draws spread far enough that the largest is more than twice the smallest.
  for (const std::vector<double>* w : {&diag.generating.weights, &diag.evaluated.weights}) {
    const auto [lo, hi] = std::minmax_element(w->begin(), w->end());
    EXPECT_LE(*hi / *lo, 3.0);
    EXPECT_GT(*hi / *lo, 2.0);
  }

  c.family = mixle::Family::gaussian_full;
  c.dims = 4;
  c.components = 256;
  const mb::PreparedCase full = mb::prepare_case(c);
  const mixle::Part& gf = full.generating.parts.front();
  const mixle::Part& ef = full.evaluated.parts.front();
  moved = 0.0;
  for (std::size_t k = 0; k < c.components; ++k) {
    const double f = ef.cov[k * 16] / gf.cov[k * 16];  // one factor per component
    EXPECT_GE(f, 0.8 - 1e-12);
    EXPECT_LE(f, 1.25 + 1e-12);
    for (std::size_t i = 0; i < 16; ++i)
      EXPECT_NEAR(ef.cov[k * 16 + i], f * gf.cov[k * 16 + i], 1e-12 * std::abs(gf.cov[k * 16 + i]) + 1e-300);
    for (std::size_t d = 0; d < 4; ++d)
      moved += std::abs(ef.mean[k * 4 + d] - gf.mean[k * 4 + d]) / std::sqrt(gf.cov[k * 16 + d * 5]);
  }
  EXPECT_NEAR(moved / 1024.0, 0.5 * std::sqrt(2.0 / M_PI), 0.03);

  c.family = mixle::Family::categorical;
  c.dims = 1;
  c.components = 8;
  c.categories = 5;
  const mb::PreparedCase cat = mb::prepare_case(c);
  const std::vector<double>& gq = cat.generating.parts.front().prob;
  const std::vector<double>& eq = cat.evaluated.parts.front().prob;
  ASSERT_EQ(gq.size(), eq.size());
  for (std::size_t i = 0; i < gq.size(); ++i) EXPECT_NEAR(eq[i], 0.8 * gq[i] + 0.2 / 5.0, 1e-15) << i;
}

/// A world of one whose sum reductions of more than 64 elements come back with the last one
/// wrong: what a broken transport (a short copy, an offset error) looks like to the benchmark.
class ShortSumCommunicator final : public mixle::comms::Communicator {
 public:
  ShortSumCommunicator() : Communicator(0, 1, std::chrono::seconds(10)) {}
  std::string_view type() const noexcept override { return "short-sum"; }
  std::string calls;  // 'b' barrier, 's' sum, 'm' max, in order
  mixle::comms::MemorySpace memory_space() const noexcept override { return mixle::comms::MemorySpace::host; }

 protected:
  std::unique_ptr<Communicator> split_impl(const SplitGroup&) override { return nullptr; }
  void all_reduce_impl(void* data, std::size_t count, mixle::comms::DataType type, mixle::comms::ReduceOp op,
                       mixle::comms::MemorySpace) override {
    calls += op == mixle::comms::ReduceOp::sum ? 's' : op == mixle::comms::ReduceOp::max ? 'm' : '?';
    if (op == mixle::comms::ReduceOp::sum && type == mixle::comms::DataType::float64 && count > 64)
      static_cast<double*>(data)[count - 1] = 0.0;
  }
  void broadcast_impl(void*, std::size_t, int, mixle::comms::MemorySpace) override {}
  void all_gather_impl(const void*, std::size_t, void*, mixle::comms::MemorySpace) override {}
  void barrier_impl() override { calls += 'b'; }
};

TEST(BenchLibrary, CommBenchFlagsAReductionThatReturnsWrongBytes) {
  ShortSumCommunicator comm;
  const std::vector<mb::CommBenchRow> rows = mb::run_comm_bench(comm, 8, 8 << 10, 2, 1);
  ASSERT_EQ(rows.size(), 6u);  // 8 B … 8 KiB in ×4 steps: 1 … 1024 elements
  for (const mb::CommBenchRow& r : rows) {
    EXPECT_EQ(r.correct, r.count <= 64) << r.count << " elements";
    // nccl-tests' algbw: bytes per rank over seconds, in GB of 1e9 bytes (0 when nothing timed).
    EXPECT_DOUBLE_EQ(r.algbw_gbs, r.seconds > 0 ? static_cast<double>(r.bytes) / r.seconds / 1e9 : 0.0) << r.bytes;
    EXPECT_GT(r.algbw_gbs, 0.0) << r.bytes;
  }
  // With no timed repetition a row says 0 s and 0 GB/s, not a rate over zero seconds.
  ShortSumCommunicator untimed_comm;
  const std::vector<mb::CommBenchRow> untimed = mb::run_comm_bench(untimed_comm, 8, 8, 0, 0);
  ASSERT_EQ(untimed.size(), 1u);
  EXPECT_EQ(untimed[0].seconds, 0.0);
  EXPECT_EQ(untimed[0].algbw_gbs, 0.0);
  EXPECT_EQ(untimed[0].busbw_gbs, 0.0);
  const std::string table = mb::format_comm_table(comm, rows);
  EXPECT_NE(table.find("WRONG"), std::string::npos) << table;
  EXPECT_NE(table.find(" ok"), std::string::npos) << table;
  // Each timed reduction (1 warm-up, 2 timed per size) starts at a barrier, so the ranks start
  // it together; then the slowest rank's median and the check are agreed on (two maxima).
  std::string per_size = "bsbsbsmm", all;
  for (int i = 0; i < 6; ++i) all += per_size;
  EXPECT_EQ(comm.calls, all);
  // The table's columns: bytes, count, time in µs, algbw and busbw in GB/s, the check.
  const mb::CommBenchRow row{
      .bytes = 1024, .count = 128, .seconds = 2.5e-6, .algbw_gbs = 0.4096, .busbw_gbs = 0.7, .correct = true};
  const std::string one = mb::format_comm_table(comm, {row});
  std::istringstream line(one.substr(one.find('\n', one.find("check")) + 1));
  std::size_t bytes = 0, count = 0;
  double micros = 0, algbw = 0, busbw = 0;
  std::string check;
  line >> bytes >> count >> micros >> algbw >> busbw >> check;
  EXPECT_EQ(bytes, 1024u);
  EXPECT_EQ(count, 128u);
  EXPECT_DOUBLE_EQ(micros, 2.5);
  EXPECT_DOUBLE_EQ(algbw, 0.41);
  EXPECT_DOUBLE_EQ(busbw, 0.7);
  EXPECT_EQ(check, "ok");
}

TEST(BenchLibrary, FailedChecksAreCounted) {
  std::vector<mb::BenchResult> results(3);
  for (auto& r : results) r.check.passed = true;
  EXPECT_EQ(mb::failed_checks_line(results), "");
  results[1].check.passed = false;
  EXPECT_EQ(mb::failed_checks_line(results), "1 device check FAILED (see the table)");
  results[2].check.passed = false;
  EXPECT_EQ(mb::failed_checks_line(results), "2 device checks FAILED (see the table)");
  // `mixle bench` ends with that line on stderr and exit status 1, or with nothing and 0.
  auto reported = [](const std::vector<mb::BenchResult>& r, int& status) {
    std::FILE* err = std::tmpfile();
    status = mb::report_failed_checks(r, err);
    std::rewind(err);
    std::string text(256, '\0');
    text.resize(std::fread(text.data(), 1, text.size(), err));
    std::fclose(err);
    return text;
  };
  int status = -1;
  EXPECT_EQ(reported(results, status), "mixle: bench: 2 device checks FAILED (see the table)\n");
  EXPECT_EQ(status, 1);
  for (auto& r : results) r.check.passed = true;
  EXPECT_EQ(reported(results, status), "");
  EXPECT_EQ(status, 0);
}

// The CPU peak is measured over about the time asked for (three trials of a third each).
TEST(BenchLibrary, PeakMeasurementTakesTheTimeAsked) {
  constexpr double kSeconds = 0.3;
  const auto t0 = std::chrono::steady_clock::now();
  (void)mb::measure_cpu_peak(Precision::fp64, 1, kSeconds);
  EXPECT_GE(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), kSeconds);
}

// Every FMA kernel of the peak measurement — the scalar one too, which the peak uses only on a
// CPU without AVX2 — computes the recurrence it states: its sum equals the same recurrence
// iterated one lane at a time with std::fma in the lanes' type, and its lanes fill its registers.
/// `fmas` counts the FMAs the lanes perform (each lane runs its chain's).
template <typename T>
double fma_recurrence(int lanes, long trips, double& fmas) {
  double sum = 0.0;
  fmas = 0.0;
  for (int j = 0; j < mb::kFmaChains; ++j) {
    T a = static_cast<T>(2 + j);  // chains start off the fixed point 1, so each one counts
    for (long i = 0; i < trips; ++i) {
      a = std::fma(a, static_cast<T>(0.999999), static_cast<T>(1e-6));
      fmas += lanes;
    }
    for (int l = 0; l < lanes; ++l) sum += static_cast<double>(a);
  }
  return sum;
}

TEST(BenchLibrary, EveryFmaKernelComputesItsRecurrence) {
  for (const Precision precision : {Precision::fp32, Precision::fp64}) {
    const std::vector<mb::FmaKernel> kernels = mb::fma_kernels(precision);
    ASSERT_FALSE(kernels.empty());
    EXPECT_STREQ(kernels.back().isa, "scalar");
    for (const mb::FmaKernel& k : kernels) {
      SCOPED_TRACE(k.isa);
      const std::string isa = k.isa;
      const int bits = isa == "avx512f" ? 512 : isa == "avx2+fma" ? 256 : 64;
      EXPECT_EQ(k.lanes * (k.double_lanes ? 64 : 32), bits);
      EXPECT_EQ(k.double_lanes, precision == Precision::fp64 || isa == "scalar");
      for (const long trips : {0L, 1L, 3000L}) {
        double fmas = 0.0;
        const double want =
            k.double_lanes ? fma_recurrence<double>(k.lanes, trips, fmas) : fma_recurrence<float>(k.lanes, trips, fmas);
        EXPECT_EQ(k.run(trips), want) << trips << " trips";
        EXPECT_EQ(mb::fma_flops(k, trips), 2.0 * fmas) << "the peak counts two flops per FMA";
      }
    }
  }
}

// Each kernel is chosen only where the CPU has every instruction set it uses: AVX2's needs FMA3
// too (a CPU with one and not the other runs the next one down). Only chosen, not run here.
TEST(BenchLibrary, AKernelIsChosenOnlyWhereTheCpuHasAllItUses) {
  const auto isas = [](const mb::VectorIsa& isa) {
    std::vector<std::string> names;
    for (const mb::FmaKernel& k : mb::fma_kernels(Precision::fp32, isa)) names.push_back(k.isa);
    return names;
  };
  using Names = std::vector<std::string>;
  EXPECT_EQ(isas({}), Names{"scalar"});
#if defined(__x86_64__) || defined(__i386__)
  EXPECT_EQ(isas({.avx2 = true}), Names{"scalar"});
  EXPECT_EQ(isas({.fma = true}), Names{"scalar"});
  EXPECT_EQ(isas({.avx2 = true, .fma = true}), (Names{"avx2+fma", "scalar"}));
  EXPECT_EQ(isas({.avx512f = true}), (Names{"avx512f", "scalar"}));
  EXPECT_EQ(isas({.avx512f = true, .avx2 = true, .fma = true}), (Names{"avx512f", "avx2+fma", "scalar"}));
  // This CPU's list is the one for what it reports.
  const mb::VectorIsa here = mb::this_cpu_isa();
  std::vector<std::string> mine;
  for (const mb::FmaKernel& k : mb::fma_kernels(Precision::fp64)) mine.push_back(k.isa);
  EXPECT_EQ(mine, isas(here));
  EXPECT_EQ(here.avx2, static_cast<bool>(__builtin_cpu_supports("avx2")));
  EXPECT_EQ(here.fma, static_cast<bool>(__builtin_cpu_supports("fma")));
  EXPECT_EQ(here.avx512f, static_cast<bool>(__builtin_cpu_supports("avx512f")));
#else
  EXPECT_EQ(isas({.avx512f = true, .avx2 = true, .fma = true}), Names{"scalar"});
#endif
}

// A trial's rate: every thread's flops over the slowest thread's span, wherever it lies.
TEST(BenchLibrary, ATrialsRateIsEveryThreadsFlopsOverTheSlowestSpan) {
  EXPECT_EQ(mb::trial_rate({1e9, 2e9}, {0.5, 0.25}), 6e9);
  EXPECT_EQ(mb::trial_rate({1e9, 2e9}, {0.25, 0.5}), 6e9);
  EXPECT_EQ(mb::trial_rate({3e9}, {0.0}), 0.0);  // nothing timed
  EXPECT_EQ(mb::trial_rate({}, {}), 0.0);
}

TEST(BenchLibrary, MachineInfoNamesThisCpu) {
  const mb::MachineInfo m = mb::machine_info();
  EXPECT_EQ(m.cpu_model, mb::cpu_model_name());
  EXPECT_GE(m.logical_cpus, 1);
  EXPECT_GT(m.memory_bytes, 0);
}

// A GPU's name is its runtime product name; an index no device has (none in a CPU-only build)
// is "unknown", at either end.
TEST(BenchLibrary, AGpusNameIsItsProductOrUnknown) {
  const std::vector<mixle::host::CudaDeviceInfo> devices = mixle::host::cuda_devices();
  const int count = static_cast<int>(devices.size());
  for (int i = 0; i < count; ++i) EXPECT_EQ(mb::cuda_device_name(i), devices[static_cast<std::size_t>(i)].product);
  for (const int i : {-1, count, count + 1}) EXPECT_EQ(mb::cuda_device_name(i), "unknown") << "index " << i;
}

TEST(BenchLibrary, PeakSourcesAreStated) {
  const mb::Peak h200 = mb::datasheet_peak("NVIDIA H200", Precision::fp32);
  EXPECT_EQ(h200.source, "datasheet");
  EXPECT_EQ(h200.gflop_per_s, 67000.0);
  EXPECT_EQ(mb::datasheet_peak("NVIDIA H100 PCIe", Precision::fp64).gflop_per_s, 25600.0);
  const mb::Peak unknown = mb::datasheet_peak("Some Future GPU", Precision::fp32);
  EXPECT_EQ(unknown.source, "unknown");
  EXPECT_EQ(unknown.gflop_per_s, 0.0);
  // The report says which device had no entry, so the user can tell a misnamed device from a new one.
  EXPECT_EQ(unknown.detail, "no datasheet entry for \"Some Future GPU\"");

  // The measurement takes the time it is given, split between its trials: each trial runs
  // until its share has passed (wall clock), so the whole is at least the time asked and, a
  // last chunk of FMAs aside, not much more — never a multiple of it.
  const auto t0 = std::chrono::steady_clock::now();
  const mb::Peak cpu = mb::measure_cpu_peak(Precision::fp32, 1, 0.3);
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_GE(took, 0.3);
  EXPECT_LT(took, 1.2) << "the trials took more than the 0.3 s asked";
  EXPECT_EQ(cpu.source, "measured");
  EXPECT_GT(cpu.gflop_per_s, 0.0);
  // The detail says how it was measured: precision, threads (in the singular for one), trials.
  EXPECT_EQ(cpu.detail.rfind("fp32 FMA micro-benchmark, ", 0), 0u) << cpu.detail;
  EXPECT_NE(cpu.detail.find(", 1 thread, best of 3"), std::string::npos) << cpu.detail;
  const mb::Peak two = mb::measure_cpu_peak(Precision::fp64, 2, 0.03);
  EXPECT_EQ(two.detail.rfind("fp64 FMA micro-benchmark, ", 0), 0u) << two.detail;
  EXPECT_NE(two.detail.find(", 2 threads, best of 3"), std::string::npos) << two.detail;
}

// Every GPU the datasheet table knows, in every precision (NVIDIA's dense figures, TFLOP/s:
// SIMT fp32, SIMT fp64, TF32 tensor), named in the peak's detail.
TEST(BenchLibrary, EveryDatasheetPeakIsTheVendorsFigure) {
  struct Sheet {
    const char* device;
    const char* label;
    double fp32, fp64, tf32;
  };
  for (const Sheet& g :
       {Sheet{"NVIDIA H200", "H200 SXM", 67.0, 34.0, 494.7}, Sheet{"NVIDIA H100 PCIe", "H100 PCIe", 51.2, 25.6, 378.0},
        Sheet{"NVIDIA H100 80GB HBM3", "H100 SXM", 67.0, 34.0, 494.7},
        Sheet{"NVIDIA A100-SXM4-80GB", "A100", 19.5, 9.7, 156.0}, Sheet{"NVIDIA L40S", "L40S", 91.6, 1.4, 183.0}}) {
    for (const auto& [precision, tflops] :
         {std::pair{Precision::fp32, g.fp32}, std::pair{Precision::fp64, g.fp64}, std::pair{Precision::tf32, g.tf32}}) {
      const mb::Peak p = mb::datasheet_peak(g.device, precision);
      EXPECT_EQ(p.gflop_per_s, tflops * 1e3) << g.device << " " << mixle::precision_name(precision);
      EXPECT_NE(p.detail.find(g.label), std::string::npos) << p.detail;
    }
  }
}

TEST(BenchLibrary, RunCaseOnCpuReturnsCheckedResult) {
  mb::BenchCase c;
  c.family = mixle::Family::poisson;
  c.rows = 3000;
  c.dims = 3;
  c.components = 2;
  c.iters = 2;
  c.warmup = 0;
  c.threads = 1;
  const mb::BenchResult r = mb::run_case(c, "cpu");
  EXPECT_EQ(r.device, "cpu");
  EXPECT_TRUE(r.check.passed) << r.check.message;
  EXPECT_EQ(r.check.rows, 3000u);
  EXPECT_EQ(r.iteration.samples.size(), 2u);
  EXPECT_GT(r.iteration_metrics.rows_per_s, 0.0);
}

// Each metric is the work model over the phase's median time, the peak fraction is over the
// peak handed in, each phase is timed iters times, and the check covers the first check_rows
// rows (fewer than the case's here). A categorical case, so the per-category term counts too.
TEST(BenchLibrary, RunCaseMetricsFollowFromTheMedianAndTheWorkModel) {
  const mb::BenchCase c{.family = mixle::Family::categorical,
                        .rows = 2000,
                        .dims = 2,
                        .components = 3,
                        .categories = 5,
                        .threads = 1,
                        .iters = 3,
                        .warmup = 1,
                        .check_rows = 700};
  const mb::PreparedCase p = mb::prepare_case(c);
  const mb::Peak peak{.gflop_per_s = 123.0, .source = "measured", .detail = "given"};
  const mb::BenchResult r = mb::run_case(p, "cpu", peak);
  EXPECT_EQ(r.threads, 1);
  EXPECT_EQ(r.peak.detail, "given");
  EXPECT_EQ(r.check.rows, 700u);
  EXPECT_EQ(r.check.bound, mb::check_bound(c.precision));
  EXPECT_GT(r.check.max_rel_error, 0.0) << "fp32 against the fp64 oracle differs in rounding";
  EXPECT_LE(r.check.max_rel_error, r.check.bound);
  EXPECT_TRUE(r.check.passed) << r.check.message;
  for (const mb::PhaseTimings* t : {&r.e_step, &r.m_step, &r.iteration}) EXPECT_EQ(t->samples.size(), 3u);

  const mb::WorkModel w = mb::work_model(c, p.evaluated);
  const mixle::SizeRule& f = mixle::family_descriptor(c.family).flops;
  EXPECT_EQ(w.flops, 2000.0 * 3 *
                         (static_cast<double>(f.per_component) + static_cast<double>(f.per_column) * 2 +
                          static_cast<double>(f.per_column_pair) * 4 + static_cast<double>(f.per_category) * 2 * 5));
  for (const auto& [t, m] : {std::pair{&r.e_step, &r.e_step_metrics}, std::pair{&r.iteration, &r.iteration_metrics}}) {
    ASSERT_GT(t->median, 0.0);
    EXPECT_EQ(m->flops, w.flops);
    EXPECT_EQ(m->bytes, w.bytes);
    EXPECT_DOUBLE_EQ(m->rows_per_s, 2000.0 / t->median);
    EXPECT_DOUBLE_EQ(m->nkd_per_s, 2000.0 * 3 * 2 / t->median);
    EXPECT_DOUBLE_EQ(m->gflop_per_s, w.flops / t->median / 1e9);
    EXPECT_DOUBLE_EQ(m->gb_per_s, w.bytes / t->median / 1e9);
    EXPECT_DOUBLE_EQ(m->peak_fraction, m->gflop_per_s / 123.0);
  }
}

/// The CPU kernels, recording the rows each accumulate is handed.
class RecordingCompute : public mixle::engine::Compute {
 public:
  std::vector<std::pair<std::size_t, std::size_t>> accumulated;  // (first row, rows)

  std::string name() const override { return "recording"; }
  mixle::kernels::PassReport accumulate(const mixle::Model& model, const mixle::Dataset& rows, Precision precision,
                                        std::vector<double>& stats) override {
    accumulated.emplace_back(rows.first_row(), rows.rows());
    return cpu_->accumulate(model, rows, precision, stats);
  }
  mixle::kernels::PassReport score(const mixle::Model& model, const mixle::Dataset& rows, Precision precision,
                                   double* loglik, double* resp) override {
    return cpu_->score(model, rows, precision, loglik, resp);
  }
  void accumulate_given(const mixle::Model& model, const mixle::Dataset& rows, const double* resp,
                        std::vector<double>& stats) override {
    cpu_->accumulate_given(model, rows, resp, stats);
  }

 private:
  std::unique_ptr<mixle::engine::Compute> cpu_ = mixle::engine::make_cpu_compute(1);
};

// The in-run check hands the device the case's first check_rows rows (all of them when the case
// has fewer), the rows the oracle sums.
TEST(BenchLibrary, TheCheckCoversTheFirstCheckRows) {
  for (const std::size_t check_rows : {std::size_t{30}, std::size_t{500}}) {
    const mb::BenchCase c{
        .family = mixle::Family::gaussian_diag, .rows = 200, .dims = 2, .components = 2, .check_rows = check_rows};
    const mb::PreparedCase p = mb::prepare_case(c);
    RecordingCompute device;
    const mb::CheckResult check = mb::check_against_oracle(p, device, "recording");
    const std::size_t expected = std::min<std::size_t>(check_rows, 200);
    ASSERT_EQ(device.accumulated.size(), 1u);
    EXPECT_EQ(device.accumulated[0].first, p.data.first_row());
    EXPECT_EQ(device.accumulated[0].second, expected);
    EXPECT_EQ(check.rows, expected);
    EXPECT_TRUE(check.passed) << check.message;
  }
}

// The table shows each timed phase's times and, for the phases with a work model, its rates and
// peak fraction; n/a where the peak is unknown.
TEST(BenchLibrary, TheTableShowsEachPhasesTimesAndRates) {
  const mb::BenchCase c{.family = mixle::Family::gaussian_diag, .rows = 100, .dims = 2, .components = 2, .threads = 1};
  const mb::PreparedCase p = mb::prepare_case(c);
  mb::BenchResult r;
  r.device = "cpu";
  r.device_name = "a test CPU";
  r.e_step = {.min = 0.001, .median = 0.002, .mean = 0.003};
  r.m_step = {.min = 0.004, .median = 0.005, .mean = 0.006};
  r.iteration = {.min = 0.007, .median = 0.008, .mean = 0.009};
  r.e_step_metrics = {
      .rows_per_s = 1250, .nkd_per_s = 6.5e6, .gflop_per_s = 12.25, .gb_per_s = 3.5, .peak_fraction = 0.25};
  r.iteration_metrics = {
      .rows_per_s = 750, .nkd_per_s = 4e6, .gflop_per_s = 8.5, .gb_per_s = 2, .peak_fraction = 0.125};
  r.peak = {.gflop_per_s = 49.0, .source = "measured", .detail = "given"};
  auto line_of = [](const std::string& table, const std::string& phase) {
    const auto at = table.find(" " + phase + " ");
    return at == std::string::npos ? std::string() : table.substr(at, table.find('\n', at) - at);
  };
  auto words = [](const std::string& line) {
    std::istringstream in(line);
    std::vector<std::string> w;
    for (std::string x; in >> x;) w.push_back(x);
    return w;
  };
  const std::string table = mb::format_table(p, {r});
  using W = std::vector<std::string>;
  EXPECT_EQ(words(line_of(table, "e_step")), (W{"e_step", "1", "2", "3", "1250", "6.5e+06", "12.25", "3.50", "25.0%"}))
      << table;
  EXPECT_EQ(words(line_of(table, "m_step")), (W{"m_step", "4", "5", "6", "-", "-", "-", "-", "-"})) << table;
  EXPECT_EQ(words(line_of(table, "iteration")),
            (W{"iteration", "7", "8", "9", "750", "4e+06", "8.50", "2.00", "12.5%"}))
      << table;
  // Then, after a line of its own, each device's name, peak and check against the oracle.
  r.check = {.rows = 64, .max_rel_error = 2.5e-13, .bound = 1e-9, .passed = true, .message = ""};
  const std::string with_check = mb::format_table(p, {r});
  EXPECT_EQ(with_check.substr(with_check.find('\n', with_check.find(" iteration ")) + 1),
            "#\n"
            "# cpu: a test CPU; peak 49.0 GFLOP/s (measured: given)\n"
            "# cpu check: statistics of 64 rows of the overlapping case (means 0.5·N(0,1)) vs the CPU fp64 oracle: max "
            "rel error 2.5e-13, bound 1e-09: passed\n");
  r.check = {.rows = 64, .max_rel_error = 0.5, .bound = 1e-9, .passed = false, .message = "above the bound"};
  const std::string failed = mb::format_table(p, {r});
  EXPECT_NE(failed.find("max rel error 0.5, bound 1e-09: FAILED — above the bound\n"), std::string::npos) << failed;
  r.peak.gflop_per_s = 0.0;
  EXPECT_EQ(words(line_of(mb::format_table(p, {r}), "e_step")).back(), "n/a");
}

// A pass that meets rows it cannot use is not timed: here every component gives code 2 of a
// categorical column probability 0, so the rows holding it are impossible, and run_case names
// them by their index in the case's data.
TEST(BenchLibrary, ACaseWithImpossibleRowsIsRefusedNamingThem) {
  const mb::BenchCase c{.family = mixle::Family::categorical,
                        .rows = 300,
                        .dims = 1,
                        .components = 2,
                        .categories = 3,
                        .threads = 1,
                        .iters = 1,
                        .warmup = 0};
  mb::PreparedCase p = mb::prepare_case(c);
  std::vector<double>& prob = p.evaluated.parts.front().prob;  // K × V
  for (std::size_t k = 0; k < 2; ++k) {
    prob[k * 3 + 0] = prob[k * 3 + 1] = 0.5;
    prob[k * 3 + 2] = 0.0;
  }
  std::vector<std::size_t> coded_2;
  for (std::size_t r = 0; r < c.rows; ++r)
    if (p.data.at(r, 0) == 2.0) coded_2.push_back(r);
  ASSERT_FALSE(coded_2.empty());
  try {
    (void)mb::run_case(p, "cpu");
    ADD_FAILURE() << "a pass with impossible rows was timed";
  } catch (const mixle::ImpossibleEvidence& e) {
    EXPECT_NE(std::string(e.what()).find("benchmark pass on cpu: " + std::to_string(coded_2.size()) + " row(s)"),
              std::string::npos)
        << e.what();
    ASSERT_FALSE(e.rows().empty());
    EXPECT_EQ(e.rows().front(), coded_2.front());
  }
}

TEST(BenchLibrary, AllDevicesStartWithTheCpu) {
  const auto devices = mb::expand_devices("all");
  ASSERT_FALSE(devices.empty());
  EXPECT_EQ(devices.front(), "cpu");
  EXPECT_EQ(devices.size(), 1u + static_cast<std::size_t>(mixle::engine::cuda_device_count()));
  EXPECT_EQ(mb::expand_devices("cuda"), (std::vector<std::string>{"cuda:0"}));
}

// A case is checked before any data is drawn: each bad field is named.
TEST(BenchLibrary, BadCasesAreRefusedBeforeAnyWork) {
  auto refused = [](auto change, const std::string& words) {
    mb::BenchCase c;
    c.rows = 100;
    c.dims = 2;
    c.components = 2;
    change(c);
    try {
      (void)mb::prepare_case(c);
      ADD_FAILURE() << "accepted: " << words;
    } catch (const mixle::InvalidInput& e) {
      EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what();
    }
  };
  refused([](mb::BenchCase& c) { c.rows = 0; }, "--rows 0");
  refused([](mb::BenchCase& c) { c.check_rows = 0; }, "check rows must be ≥ 1");
  refused([](mb::BenchCase& c) { c.iters = 0; }, "--iters 0");
  refused([](mb::BenchCase& c) { c.dims = 0; }, "--dims 0");
  refused([](mb::BenchCase& c) { c.components = 0; }, "--components 0");
  refused([](mb::BenchCase& c) { c.warmup = -1; }, "--warmup -1: must be ≥ 0");
  refused([](mb::BenchCase& c) { c.threads = -2; }, "--threads -2: must be ≥ 0 (0 = all)");
  refused(
      [](mb::BenchCase& c) {
        c.family = mixle::Family::categorical;
        c.categories = 1;
      },
      "--categories 1: categorical needs ≥ 2");
  // 10^9 rows of 9 float32 columns are 36·10^9 bytes = 33.53 GiB, past the 32 GiB allowed:
  // refused by validate_case, before prepare_case would try to draw them, in the unit it allows.
  mb::BenchCase huge;
  huge.rows = 1'000'000'000;
  huge.dims = 9;
  try {
    mb::validate_case(huge);
    ADD_FAILURE() << "a 36 GB case was accepted";
  } catch (const mixle::InvalidInput& e) {
    EXPECT_NE(std::string(e.what()).find("at most 32 GiB"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("needs 33.527"), std::string::npos) << e.what();
  }
  huge.dims = 8;  // 32 GB: under 32 GiB
  EXPECT_NO_THROW(mb::validate_case(huge));
  huge.rows = std::size_t{1} << 30;  // 2^30 rows × 8 float32 columns: exactly 32 GiB, the most allowed
  EXPECT_NO_THROW(mb::validate_case(huge));
  ++huge.rows;
  EXPECT_THROW(mb::validate_case(huge), mixle::InvalidInput);
  mb::BenchCase one;
  one.rows = 100;
  one.dims = 2;
  one.components = 2;
  one.check_rows = 1;  // the smallest check
  EXPECT_EQ(mb::prepare_case(one).spec.check_rows, 1u);
  one.family = mixle::Family::categorical;
  one.categories = 2;  // the fewest categories worth a benchmark
  EXPECT_EQ(mb::prepare_case(one).evaluated.parts.front().categories, 2u);
}
