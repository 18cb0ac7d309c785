// The CUDA kernels' chunk and residency arithmetic (kernels/cuda/chunk_plan.hpp): plain host
// code, tested in every build. The device tests exercise the same plan end to end.
#include "kernels/cuda/chunk_plan.hpp"

#include <gtest/gtest.h>

#include <vector>

namespace mixle::kernels::cuda {
namespace {

constexpr std::size_t kMiB = std::size_t{1} << 20;

/// A pass over `rows` rows of `cols` float32 columns with a 4-component workspace.
ChunkRequest pass(std::int64_t rows, std::size_t cols, std::size_t free_bytes, std::size_t held = 0) {
  ChunkRequest r;
  r.rows = rows;
  r.row_bytes = cols * sizeof(float);
  r.work_bytes_per_row = workspace_bytes_per_row<float>(4);
  r.unit = slot_rows(64);
  r.free_bytes = free_bytes;
  r.held_bytes = held;
  return r;
}

TEST(ChunkPlan, RowsThatWereResidentStayResidentOnTheNextPass) {
  // 8 MiB of rows on a device whose budget leaves them half a copy of headroom: resident.
  const std::int64_t rows = 4096;
  const std::size_t cols = 512, data = rows * cols * sizeof(float);
  const std::size_t work = static_cast<std::size_t>(rows) * workspace_bytes_per_row<float>(4);
  const std::size_t device = static_cast<std::size_t>((kPartialBudgetBytes + 1.5 * data + work) / kDeviceMemoryShare);
  const ChunkPlan first = plan_chunks(pass(rows, cols, device));
  ASSERT_TRUE(first.resident);
  EXPECT_EQ(first.chunk, rows);
  // The second pass: the cached rows and the workspace are no longer free, but are held.
  const ChunkPlan second = plan_chunks(pass(rows, cols, device - data - work, data + work));
  EXPECT_TRUE(second.resident) << "the cached rows would be streamed again while staying allocated";
  EXPECT_EQ(second.chunk, first.chunk);
  // Judged by free memory alone the same rows no longer fit: the rule this plan replaced.
  EXPECT_FALSE(plan_chunks(pass(rows, cols, device - data - work, 0)).resident);
}

TEST(ChunkPlan, StreamingShrinksTheChunkToTheBudgetInWholeSlots) {
  const std::int64_t unit = slot_rows(64);
  ChunkRequest r = pass(std::int64_t{1} << 22, 256, 400 * kMiB);
  const ChunkPlan p = plan_chunks(r);
  EXPECT_FALSE(p.resident);
  ASSERT_GT(p.chunk, 0);
  EXPECT_EQ(p.chunk % unit, 0);
  EXPECT_LE(static_cast<double>(p.chunk) * p.streamed_bytes_per_row, p.budget_bytes);
  EXPECT_GT(static_cast<double>(p.chunk + unit) * p.streamed_bytes_per_row, p.budget_bytes);
  // Nothing fits: chunk 0 (the backend then throws MemoryError with the numbers).
  r.free_bytes = 300 * kMiB;
  EXPECT_EQ(plan_chunks(r).chunk, 0);
}

TEST(ChunkPlan, ForcedStreamingAndTheChunkCap) {
  ChunkRequest r = pass(10000, 8, std::size_t{16} << 30);
  EXPECT_TRUE(plan_chunks(r).resident);
  EXPECT_EQ(plan_chunks(r).chunk, 10000);
  r.max_chunk_rows = 1024;  // resident, in chunks of 1024 rows
  EXPECT_TRUE(plan_chunks(r).resident);
  EXPECT_EQ(plan_chunks(r).chunk, 1024);
  r.max_chunk_rows = 0;
  r.forced_stream_rows = 2048;  // streamed whatever the memory
  EXPECT_FALSE(plan_chunks(r).resident);
  EXPECT_EQ(plan_chunks(r).chunk, 2048);
}

TEST(ChunkPlan, Tf32ScratchIsPartOfTheWorkingMemory) {
  PartView<float> parts[2];
  parts[0].kind = PartKind::gaussian_diag, parts[0].dims = 48;
  parts[1].kind = PartKind::poisson, parts[1].dims = 100;
  ModelView<float> model;
  model.components = 16;
  model.parts = parts;
  model.num_parts = 2;
  const std::size_t plain = work_bytes_per_row(model, false, false, false);
  EXPECT_EQ(plain, workspace_bytes_per_row<float>(16));
  // rows × 2D floats for the widest gaussian_diag part (the poisson part has no GEMM).
  EXPECT_EQ(work_bytes_per_row(model, false, false, true), plain + 2 * 48 * sizeof(float));
  EXPECT_EQ(work_bytes_per_row(model, true, false, false), plain + 2 * 16 * sizeof(float));
  EXPECT_EQ(work_bytes_per_row(model, false, true, false), plain + 2 * sizeof(double));
  EXPECT_EQ(work_bytes_per_row(model, false, false, false, true), plain + 2 * sizeof(double));  // sample weights
  EXPECT_EQ(work_bytes_per_row(model, false, true, false, true), plain + 4 * sizeof(double));
}

// The slot size is the smallest multiple of kSubBlockRows that keeps a full chunk's partials
// (kMaxChunkRows / R slots of stat_size doubles) within kPartialBudgetBytes, capped at one slot
// per chunk; it depends on the statistics count only.
TEST(ChunkPlan, SlotRowsAreTheSmallestThatKeepThePartialsInBudget) {
  auto partial_bytes = [](std::int64_t rows_per_slot, std::int64_t stat_size) {
    return static_cast<double>(kMaxChunkRows) / static_cast<double>(rows_per_slot) * static_cast<double>(stat_size) *
           sizeof(double);
  };
  for (std::int64_t s : {std::int64_t{1}, std::int64_t{64}, std::int64_t{4096}, std::int64_t{4097}, std::int64_t{20000},
                         std::int64_t{1} << 20, std::int64_t{1} << 22, std::int64_t{1} << 26}) {
    SCOPED_TRACE(s);
    const std::int64_t r = slot_rows(s);
    EXPECT_EQ(r % kSubBlockRows, 0);
    EXPECT_GE(r, kSubBlockRows);
    EXPECT_LE(r, kMaxChunkRows);
    if (r < kMaxChunkRows) EXPECT_LE(partial_bytes(r, s), static_cast<double>(kPartialBudgetBytes));
    if (r > kSubBlockRows) EXPECT_GT(partial_bytes(r - kSubBlockRows, s), static_cast<double>(kPartialBudgetBytes));
  }
  // By hand: 2^20 rows / 128 = 8192 slots of s doubles fit 256 MiB up to s = 4096.
  EXPECT_EQ(slot_rows(4096), 128);
  EXPECT_EQ(slot_rows(4097), 256);
  EXPECT_EQ(slot_rows(std::int64_t{1} << 22), 131072);         // 2^38 partial bytes at 128 rows: 1024 sub-blocks
  EXPECT_EQ(slot_rows(std::int64_t{1} << 26), kMaxChunkRows);  // over budget even at one slot per chunk
}

// Per row: K log-densities and the row offset in T, a float64 log-likelihood, an int status.
TEST(ChunkPlan, WorkspaceBytesPerRowByHand) {
  EXPECT_EQ(workspace_bytes_per_row<float>(16), 4u * 17 + 8 + 4);
  EXPECT_EQ(workspace_bytes_per_row<double>(3), 8u * 4 + 8 + 4);
}

}  // namespace
}  // namespace mixle::kernels::cuda
