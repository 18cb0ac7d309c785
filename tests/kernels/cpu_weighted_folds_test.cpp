// Sample weights in the CPU kernels' given and normalised folds: a weighted fold equals the
// unweighted fold of responsibilities multiplied by the weights (bit for bit in fp64: the same
// products), and the given fold's row count becomes the weights' sum — over two blocks and a
// tail, so the last block's lanes past the rows must weigh nothing.
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

using test::three_components;

constexpr std::size_t kRows = 300;  // two blocks of 128 and a tail of 44

std::vector<double> rows() {
  std::vector<double> x(2 * kRows);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = std::sin(0.37 * static_cast<double>(i)) * 4.0;
  return x;
}

/// kRows weights 0 … 3, then a block of 100s that no fold may read (it would show in the sums).
std::vector<double> weights() {
  std::vector<double> w(kRows + 128, 100.0);
  for (std::size_t r = 0; r < kRows; ++r) w[r] = static_cast<double>((r * 5 + 2) % 7) * 0.5;
  return w;
}

TEST(CpuWeightedFolds, GivenFoldWeighsResponsibilitiesAndCountsTheWeight) {
  const Model m = three_components();
  const auto packed = engine::pack_model<double>(m, 2, /*zero_shift=*/true);
  const std::vector<double> x = rows(), w = weights();
  std::vector<double> resp(kRows * 3), scaled(kRows * 3);
  for (std::size_t i = 0; i < resp.size(); ++i) {
    resp[i] = 0.1 + 0.8 * std::abs(std::cos(0.11 * static_cast<double>(i)));
    scaled[i] = resp[i] * w[i / 3];
  }
  const std::size_t size = static_cast<std::size_t>(packed.view.stat_size);
  std::vector<double> weighted(size, 0.0), by_hand(size, 0.0);
  kernels::cpu::Options o;
  o.threads = 2;
  kernels::cpu::accumulate_given(packed.view, x.data(), kRows, 2, scaled.data(), by_hand.data(), o);
  o.weights = w.data();
  kernels::cpu::accumulate_given(packed.view, x.data(), kRows, 2, resp.data(), weighted.data(), o);
  double total = 0.0;
  for (std::size_t r = 0; r < kRows; ++r) total += w[r];
  EXPECT_EQ(by_hand[1], static_cast<double>(kRows));
  EXPECT_EQ(weighted[1], total);  // the rows' weight, not their number
  for (std::size_t j = 2; j < size; ++j) EXPECT_EQ(weighted[j], by_hand[j]) << "statistic " << j;
}

TEST(CpuWeightedFolds, NormalisedFoldWeighsResponsibilitiesAndLeavesTheHeader) {
  const Model m = three_components();
  const auto packed = engine::pack_model<double>(m, 2);
  const std::vector<double> x = rows(), w = weights();
  std::vector<double> norm(kRows), resp(kRows * 3);
  kernels::cpu::Options o;
  o.threads = 1;
  kernels::cpu::score(packed.view, x.data(), kRows, 2, norm.data(), resp.data(), o);
  const std::size_t size = static_cast<std::size_t>(packed.view.stat_size);
  std::vector<double> weighted(size, 0.0), plain(size, 0.0);
  weighted[0] = plain[0] = 5.0;
  weighted[1] = plain[1] = 9.0;
  kernels::cpu::accumulate_normalised(packed.view, x.data(), kRows, 2, norm.data(), plain.data(), o);
  o.weights = w.data();
  kernels::cpu::accumulate_normalised(packed.view, x.data(), kRows, 2, norm.data(), weighted.data(), o);
  EXPECT_EQ(weighted[0], 5.0);
  EXPECT_EQ(weighted[1], 9.0);
  // Masses: Σ_n w_n r_nk against the unweighted fold's Σ_n r_nk — they differ, and the weighted
  // one matches the responsibilities scored above, weighed.
  for (std::size_t k = 0; k < 3; ++k) {
    double expected = 0.0;
    for (std::size_t r = 0; r < kRows; ++r) expected += w[r] * resp[r * 3 + k];
    EXPECT_NEAR(weighted[2 + k], expected, 1e-12 * expected) << "component " << k;
    EXPECT_GT(std::abs(weighted[2 + k] - plain[2 + k]), 1e-6) << "component " << k;
  }
}

}  // namespace
}  // namespace mixle
