// accumulate_normalised_kept (component sharding's second pass, from log-densities kept by
// score_keeping) against accumulate_normalised over the same rows: bit-identical statistics, and
// the header values (stats[0], stats[1]: rows and log-likelihood, counted elsewhere) untouched
// by both — the caller's values stay.
#include "engine/estimator.hpp"
#include "kernels/cpu/cpu_kernels.hpp"
#include "three_components.hpp"

#include <mixle/model.hpp>

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

namespace mixle {
namespace {

template <class T>
void check_kept() {
  const Model m = test::three_components();
  const auto packed = engine::pack_model<T>(m, 2);
  constexpr std::size_t n = 300;  // two blocks and a tail
  std::vector<double> x(2 * n), log_norm(n);
  for (std::size_t i = 0; i < 2 * n; ++i) x[i] = std::sin(0.37 * static_cast<double>(i)) * 4.0;
  kernels::cpu::Options o;
  o.threads = 2;
  std::vector<T> kept(kernels::cpu::log_density_cache_size(n, 3));
  kernels::cpu::score_keeping(packed.view, x.data(), n, 2, log_norm.data(), kept.data(), o);
  const std::size_t size = static_cast<std::size_t>(packed.view.stat_size);
  std::vector<double> direct(size, 0.0), from_kept(size, 0.0);
  direct[0] = from_kept[0] = 7.0;
  direct[1] = from_kept[1] = -11.0;
  kernels::cpu::accumulate_normalised(packed.view, x.data(), n, 2, log_norm.data(), direct.data(), o);
  kernels::cpu::accumulate_normalised_kept(packed.view, x.data(), n, 2, kept.data(), log_norm.data(), from_kept.data(),
                                           o);
  EXPECT_EQ(from_kept[0], 7.0);
  EXPECT_EQ(from_kept[1], -11.0);
  EXPECT_EQ(direct[0], 7.0);
  EXPECT_EQ(direct[1], -11.0);
  EXPECT_EQ(std::memcmp(direct.data(), from_kept.data(), size * sizeof(double)), 0);
  double mass = 0.0;
  for (std::size_t k = 0; k < 3; ++k) mass += from_kept[kernels::kStatHeader + k];
  EXPECT_NEAR(mass, static_cast<double>(n), 1e-3 * n);  // the whole mixture's normaliser: Σ r = 1 a row
}

// The cache holds whole blocks of kBlockRows rows, K values a row: no block for no rows, one for
// one row or a full block, two from one row more.
TEST(CpuNormalisedKept, TheCacheHoldsWholeBlocks) {
  using kernels::cpu::kBlockRows;
  using kernels::cpu::log_density_cache_size;
  const std::size_t block = static_cast<std::size_t>(kBlockRows);
  EXPECT_EQ(log_density_cache_size(0, 3), 0u);
  EXPECT_EQ(log_density_cache_size(1, 3), 3 * block);
  EXPECT_EQ(log_density_cache_size(block, 3), 3 * block);
  EXPECT_EQ(log_density_cache_size(block + 1, 2), 4 * block);
}

TEST(CpuNormalisedKept, MatchesRecomputingAndKeepsTheHeaderFp64) { check_kept<double>(); }
TEST(CpuNormalisedKept, MatchesRecomputingAndKeepsTheHeaderFp32) { check_kept<float>(); }

}  // namespace
}  // namespace mixle
