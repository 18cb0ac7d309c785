// The bench library's pieces that the CLI test cannot reach: the statistics comparison (a wrong
// or non-finite result must fail), the timing summary, the work model and the peak sources.
#include "host/bench/bench.hpp"
#include "host/bench/calibration.hpp"

#include "engine/compute.hpp"

#include <gtest/gtest.h>

#include <mixle/error.hpp>

#include <cmath>
#include <limits>

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
  EXPECT_FALSE(mb::compare_statistics({1.0, std::nan("")}, oracle, 1.0).passed);
  EXPECT_FALSE(mb::compare_statistics({1.0, std::numeric_limits<double>::infinity()}, oracle, 1.0).passed);
  EXPECT_FALSE(mb::compare_statistics({1.0}, oracle, 1.0).passed);
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

TEST(BenchLibrary, PeakSourcesAreStated) {
  const mb::Peak h200 = mb::datasheet_peak("NVIDIA H200", Precision::fp32);
  EXPECT_EQ(h200.source, "datasheet");
  EXPECT_EQ(h200.gflop_per_s, 67000.0);
  EXPECT_EQ(mb::datasheet_peak("NVIDIA H100 PCIe", Precision::fp64).gflop_per_s, 25600.0);
  const mb::Peak unknown = mb::datasheet_peak("Some Future GPU", Precision::fp32);
  EXPECT_EQ(unknown.source, "unknown");
  EXPECT_EQ(unknown.gflop_per_s, 0.0);

  const mb::Peak cpu = mb::measure_cpu_peak(Precision::fp32, 1, 0.03);
  EXPECT_EQ(cpu.source, "measured");
  EXPECT_GT(cpu.gflop_per_s, 0.0);
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

TEST(BenchLibrary, AllDevicesStartWithTheCpu) {
  const auto devices = mb::expand_devices("all");
  ASSERT_FALSE(devices.empty());
  EXPECT_EQ(devices.front(), "cpu");
  EXPECT_EQ(devices.size(), 1u + static_cast<std::size_t>(mixle::engine::cuda_device_count()));
  EXPECT_EQ(mb::expand_devices("cuda"), (std::vector<std::string>{"cuda:0"}));
}

TEST(BenchLibrary, ResultBecomesACalibrationEntry) {
  mb::BenchResult r;
  r.e_step = mb::summarise({0.5, 0.25, 1.0});
  r.iteration = mb::summarise({2.0, 1.0, 4.0});
  r.check.passed = true;
  const mixle::plan::DeviceCalibration em = mb::to_calibration(r, 1000, "cuda:1", "em");
  EXPECT_EQ(em.device_name, "cuda:1");
  EXPECT_TRUE(em.success);
  ASSERT_TRUE(em.throughput.has_value());
  EXPECT_DOUBLE_EQ(*em.throughput, 1000.0 / 2.0);
  EXPECT_DOUBLE_EQ(*mb::to_calibration(r, 1000, "cpu:0", "accumulate").throughput, 1000.0 / 0.5);
  EXPECT_THROW(mb::to_calibration(r, 1000, "cpu:0", "score"), mixle::InvalidInput);

  r.check.passed = false;
  r.check.message = "max relative error 0.1 exceeds the bound 0.0001";
  const mixle::plan::DeviceCalibration bad = mb::to_calibration(r, 1000, "cpu:0", "em");
  EXPECT_FALSE(bad.success);
  EXPECT_FALSE(bad.throughput.has_value());
  ASSERT_TRUE(bad.error.has_value());
  EXPECT_NE(bad.error->find("check failed"), std::string::npos);
}
