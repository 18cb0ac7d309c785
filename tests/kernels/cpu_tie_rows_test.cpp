// Rows at +inf log-density under several components (a data value at the edge of a family's
// support, e.g. x = −inf under an exponential): the CPU pass shares such a row equally among the
// components at +inf and reports log-likelihood +inf — for every such row, wherever it lies
// among finite rows of its block. (No fit reaches this through validated input; the kernels'
// contract still holds it, and the CUDA normalisation follows the same rule.)
#include "engine/estimator.hpp"
#include "kernels/cpu/cpu_kernels.hpp"

#include <mixle/model.hpp>

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

namespace mixle {
namespace {

template <class T>
void check_ties() {
  Model m;
  m.weights = {0.3, 0.7};
  Part e;
  e.family = Family::exponential;
  e.col_begin = 0;
  e.col_end = 1;
  e.rate = {0.5, 2.0};
  m.parts = {e};
  const auto packed = engine::pack_model<T>(m, 1);
  constexpr double kInf = std::numeric_limits<double>::infinity();
  // +inf rows first, between finite rows, and last.
  const std::vector<double> x = {-kInf, 1.0, -kInf, 2.0, 0.5, -kInf, -kInf, 3.0, -kInf};
  const std::size_t n = x.size();
  std::vector<double> loglik(n), resp(2 * n);
  kernels::cpu::Options o;
  o.threads = 1;
  kernels::cpu::score(packed.view, x.data(), n, 1, loglik.data(), resp.data(), o);
  for (std::size_t i = 0; i < n; ++i) {
    SCOPED_TRACE(i);
    if (std::isinf(x[i])) {
      EXPECT_EQ(loglik[i], kInf);
      EXPECT_EQ(resp[2 * i], 0.5);
      EXPECT_EQ(resp[2 * i + 1], 0.5);
    } else {
      // The ordinary rows keep the ordinary rule: finite, responsibilities summing to 1.
      const double a = std::log(0.3 * 0.5) - 0.5 * x[i], b = std::log(0.7 * 2.0) - 2.0 * x[i];
      const double want = std::max(a, b) + std::log(std::exp(a - std::max(a, b)) + std::exp(b - std::max(a, b)));
      EXPECT_NEAR(loglik[i], want, 1e-5 * std::abs(want) + 1e-5);
      EXPECT_NEAR(resp[2 * i] + resp[2 * i + 1], 1.0, 1e-6);
    }
  }
}

TEST(CpuPassTies, PlusInfinityRowsAreSharedAmongTheirComponentsFp64) { check_ties<double>(); }
TEST(CpuPassTies, PlusInfinityRowsAreSharedAmongTheirComponentsFp32) { check_ties<float>(); }

// Only the components at +inf share a row: under a gamma part, x = 0 is +inf for shapes below 1
// and −inf above. A block whose only +inf row is its first, then one with it among finite rows.
template <class T>
void check_partial_ties() {
  Model m;
  m.weights = {0.2, 0.5, 0.3};
  Part g;
  g.family = Family::gamma;
  g.col_begin = 0;
  g.col_end = 1;
  g.shape = {0.5, 3.0, 0.7};
  g.rate = {1.0, 2.0, 1.5};
  m.parts = {g};
  const auto packed = engine::pack_model<T>(m, 1);
  kernels::cpu::Options o;
  o.threads = 1;
  for (const std::vector<double>& x : {std::vector<double>{0.0}, std::vector<double>{1.0, 0.0, 2.0}}) {
    SCOPED_TRACE(x.size());
    const std::size_t n = x.size(), K = 3;
    std::vector<double> loglik(n), resp(K * n);
    kernels::cpu::score(packed.view, x.data(), n, 1, loglik.data(), resp.data(), o);
    for (std::size_t i = 0; i < n; ++i) {
      if (x[i] != 0.0) {
        EXPECT_TRUE(std::isfinite(loglik[i])) << i;
        continue;
      }
      EXPECT_EQ(loglik[i], std::numeric_limits<double>::infinity()) << i;
      EXPECT_EQ(resp[K * i], 0.5) << i;
      EXPECT_EQ(resp[K * i + 1], 0.0) << i;
      EXPECT_EQ(resp[K * i + 2], 0.5) << i;
    }
  }
}

TEST(CpuPassTies, OnlyTheComponentsAtPlusInfinityShareTheRowFp64) { check_partial_ties<double>(); }
TEST(CpuPassTies, OnlyTheComponentsAtPlusInfinityShareTheRowFp32) { check_partial_ties<float>(); }

// A weighted pass: a weight-0 row at +inf adds nothing to the log-likelihood or the total weight
// (not 0 · inf = NaN), so they are those of the other rows, each times its weight.
template <class T>
void check_weight_zero_tie() {
  Model m;
  m.weights = {0.4, 0.6};
  Part g;
  g.family = Family::gamma;
  g.col_begin = 0;
  g.col_end = 1;
  g.shape = {0.5, 3.0};  // x = 0: +inf under the first, −inf under the second
  g.rate = {1.0, 2.0};
  m.parts = {g};
  const auto packed = engine::pack_model<T>(m, 1);
  const std::vector<double> x = {1.0, 0.0, 2.0}, w = {2.0, 0.0, 0.5};
  std::vector<double> loglik(3);
  kernels::cpu::Options o;
  o.threads = 1;
  kernels::cpu::score(packed.view, x.data(), 3, 1, loglik.data(), nullptr, o);
  ASSERT_EQ(loglik[1], std::numeric_limits<double>::infinity());
  o.weights = w.data();
  std::vector<double> stats(static_cast<std::size_t>(packed.view.stat_size), 0.0);
  kernels::cpu::accumulate(packed.view, x.data(), 3, 1, stats.data(), o);
  const double want = 2.0 * loglik[0] + 0.5 * loglik[2];
  EXPECT_NEAR(stats[0], want, 1e-12 * std::abs(want)) << "Σ weight · log-likelihood";
  EXPECT_EQ(stats[1], 2.5) << "Σ weight";
}

TEST(CpuPassTies, AWeightZeroRowAtPlusInfinityAddsNothingFp64) { check_weight_zero_tie<double>(); }
TEST(CpuPassTies, AWeightZeroRowAtPlusInfinityAddsNothingFp32) { check_weight_zero_tie<float>(); }

}  // namespace
}  // namespace mixle
