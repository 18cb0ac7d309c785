// The tiles a CPU pass keeps at once: 64 while their float64 sums fit in 512 MiB, fewer as the
// statistics grow, and never fewer than one — a pass over statistics larger than 512 MiB still
// advances tile by tile instead of looping on a round of none.
#include "kernels/cpu/cpu_kernels.hpp"

#include <gtest/gtest.h>

#include <cstdint>

namespace mixle::kernels::cpu {
namespace {

constexpr std::int64_t kBudgetValues = (std::int64_t{512} << 20) / 8;  // float64 values in 512 MiB

TEST(KernelsCpuTileRounds, SixtyFourTilesWhileTheirSumsFit) {
  EXPECT_EQ(tiles_per_round(0), 64);
  EXPECT_EQ(tiles_per_round(1), 64);
  EXPECT_EQ(tiles_per_round(kBudgetValues / 64), 64);
  EXPECT_EQ(tiles_per_round(kBudgetValues / 64 + 1), 63);
}

TEST(KernelsCpuTileRounds, FewerTilesAsTheStatisticsGrow) {
  EXPECT_EQ(tiles_per_round(kBudgetValues / 2), 2);
  EXPECT_EQ(tiles_per_round(kBudgetValues / 2 + 1), 1);
  EXPECT_EQ(tiles_per_round(kBudgetValues), 1);
}

TEST(KernelsCpuTileRounds, AtLeastOneTileWhenOneTilesSumsExceedTheBudget) {
  EXPECT_EQ(tiles_per_round(kBudgetValues + 1), 1);
  EXPECT_EQ(tiles_per_round(std::int64_t{1} << 40), 1);
}

}  // namespace
}  // namespace mixle::kernels::cpu
