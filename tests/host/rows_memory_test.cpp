// plan_rows_memory: rows within the budget stay resident (the float32 copy dropped first), rows
// beyond it are streamed in chunks of whole kernel tiles that half the budget left by the
// weights holds, and a given budget that cannot be kept is a usage error saying what to change.
#include "common/bad_files.hpp"

#include "host/resources_discovery.hpp"
#include "host/rows_memory.hpp"
#include "kernels/cpu/cpu_kernels.hpp"

#include <mixle/data.hpp>
#include <mixle/error.hpp>
#include <mixle/fit.hpp>

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace mixle {
namespace {

constexpr std::size_t kRows = 10000, kCols = 4;                            // 320,000 bytes of float64
constexpr std::uint64_t kTileBytes = kernels::cpu::kTileRows * kCols * 8;  // 65,536

Dataset mapped_rows(const test::TempDir& dir) {
  std::vector<double> v(kRows * kCols, 1.5);
  write_matrix(dir.file("rows.npy"), v.data(), kRows, kCols);
  return read_data(dir.file("rows.npy"));
}

/// A GPU fit (its Compute copies float64 rows to float32 for fp32; the CPU's does not).
FitOptions with_budget(std::uint64_t bytes, const char* precision = "fp32") {
  FitOptions o;
  o.memory_budget = bytes;
  o.precision = precision;
  o.device = "cuda";
  return o;
}

std::string usage_error(const Dataset& rows, const FitOptions& o, bool sharded = false) {
  try {
    host::plan_rows_memory(rows, o, 1, sharded);
  } catch (const UsageError& e) {
    return e.what();
  }
  return "no usage error";
}

std::string usage_error_sharded(const Dataset& rows, const FitOptions& o) { return usage_error(rows, o, true); }

TEST(RowsMemory, RowsWithinTheBudgetStayResidentAndTheCopyGoesFirst) {
  test::TempDir dir("rows-memory-resident");
  const Dataset rows = mapped_rows(dir);
  host::RowsMemory m = host::plan_rows_memory(rows, with_budget(480000), 1);  // rows + float32 copy, exactly
  EXPECT_EQ(m.rows_bytes, 320000u);
  EXPECT_EQ(m.copy_bytes, 160000u);
  EXPECT_TRUE(m.f32_copy);
  EXPECT_EQ(m.chunk_rows, 0u);
  EXPECT_TRUE(m.given);
  m = host::plan_rows_memory(rows, with_budget(479999), 1);
  EXPECT_FALSE(m.f32_copy);
  EXPECT_EQ(m.chunk_rows, 0u);
  EXPECT_NE(m.summary().find("float32 converted per block"), std::string::npos) << m.summary();
  m = host::plan_rows_memory(rows, with_budget(320000), 1);  // the rows, exactly
  EXPECT_EQ(m.chunk_rows, 0u);
  m = host::plan_rows_memory(rows, with_budget(320000, "fp64"), 1);  // no copy in float64
  EXPECT_EQ(m.copy_bytes, 0u);
  EXPECT_EQ(m.summary(), "resident (312.5 KiB; budget 312.5 KiB)");
  FitOptions cpu = with_budget(320000);
  cpu.device = "cpu";  // the CPU kernels convert block by block: no copy either
  m = host::plan_rows_memory(rows, cpu, 1);
  EXPECT_EQ(m.copy_bytes, 0u);
  EXPECT_EQ(m.summary(), "resident (312.5 KiB; budget 312.5 KiB)");
}

TEST(RowsMemory, RowsBeyondTheBudgetAreStreamedInWholeTiles) {
  test::TempDir dir("rows-memory-streamed");
  const Dataset rows = mapped_rows(dir);
  host::RowsMemory m = host::plan_rows_memory(rows, with_budget(319999), 1);
  EXPECT_EQ(m.chunk_rows, 2 * kernels::cpu::kTileRows);  // half of 319,999 holds two tiles of 65,536 bytes
  EXPECT_EQ(m.chunk_bytes, 2 * kTileBytes);
  EXPECT_FALSE(m.f32_copy);
  EXPECT_EQ(m.summary(), "streamed from the file in chunks of 4096 rows (128.0 KiB; budget 312.5 KiB)");
  m = host::plan_rows_memory(rows, with_budget(2 * kTileBytes), 1);  // the least: one tile
  EXPECT_EQ(m.chunk_rows, std::size_t{kernels::cpu::kTileRows});
  // Weights stay resident: 8 bytes a row come off the budget before it is halved.
  std::vector<double> w(kRows, 1.0);
  const Dataset weighted = rows.with_weights(w);
  m = host::plan_rows_memory(weighted, with_budget(2 * kTileBytes + 80000), 1);
  EXPECT_EQ(m.rows_bytes, 400000u);
  EXPECT_EQ(m.chunk_rows, std::size_t{kernels::cpu::kTileRows});
  const std::string e = usage_error(weighted, with_budget(2 * kTileBytes + 79999));
  EXPECT_NE(e.find("at least 206.1 KiB"), std::string::npos) << e;  // 2 · 65,536 + 80,000 bytes
  EXPECT_NE(e.find("plus the weights"), std::string::npos) << e;
}

TEST(RowsMemory, ABudgetThatCannotBeKeptSaysWhatToChange) {
  test::TempDir dir("rows-memory-refused");
  const Dataset rows = mapped_rows(dir);
  std::string e = usage_error(rows, with_budget(2 * kTileBytes - 1));
  EXPECT_NE(e.find("rows.npy: its 10000 rows take 312.5 KiB, more than --memory-budget 128.0 KiB"), std::string::npos)
      << e;
  EXPECT_NE(e.find("at least 128.0 KiB"), std::string::npos) << e;
  const std::vector<double> v(kRows * kCols, 1.5);
  e = usage_error(Dataset::from_vector(v, kRows, kCols), with_budget(100000));
  EXPECT_NE(e.find("cannot be streamed"), std::string::npos) << e;
  FitOptions drop = with_budget(100000);
  drop.missing = "drop";
  e = usage_error(rows, drop);
  EXPECT_NE(e.find("--missing drop copies the rows it keeps"), std::string::npos) << e;
  drop.memory_budget = 320000;  // within the budget: nothing to refuse
  EXPECT_EQ(host::plan_rows_memory(rows, drop, 1).chunk_rows, 0u);
  // A component-sharded fit holds its rows resident, mapped or not.
  e = usage_error_sharded(rows, with_budget(100000));
  EXPECT_NE(e.find("more than --memory-budget 97.7 KiB: a component-sharded fit holds its rows resident; raise the "
                   "budget or spread the rows over more ranks"),
            std::string::npos)
      << e;
  EXPECT_EQ(host::plan_rows_memory(rows, with_budget(320000), 1, /*sharded=*/true).chunk_rows, 0u);  // within it
}

// Under the default budget, rows that cannot be streamed stay resident and the plan says why
// (a given budget refuses them instead, above).
TEST(RowsMemory, RowsOverTheDefaultBudgetThatCannotStreamStayResidentAndSayWhy) {
  if (!host::usable_memory_bytes()) GTEST_SKIP() << "no readable memory limit here";
  const double x = 0.0;
  const Dataset huge = Dataset::view(&x, std::size_t{1} << 40, 1);  // 8 TiB in memory: only its shape is read
  FitOptions cpu;
  cpu.device = "cpu";
  const host::RowsMemory m = host::plan_rows_memory(huge, cpu, 1);
  EXPECT_FALSE(m.given);
  EXPECT_EQ(m.chunk_rows, 0u);
  EXPECT_NE(m.resident_because.find("cannot be streamed"), std::string::npos) << m.resident_because;
  EXPECT_NE(m.summary().find(", over the budget: rows read into memory"), std::string::npos) << m.summary();
  const host::RowsMemory sharded = host::plan_rows_memory(huge, cpu, 1, /*sharded=*/true);
  EXPECT_EQ(sharded.chunk_rows, 0u);
  EXPECT_EQ(sharded.chunk_bytes, 0u);
  EXPECT_NE(sharded.summary().find(", over the budget: a component-sharded fit holds its rows resident"),
            std::string::npos)
      << sharded.summary();
}

TEST(RowsMemory, TheDefaultBudgetIsHalfTheUsableMemorySharedByTheNodesRanks) {
  const std::optional<std::uint64_t> usable = host::usable_memory_bytes();
  if (!usable) GTEST_SKIP() << "no readable memory limit here";
  EXPECT_EQ(host::default_memory_budget(1), *usable / 2);
  EXPECT_EQ(host::default_memory_budget(4), *usable / 2 / 4);
  EXPECT_EQ(host::default_memory_budget(0), *usable / 2);
  test::TempDir dir("rows-memory-default");
  const host::RowsMemory m = host::plan_rows_memory(mapped_rows(dir), FitOptions{}, 1);
  EXPECT_FALSE(m.given);
  EXPECT_EQ(m.budget, *usable / 2);
  EXPECT_NE(m.summary().find(", the default)"), std::string::npos) << m.summary();
}

}  // namespace
}  // namespace mixle
