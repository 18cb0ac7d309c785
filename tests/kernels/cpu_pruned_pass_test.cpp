// Exact pruning (kernels/cpu/prune.hpp, docs/numerics.md §8): an accumulate pass that evaluates
// only the pairs its bound cannot prove zero gives the dense pass's statistics bit for bit — on
// separated data (where it must prune most pairs), on overlapping data (where it may prune
// nothing), with pairs placed right at the flush threshold, with stale or nonsense anchors, with
// NaN and infinite rows, weights and threads.
#include "engine/estimator.hpp"
#include "kernels/cpu/cpu_kernels.hpp"

#include <mixle/model.hpp>

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

namespace mixle {
namespace {

/// The bench's recipe at a smaller size: K components over D columns, means centre·N(0, 1) per
/// dimension, σ in [0.5, 1.5], weights from [1, 2]; and rows drawn from it.
struct Mixture {
  Model model;
  std::vector<double> x;
  std::size_t rows = 0;
  int cols = 0;
};

Mixture mixture(int K, int D, std::size_t rows, double centre, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal;
  std::uniform_real_distribution<double> sd(0.5, 1.5), weight(1.0, 2.0);
  Mixture m;
  m.rows = rows;
  m.cols = D;
  Part g;
  g.family = Family::gaussian_diag;
  g.col_begin = 0;
  g.col_end = D;
  double total = 0.0;
  for (int k = 0; k < K; ++k) {
    m.model.weights.push_back(weight(rng));
    total += m.model.weights.back();
    for (int d = 0; d < D; ++d) {
      g.mean.push_back(centre * normal(rng));
      const double s = sd(rng);
      g.var.push_back(s * s);
    }
  }
  for (double& w : m.model.weights) w /= total;
  m.model.parts = {g};
  std::uniform_int_distribution<int> pick(0, K - 1);
  m.x.resize(rows * static_cast<std::size_t>(D));
  for (std::size_t i = 0; i < rows; ++i) {
    const int k = pick(rng);
    for (int d = 0; d < D; ++d) {
      const std::size_t at = static_cast<std::size_t>(k) * D + d;
      m.x[i * D + d] = g.mean[at] + std::sqrt(g.var[at]) * normal(rng);
    }
  }
  // The model a fit would hold mid-way: every parameter a little off the truth.
  for (double& v : m.model.parts[0].mean) v += 0.05 * normal(rng);
  for (double& v : m.model.parts[0].var) v *= 1.0 + 0.1 * sd(rng);
  return m;
}

struct Pass {
  std::vector<double> stats;
  kernels::PassReport report;
};

template <class T, class X>
Pass accumulate(const Model& model, const X* x, std::size_t rows, int cols, std::int32_t* anchors, bool prune,
                int threads = 1, const double* weights = nullptr) {
  const auto packed = engine::pack_model<T>(model, static_cast<std::size_t>(cols));
  kernels::cpu::Options o;
  o.threads = threads;
  o.weights = weights;
  o.anchors = anchors;
  o.prune = prune;
  o.prune_every_block = true;  // the pruned path wherever valid: its bits are under test here
  Pass p;
  p.stats.assign(static_cast<std::size_t>(packed.view.stat_size), 0.0);
  p.report = kernels::cpu::accumulate(packed.view, x, rows, static_cast<std::size_t>(cols), p.stats.data(), o);
  return p;
}

bool same_bits(const std::vector<double>& a, const std::vector<double>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(double)) == 0;
}

/// The dense pass, then a pruned pass with anchors from a first (dense) pass over the rows:
/// equal bits, and the second pass's share of evaluated pairs returned.
template <class T, class X>
double pruned_share(const Model& model, const std::vector<X>& x, std::size_t rows, int cols, int threads = 1,
                    const double* weights = nullptr) {
  const Pass dense = accumulate<T>(model, x.data(), rows, cols, nullptr, false, threads, weights);
  std::vector<std::int32_t> anchors(rows, -1);
  const Pass first = accumulate<T>(model, x.data(), rows, cols, anchors.data(), true, threads, weights);
  EXPECT_TRUE(same_bits(dense.stats, first.stats)) << "the first pass, without anchors";
  EXPECT_EQ(first.report.evaluated_pairs, first.report.pairs);
  const Pass pruned = accumulate<T>(model, x.data(), rows, cols, anchors.data(), true, threads, weights);
  EXPECT_TRUE(same_bits(dense.stats, pruned.stats)) << "the pruned pass";
  EXPECT_EQ(pruned.report.pairs, static_cast<std::int64_t>(rows) * model.components());
  EXPECT_EQ(pruned.report.nan_rows, dense.report.nan_rows);
  EXPECT_EQ(pruned.report.impossible_rows, dense.report.impossible_rows);
  return static_cast<double>(pruned.report.evaluated_pairs) / static_cast<double>(pruned.report.pairs);
}

TEST(CpuPrunedPass, SeparatedDataSameBitsAndMostPairsPrunedFp32) {
  const Mixture m = mixture(32, 16, 3000, 4.0, 1);
  // 32 components, under 2.6 evaluated a row (1.7 measured; the single-ρ test alone leaves 4 or more)
  EXPECT_LT(pruned_share<float>(m.model, m.x, m.rows, m.cols), 0.08);
  std::vector<float> x32(m.x.begin(), m.x.end());
  EXPECT_LT((pruned_share<float>(m.model, x32, m.rows, m.cols)), 0.08);
}

TEST(CpuPrunedPass, SeparatedDataSameBitsAndMostPairsPrunedFp64) {
  const Mixture m = mixture(32, 16, 3000, 4.0, 2);
  EXPECT_LT(pruned_share<double>(m.model, m.x, m.rows, m.cols), 0.08);
}

// More components than an anchor's list holds: a row past the list's reach evaluates every pair,
// the others prune through it.
TEST(CpuPrunedPass, MoreComponentsThanTheListHolds) {
  const Mixture m = mixture(600, 12, 1500, 6.0, 3);
  EXPECT_LT(pruned_share<float>(m.model, m.x, m.rows, m.cols), 0.05);  // 0.9 % measured
  EXPECT_LT(pruned_share<double>(m.model, m.x, m.rows, m.cols), 0.05);
}

// Overlapping components: every responsibility is non-zero, so nothing may be pruned.
TEST(CpuPrunedPass, OverlappingDataPrunesNothing) {
  const Mixture m = mixture(8, 4, 2000, 0.1, 4);
  EXPECT_EQ(pruned_share<float>(m.model, m.x, m.rows, m.cols), 1.0);
  EXPECT_EQ(pruned_share<double>(m.model, m.x, m.rows, m.cols), 1.0);
  const Mixture half = mixture(16, 8, 2000, 0.5, 5);  // the bench's overlapping recipe
  pruned_share<float>(half.model, half.x, half.rows, half.cols);
  pruned_share<double>(half.model, half.x, half.rows, half.cols);
}

TEST(CpuPrunedPass, WeightsAndThreadsKeepTheBits) {
  const Mixture m = mixture(24, 12, 9000, 4.0, 6);  // several tiles
  std::vector<double> w(m.rows);
  for (std::size_t i = 0; i < m.rows; ++i) w[i] = 0.25 * static_cast<double>(i % 7);
  EXPECT_LT(pruned_share<float>(m.model, m.x, m.rows, m.cols, 2, w.data()), 0.2);  // 0.13 measured
  EXPECT_LT(pruned_share<double>(m.model, m.x, m.rows, m.cols, 2), 0.2);
}

// Anchors steer the speed only: out of range, negative or wrong, the bits are the same.
TEST(CpuPrunedPass, AnyAnchorsGiveTheSameBits) {
  const Mixture m = mixture(20, 6, 1500, 4.0, 7);
  const Pass dense = accumulate<float>(m.model, m.x.data(), m.rows, m.cols, nullptr, false);
  std::mt19937 rng(9);
  std::uniform_int_distribution<int> any(-3, 25);
  std::vector<std::int32_t> anchors(m.rows);
  for (auto& a : anchors) a = any(rng);
  const Pass pruned = accumulate<float>(m.model, m.x.data(), m.rows, m.cols, anchors.data(), true);
  EXPECT_TRUE(same_bits(dense.stats, pruned.stats));
  std::vector<std::int32_t> wrong(m.rows, 0);  // every row anchored at component 0, in range
  const Pass anchored = accumulate<float>(m.model, m.x.data(), m.rows, m.cols, wrong.data(), true);
  EXPECT_TRUE(same_bits(dense.stats, anchored.stats));
  EXPECT_LT(anchored.report.evaluated_pairs, anchored.report.pairs);
}

// NaN and infinite rows: their blocks take the dense pass, and report as it does.
TEST(CpuPrunedPass, NonFiniteRowsReportedAsByTheDensePass) {
  Mixture m = mixture(10, 5, 1000, 4.0, 8);
  m.x[130 * 5 + 2] = std::numeric_limits<double>::quiet_NaN();
  m.x[700 * 5 + 0] = std::numeric_limits<double>::infinity();
  pruned_share<float>(m.model, m.x, m.rows, m.cols);
  pruned_share<double>(m.model, m.x, m.rows, m.cols);
  const Pass dense = accumulate<float>(m.model, m.x.data(), m.rows, m.cols, nullptr, false);
  EXPECT_EQ(dense.report.nan_rows, 1);
  EXPECT_EQ(dense.report.impossible_rows, 1);
}

// Two equal components 20 apart (whitened) and rows on the segment between them, where the
// triangle inequality is tight: at fraction a, l₁ − l₀ = ½·400·(2a − 1), −40 at a = 0.4, and the
// rows step across it, so some keep a responsibility of ≈ e⁻⁴⁰ for the far component and others
// have it flushed to +0. Pruning must keep the first and prune some of the others. The means
// differ in the first `apart` of D dimensions; in the others they are equal and the rows lie `off`
// from them.
template <class T>
void across_the_threshold(int D, int apart, double step, double off) {
  const double c = std::sqrt(400.0 / apart);  // ‖Δ‖ = 20
  Model model;
  model.weights = {0.5, 0.5};
  Part g;
  g.family = Family::gaussian_diag;
  g.col_begin = 0;
  g.col_end = D;
  g.mean.assign(2 * static_cast<std::size_t>(D), 0.0);
  for (int d = 0; d < apart; ++d) g.mean[static_cast<std::size_t>(D + d)] = c;
  g.var.assign(2 * static_cast<std::size_t>(D), 1.0);
  model.parts = {g};
  constexpr std::size_t rows = 4096;
  std::vector<double> x(rows * static_cast<std::size_t>(D));
  for (std::size_t i = 0; i < rows; ++i) {
    const double a = 0.4 + (static_cast<double>(i) - rows / 2.0) * step;
    for (int d = 0; d < D; ++d) x[i * D + d] = d < apart ? c * a : off;
  }
  const auto packed = engine::pack_model<T>(model, static_cast<std::size_t>(D));
  std::vector<double> resp(rows * 2);
  kernels::cpu::score(packed.view, x.data(), rows, static_cast<std::size_t>(D), nullptr, resp.data(),
                      kernels::cpu::Options{});
  int kept = 0, flushed = 0;
  for (std::size_t i = 0; i < rows; ++i) (resp[i * 2 + 1] > 0.0 ? kept : flushed) += 1;
  ASSERT_GT(kept, 0) << "no row keeps the far component: the case misses the threshold";
  ASSERT_GT(flushed, 0) << "every row keeps the far component: the case misses the threshold";
  const double share = pruned_share<T>(model, x, rows, D);
  EXPECT_LT(share, 1.0) << "nothing pruned";
  EXPECT_GE(share * 2 * rows, static_cast<double>(rows + kept)) << "a pair with r > 0 was pruned";
}

// 20 dimensions in blocks of 5 (every term of a block's distance counts), the last 5 with equal
// means and the rows 0.1 off them (a block whose Δ − ρs is negative, which the bound cannot use:
// ½·5·0.1² = 0.025 nats of slack); the rows step 4·10⁻⁵ nats over ±0.08 nats.
template <class T>
void at_the_threshold() {
  across_the_threshold<T>(20, 15, 1e-7, 0.1);
}

// 4 dimensions, all on the segment: the bound is tight up to its rounding margins, and the rows
// step 8·10⁻⁷ nats, so a margin taken too thin (the flush gap's 2⁻¹⁶, the log-density's γ)
// prunes rows whose r is ≈ e⁻⁴⁰, not 0.
template <class T>
void tight_at_the_threshold() {
  across_the_threshold<T>(4, 4, 1e-9, 0.0);
}

TEST(CpuPrunedPass, PairsAtTheFlushThresholdFp32) { at_the_threshold<float>(); }
TEST(CpuPrunedPass, PairsTightAtTheFlushThresholdFp32) { tight_at_the_threshold<float>(); }
TEST(CpuPrunedPass, PairsTightAtTheFlushThresholdFp64) { tight_at_the_threshold<double>(); }
TEST(CpuPrunedPass, PairsAtTheFlushThresholdFp64) { at_the_threshold<double>(); }

// Two gaussian_diag parts: the bound sums over both parts' dimension blocks.
TEST(CpuPrunedPass, TwoDiagPartsPruneOnTheirSummedBound) {
  Mixture m = mixture(16, 10, 2000, 4.0, 10);
  Part& a = m.model.parts[0];
  Part b = a;
  a.col_end = 4;
  b.col_begin = 4;
  std::vector<double> am, av, bm, bv;
  for (int k = 0; k < 16; ++k)
    for (int d = 0; d < 10; ++d) {
      (d < 4 ? am : bm).push_back(a.mean[static_cast<std::size_t>(k) * 10 + d]);
      (d < 4 ? av : bv).push_back(a.var[static_cast<std::size_t>(k) * 10 + d]);
    }
  a.mean = am;
  a.var = av;
  b.mean = bm;
  b.var = bv;
  m.model.parts.push_back(b);
  EXPECT_LT(pruned_share<float>(m.model, m.x, m.rows, m.cols), 0.25);  // 0.18 measured
  EXPECT_LT(pruned_share<double>(m.model, m.x, m.rows, m.cols), 0.25);
}

// A component of weight 0 (log weight −inf) is pruned everywhere, as the dense pass flushes it.
TEST(CpuPrunedPass, WeightZeroComponentsAreFlushedAlike) {
  Mixture m = mixture(12, 6, 1500, 4.0, 11);
  m.model.weights[3] = 0.0;
  pruned_share<float>(m.model, m.x, m.rows, m.cols);
  pruned_share<double>(m.model, m.x, m.rows, m.cols);
}

}  // namespace
}  // namespace mixle
