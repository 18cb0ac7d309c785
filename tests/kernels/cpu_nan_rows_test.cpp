// Rows with a NaN reaching the CPU kernels directly (the engine refuses NaN data before a pass,
// so only the kernels' own contract is tested here): every pass reports them by row, scores
// them NaN, counts none of them in the header, and leaves every other row's score bit-identical
// to a pass without them — in both precisions, in the first block and past it.
#include "engine/estimator.hpp"
#include "kernels/cpu/cpu_kernels.hpp"
#include "three_components.hpp"

#include <mixle/model.hpp>

#include <gtest/gtest.h>

#include <cmath>
#include <algorithm>
#include <cstring>
#include <limits>
#include <vector>

namespace mixle {
namespace {

using test::three_components;

template <class T>
void check_nan_rows() {
  const auto packed = engine::pack_model<T>(three_components(), 2);
  constexpr std::size_t n = 300;  // two 128-row blocks and a tail
  const std::vector<std::size_t> nan_rows = {5, 131, 299};
  std::vector<double> x(2 * n), clean;
  for (std::size_t i = 0; i < 2 * n; ++i) x[i] = std::sin(0.37 * static_cast<double>(i)) * 4.0;
  for (std::size_t r = 0; r < n; ++r)
    if (std::find(nan_rows.begin(), nan_rows.end(), r) == nan_rows.end())
      clean.insert(clean.end(), {x[2 * r], x[2 * r + 1]});
  for (std::size_t r : nan_rows) x[2 * r + (r % 2)] = std::numeric_limits<double>::quiet_NaN();
  const std::size_t m = clean.size() / 2;
  kernels::cpu::Options o;
  o.threads = 1;

  std::vector<double> loglik(n), clean_loglik(m);
  const kernels::PassReport scored = kernels::cpu::score(packed.view, x.data(), n, 2, loglik.data(), nullptr, o);
  kernels::cpu::score(packed.view, clean.data(), m, 2, clean_loglik.data(), nullptr, o);
  EXPECT_EQ(scored.nan_rows, nan_rows.size());
  EXPECT_EQ(scored.impossible_rows, 0u);
  ASSERT_EQ(scored.num_listed, static_cast<int>(nan_rows.size()));
  for (std::size_t i = 0; i < nan_rows.size(); ++i) EXPECT_EQ(scored.listed[i], static_cast<std::int64_t>(nan_rows[i]));
  for (std::size_t r = 0, c = 0; r < n; ++r) {
    if (std::find(nan_rows.begin(), nan_rows.end(), r) != nan_rows.end()) {
      EXPECT_TRUE(std::isnan(loglik[r])) << "row " << r;
      continue;
    }
    EXPECT_EQ(loglik[r], clean_loglik[c++]) << "row " << r;
  }

  const std::size_t size = static_cast<std::size_t>(packed.view.stat_size);
  std::vector<double> stats(size, 0.0), clean_stats(size, 0.0);
  const kernels::PassReport folded = kernels::cpu::accumulate(packed.view, x.data(), n, 2, stats.data(), o);
  kernels::cpu::accumulate(packed.view, clean.data(), m, 2, clean_stats.data(), o);
  EXPECT_EQ(folded.nan_rows, nan_rows.size());
  ASSERT_EQ(folded.num_listed, static_cast<int>(nan_rows.size()));
  EXPECT_EQ(folded.listed[1], 131);
  // The header counts the other rows only; the component statistics are not defined (a NaN value
  // times a zero responsibility is NaN), which is why the engine refuses a pass that reports NaN
  // rows rather than using its statistics.
  EXPECT_EQ(stats[1], static_cast<double>(m));
  EXPECT_NEAR(stats[0], clean_stats[0], 1e-12 * std::abs(clean_stats[0]));

  std::vector<T> kept(kernels::cpu::log_density_cache_size(n, 3));
  std::vector<double> kept_loglik(n);
  const kernels::PassReport keeping =
      kernels::cpu::score_keeping(packed.view, x.data(), n, 2, kept_loglik.data(), kept.data(), o);
  EXPECT_EQ(keeping.nan_rows, nan_rows.size());
  for (std::size_t r = 0; r < n; ++r)
    EXPECT_TRUE(std::isnan(loglik[r]) ? std::isnan(kept_loglik[r]) : kept_loglik[r] == loglik[r]) << "row " << r;
}

TEST(CpuNanRows, ReportedScoredNanAndFoldedAsAbsentFp64) { check_nan_rows<double>(); }
TEST(CpuNanRows, ReportedScoredNanAndFoldedAsAbsentFp32) { check_nan_rows<float>(); }

// Many 2048-row tiles on several threads: the rows a pass lists are the first eight in row
// order, ascending, whichever thread found them first.
TEST(CpuNanRows, TheListedRowsAreTheFirstInRowOrderOnAnyThreads) {
  const auto packed = engine::pack_model<double>(three_components(), 2);
  constexpr std::size_t n = 40000;
  const std::vector<std::size_t> nan_rows = {39000, 30001, 20500, 10000, 4100, 2100, 2050, 100, 35000, 25000};
  std::vector<double> x(2 * n);
  for (std::size_t i = 0; i < 2 * n; ++i) x[i] = std::sin(0.37 * static_cast<double>(i)) * 4.0;
  for (std::size_t r : nan_rows) x[2 * r] = std::numeric_limits<double>::quiet_NaN();
  std::vector<std::int64_t> first(nan_rows.begin(), nan_rows.end());
  std::sort(first.begin(), first.end());
  first.resize(kernels::PassReport::kMaxListed);
  std::vector<double> loglik(n), stats(static_cast<std::size_t>(packed.view.stat_size));
  for (const int threads : {1, 4}) {
    SCOPED_TRACE(threads);
    kernels::cpu::Options o;
    o.threads = threads;
    for (const kernels::PassReport& report :
         {kernels::cpu::score(packed.view, x.data(), n, 2, loglik.data(), nullptr, o),
          kernels::cpu::accumulate(packed.view, x.data(), n, 2, stats.data(), o)}) {
      EXPECT_EQ(report.nan_rows, nan_rows.size());
      ASSERT_EQ(report.num_listed, kernels::PassReport::kMaxListed);
      EXPECT_EQ(std::vector<std::int64_t>(report.listed, report.listed + report.num_listed), first);
    }
  }
}

}  // namespace
}  // namespace mixle
