// How the CUDA kernels move rows: resident data in several chunks, bad rows spread over chunks,
// residency kept across passes, and the TF32 path's statistics and chunking — on a GPU or on the
// simulator (the residency test needs the simulator's configurable device memory).
#include "common/kernel_compare.hpp"
#include "kernels/cuda/chunk_plan.hpp"

#include <cstdio>
#include <sstream>
#include <tuple>

#if MIXLE_CUDA_SIM
#include "kernels/cuda/pass.hpp"

#include <mixle/cudasim/testing.hpp>
#endif

namespace mixle::test {
namespace {

using engine::Precision;

// The per-family bounds of the family tests (same reasoning: operation order shared with the
// CPU, FMA contraction and the log-sum-exp's summation order differ).
constexpr Tolerance kDiagFp32{2e-5, 1e-5};
constexpr Tolerance kDiagFp64{1e-13, 1e-13};
constexpr Tolerance kFullFp64{2e-13, 1e-13};

TEST(CudaChunks, ResidentRowsInSeveralChunksMatchCpu) {
  MIXLE_CUDA_OR_SKIP(cuda);
  ScopedEnv cap("MIXLE_CUDA_CHUNK_ROWS", "256");  // 1037 rows: 5 resident chunks, the last partial
  run_case(*cuda, Family::gaussian_diag, Case{1037, 5, 7, 0, DType::f32, Precision::fp32}, kDiagFp32);
  run_case(*cuda, Family::gaussian_diag, Case{1037, 40, 3, 0, DType::f64, Precision::fp64}, kDiagFp64);
  run_case(*cuda, Family::gaussian_full, Case{700, 3, 4, 0, DType::f64, Precision::fp64}, kFullFp64);
}

TEST(CudaChunks, ResidentChunkingKeepsStatisticsBitIdentical) {
  MIXLE_CUDA_OR_SKIP(cuda);
  expect_chunking_invariant(*cuda, Family::gaussian_diag, Case{1037, 6, 5, 0, DType::f32, Precision::fp32}, 256,
                            "MIXLE_CUDA_CHUNK_ROWS");
  expect_chunking_invariant(*cuda, Family::poisson, Case{1037, 6, 3, 0, DType::f64, Precision::fp64}, 384,
                            "MIXLE_CUDA_CHUNK_ROWS");
}

// The fold stages 128 slots at a time: 38,477 rows are 301 slots of 128 rows in one chunk (two
// whole tiles and a partial one), and chunks of 16,640 rows hold 130 slots, so a chunk's second
// tile has two.
TEST(CudaChunks, TheSlotFoldCrossesTilesOfSlots) {
  MIXLE_CUDA_OR_SKIP(cuda);
  run_case(*cuda, Family::gaussian_diag, Case{38477, 2, 3, 0, DType::f32, Precision::fp32}, kDiagFp32);
  expect_chunking_invariant(*cuda, Family::poisson, Case{38477, 2, 3, 0, DType::f64, Precision::fp64}, 16640,
                            "MIXLE_CUDA_CHUNK_ROWS");
}

/// 1037 rows of a 4-component gaussian_diag model with impossible rows (an infinite value: −inf
/// under every component) and NaN rows spread over every 256-row chunk — eleven in all, so the
/// bad-row list (8 entries) fills up in the third chunk.
std::vector<double> rows_with_bad_ones(const Model& model, std::size_t rows) {
  std::mt19937_64 rng(77);
  std::vector<double> values = sample_rows(model, rows, rng);
  const std::size_t D = model.columns();
  for (std::size_t r : {3u, 255u, 256u, 600u, 901u, 1036u}) values[r * D + 1] = std::numeric_limits<double>::infinity();
  for (std::size_t r : {0u, 130u, 511u, 512u, 777u}) values[r * D] = std::numeric_limits<double>::quiet_NaN();
  return values;
}

TEST(CudaChunks, BadRowsOverSeveralChunksAreReportedAsOnCpu) {
  MIXLE_CUDA_OR_SKIP(cuda);
  const Model model = random_model(Family::gaussian_diag, 4, 3, 78);
  const std::size_t rows = 1037;
  const std::vector<double> values = rows_with_bad_ones(model, rows);
  for (const auto& [env, value] : {std::pair<const char*, const char*>{"MIXLE_CUDA_CHUNK_ROWS", "0"},
                                   {"MIXLE_CUDA_CHUNK_ROWS", "256"},
                                   {"MIXLE_CUDA_STREAM_ROWS", "256"}}) {
    SCOPED_TRACE(std::string(env) + "=" + value);
    std::unique_ptr<ScopedEnv> chunking;
    if (std::string(value) != "0") chunking = std::make_unique<ScopedEnv>(env, value);
    // compare_kernels checks the counts and the listed rows against the CPU exactly.
    compare_kernels(*cuda, model, values, rows, DType::f32, Precision::fp32, kDiagFp32);
    compare_kernels(*cuda, model, values, rows, DType::f64, Precision::fp64, kDiagFp64);
  }
}

// The row-count variables take a positive integer; anything else is named, not ignored (0 would
// otherwise read as "unset" and silently fall back to the planned chunks).
TEST(CudaChunks, AMalformedRowCountIsNamed) {
  MIXLE_CUDA_OR_SKIP(cuda);
  const Model model = random_model(Family::poisson, 2, 1, 5);
  const Dataset data = Dataset::from_vector(std::vector<double>(300, 1.0), 300, 1);
  std::vector<double> stats(static_cast<std::size_t>(engine::stat_layout(model).size), 0.0);
  for (const char* env : {"MIXLE_CUDA_STREAM_ROWS", "MIXLE_CUDA_CHUNK_ROWS"})
    for (const char* value : {"0", "-256", "256x"}) {
      SCOPED_TRACE(std::string(env) + "=" + value);
      ScopedEnv bad(env, value);
      try {
        cuda->accumulate(model, data, Precision::fp64, stats);
        ADD_FAILURE() << "accepted";
      } catch (const InvalidInput& e) {
        EXPECT_NE(std::string(e.what()).find(std::string(env) + "=\"" + value + "\": expected a positive row count"),
                  std::string::npos)
            << e.what();
      }
    }
}

#if MIXLE_CUDA_SIM
// Rows that fit on the device stay there from one pass to the next: the second pass over the
// same Dataset must not upload them again. The simulated device is sized so the rows fit with
// half a copy to spare — where the free memory of the second pass, which no longer counts the
// cached rows, would have sent them back to streaming every pass while the copy stayed allocated.
TEST(CudaResidency, RowsThatFitAreNotUploadedAgain) {
  MIXLE_CUDA_OR_SKIP(cuda);
  namespace kc = kernels::cuda;
  // 4096 rows of 512 float32 columns (8 MiB), the model reading one: a short simulated pass.
  constexpr std::size_t rows = 4096, cols = 512, K = 2;
  const Model model = random_model(Family::gaussian_diag, K, 1, 91);
  std::vector<float> values(rows * cols, 0.5f);
  std::mt19937_64 rng(92);
  const std::vector<double> first = sample_rows(model, rows, rng);
  for (std::size_t r = 0; r < rows; ++r) values[r * cols] = static_cast<float>(first[r]);
  const Dataset data = Dataset::from_vector(values, rows, cols);
  const std::size_t data_bytes = rows * cols * sizeof(float);
  const std::size_t work_bytes = rows * kc::workspace_bytes_per_row<float>(K);
  std::size_t free0 = 0, total0 = 0;
  ASSERT_EQ(cudaMemGetInfo(&free0, &total0), cudaSuccess);
  const std::size_t device = (total0 - free0) + static_cast<std::size_t>((static_cast<double>(kc::kPartialBudgetBytes) +
                                                                          1.5 * static_cast<double>(data_bytes) +
                                                                          static_cast<double>(work_bytes)) /
                                                                         kc::kDeviceMemoryShare);
  ScopedEnv memory("MIXLE_SIM_DEVICE_MEMORY", std::to_string(device));
  const std::size_t size = static_cast<std::size_t>(engine::stat_layout(model).size);
  std::vector<std::vector<double>> stats(3, std::vector<double>(size, 0.0));
  std::vector<std::uint64_t> uploaded;
  for (auto& s : stats) {
    cudasim::reset_counters();
    cuda->accumulate(model, data, Precision::fp32, s);
    uploaded.push_back(cudasim::counters().h2d_bytes);
  }
  EXPECT_GE(uploaded[0], data_bytes) << "the first pass uploads the rows";
  EXPECT_LT(uploaded[1], data_bytes / 64) << "the second pass uploaded the rows again";
  EXPECT_LT(uploaded[2], data_bytes / 64) << "the third pass uploaded the rows again";
  EXPECT_EQ(stats[0], stats[1]);
  EXPECT_EQ(stats[0], stats[2]);
}

// The chunk plan counts workspace_bytes_per_row per row of a chunk: exactly what the workspace
// allocates on the device (an under-count would plan chunks that do not fit).
TEST(CudaResidency, TheWorkspaceTakesWhatThePlanCounts) {
  MIXLE_CUDA_OR_SKIP(cuda);
  namespace kc = kernels::cuda;
  const std::size_t before = cudasim::device_memory_used(0);
  {
    kc::ChunkWorkspace<float> f32;
    f32.reserve(1000, 7, 50);
    EXPECT_EQ(cudasim::device_memory_used(0) - before, 1000 * kc::workspace_bytes_per_row<float>(7));
  }
  {
    kc::ChunkWorkspace<double> f64;
    f64.reserve(384, 33, 50);
    EXPECT_EQ(cudasim::device_memory_used(0) - before, 384 * kc::workspace_bytes_per_row<double>(33));
  }
  EXPECT_EQ(cudasim::device_memory_used(0), before);
}

// A pass that streams rows the backend had cached frees the cached copy: it would only hold
// device memory (the next pass would stream again or upload anew).
TEST(CudaResidency, AStreamedPassFreesTheCachedCopyOfItsRows) {
  MIXLE_CUDA_OR_SKIP(cuda);
  constexpr std::size_t rows = 2048, cols = 256;
  const Model model = random_model(Family::gaussian_diag, 2, 1, 95);
  std::vector<float> values(rows * cols, 0.5f);
  const Dataset data = Dataset::from_vector(values, rows, cols);
  const std::size_t data_bytes = rows * cols * sizeof(float);
  std::vector<double> stats(static_cast<std::size_t>(engine::stat_layout(model).size), 0.0);
  cuda->accumulate(model, data, Precision::fp32, stats);  // resident: the rows are cached
  const std::size_t cached = cudasim::device_memory_used(0);
  {
    ScopedEnv streamed("MIXLE_CUDA_STREAM_ROWS", "256");
    cuda->accumulate(model, data, Precision::fp32, stats);
  }
  const std::size_t after = cudasim::device_memory_used(0);
  EXPECT_LE(after + data_bytes, cached + 2 * 256 * cols * sizeof(float))
      << "the cached rows (" << data_bytes << " bytes) are still held: " << cached << " → " << after;
}

/// What MIXLE_CUDA_TRACE said about one pass.
struct TracedPass {
  std::string how;  // "resident" or "streamed"
  long long chunk = 0;
  std::size_t free = 0, held = 0;
};

std::vector<TracedPass> parse_trace(const std::string& text) {
  std::vector<TracedPass> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    const std::size_t at = line.find(" rows: ");
    if (line.rfind("mixle cuda: ", 0) != 0 || at == std::string::npos) continue;
    TracedPass p;
    char how[16] = {0};
    if (std::sscanf(line.c_str() + at, " rows: %15s in chunks of %lld rows; free %zu + held %zu", how, &p.chunk,
                    &p.free, &p.held) == 4)
      p.how = how, out.push_back(p);
  }
  return out;
}

// The memory a pass plans with is free + held (what the backend holds and reuses). Nothing else
// allocates on the device here, so it must be the same in every pass: held must count every
// buffer the backend keeps (rows, workspace and partials, staging, statistics). A buffer left out
// shrinks the next pass's budget — with rows this close to a chunk boundary, a smaller chunk.
TEST(CudaResidency, StreamedPassesPlanWithTheSameMemory) {
  MIXLE_CUDA_OR_SKIP(cuda);
  namespace kc = kernels::cuda;
  constexpr std::size_t rows = 4096, cols = 512, K = 2;
  const Model model = random_model(Family::gaussian_diag, K, 1, 93);
  std::vector<float> values(rows * cols, 0.25f);
  std::mt19937_64 rng(94);
  const std::vector<double> first = sample_rows(model, rows, rng);
  for (std::size_t r = 0; r < rows; ++r) values[r * cols] = static_cast<float>(first[r]);
  const Dataset data = Dataset::from_vector(values, rows, cols);
  const std::int64_t size = engine::stat_layout(model).size;
  const std::int64_t unit = kc::slot_rows(size);
  const double per_row = 2.0 * cols * sizeof(float) + static_cast<double>(kc::workspace_bytes_per_row<float>(K));
  // The first pass's budget 1 KiB above four units of streamed rows (the rows need ~8 MiB: not
  // resident). The packed model is allocated before the pass measures free memory, so a first
  // compute measures what the budget comes to; a second one, on a device sized by that, runs.
  const double target = 4.0 * static_cast<double>(unit) * per_row + 1024.0;
  std::size_t free0 = 0, total0 = 0;
  ASSERT_EQ(cudaMemGetInfo(&free0, &total0), cudaSuccess);
  auto device_for = [&](double budget) {
    return (total0 - free0) +
           static_cast<std::size_t>((static_cast<double>(kc::kPartialBudgetBytes) + budget) / kc::kDeviceMemoryShare);
  };
  std::vector<std::vector<double>> stats(3, std::vector<double>(static_cast<std::size_t>(size), 0.0));
  ScopedEnv trace("MIXLE_CUDA_TRACE", "1");
  double budget = 0.0;
  {
    ScopedEnv memory("MIXLE_SIM_DEVICE_MEMORY", std::to_string(device_for(target)));
    ::testing::internal::CaptureStderr();
    cuda->accumulate(model, data, Precision::fp32, stats[0]);
    const std::string text = ::testing::internal::GetCapturedStderr();
    const std::size_t at = text.find("budget ");
    ASSERT_NE(at, std::string::npos) << text;
    budget = std::stod(text.substr(at + 7));
    cuda.reset();
  }
  cuda = engine::make_cuda_compute(0);
  ScopedEnv memory("MIXLE_SIM_DEVICE_MEMORY", std::to_string(device_for(2 * target - budget)));
  stats[0].assign(stats[0].size(), 0.0);
  std::vector<double> loglik(rows), resp(rows * K);
  ::testing::internal::CaptureStderr();
  cuda->accumulate(model, data, Precision::fp32, stats[0]);
  cuda->score(model, data, Precision::fp32, loglik.data(), resp.data());
  cuda->accumulate(model, data, Precision::fp32, stats[1]);
  cuda->accumulate(model, data, Precision::fp32, stats[2]);
  const std::string text = ::testing::internal::GetCapturedStderr();
  const std::vector<TracedPass> passes = parse_trace(text);
  ASSERT_EQ(passes.size(), 4u) << text;
  EXPECT_EQ(passes[0].how, "streamed") << text;
  EXPECT_EQ(passes[0].chunk, 4 * unit) << text;
  const double margin = std::stod(text.substr(text.find("budget ") + 7)) - 4.0 * static_cast<double>(unit) * per_row;
  EXPECT_GE(margin, 0.0) << text;
  EXPECT_LT(margin, 2048.0) << "the budget is not close enough to the boundary to notice a missing buffer\n" << text;
  EXPECT_LT(passes[0].chunk, static_cast<long long>(rows)) << text;
  for (std::size_t i = 1; i < passes.size(); ++i) {
    EXPECT_EQ(passes[i].free + passes[i].held, passes[0].free + passes[0].held) << "pass " << i << "\n" << text;
    EXPECT_EQ(passes[i].how, passes[0].how) << "pass " << i << "\n" << text;
    EXPECT_EQ(passes[i].chunk, passes[0].chunk) << "pass " << i << "\n" << text;
  }
  EXPECT_GT(passes[1].held, 0u) << "the second pass holds the first pass's buffers";
  EXPECT_EQ(stats[0], stats[1]);
  EXPECT_EQ(stats[0], stats[2]);
}
#endif

// TF32 (explicit opt-in): the log-densities carry the GEMM's operand rounding, and the
// statistics are folded from the responsibilities those give. So the statistics must match the
// CPU's fp32 statistics within the propagation of the measured responsibility differences
// (check_component_statistics with weights |Δr| + summation rounding), and a change of chunking
// — another GEMM shape, possibly another cuBLAS kernel — may move them only within that bound:
// no bit-identity is claimed for TF32.
struct Tf32Check {
  Model model;
  std::vector<double> values;
  std::size_t rows;
};

Tf32Check tf32_case(std::size_t K = 16, std::size_t D = 24, std::size_t rows = 1500) {
  Tf32Check c{random_model(Family::gaussian_diag, K, D, 61 + K * D), {}, rows};
  std::mt19937_64 rng(62 + K);
  c.values = sample_rows(c.model, c.rows, rng);
  return c;
}

void expect_tf32_statistics_within_bound(engine::Compute& cuda, const Tf32Check& c) {
  const std::size_t K = c.model.components(), N = c.rows;
  const Dataset data = Dataset::from_vector(std::vector<float>(c.values.begin(), c.values.end()), N, c.model.columns());
  auto cpu = engine::make_cpu_compute(1);
  std::vector<double> ll_cpu(N), r_cpu(N * K), ll_gpu(N), r_gpu(N * K);
  cpu->score(c.model, data, Precision::fp32, ll_cpu.data(), r_cpu.data());
  cuda.score(c.model, data, Precision::tf32, ll_gpu.data(), r_gpu.data());
  std::vector<double> weight(N * K);
  double loglik_bound = 0.0;
  for (std::size_t n = 0; n < N; ++n) {
    loglik_bound += std::abs(ll_gpu[n] - ll_cpu[n]) + 1e-5 * std::abs(ll_cpu[n]);
    for (std::size_t k = 0; k < K; ++k)
      weight[n * K + k] = std::abs(r_gpu[n * K + k] - r_cpu[n * K + k]) + 1e-5 * r_cpu[n * K + k];
  }
  const std::size_t size = static_cast<std::size_t>(engine::stat_layout(c.model).size);
  std::vector<double> s_cpu(size, 0.0), s_gpu(size, 0.0);
  cpu->accumulate(c.model, data, Precision::fp32, s_cpu);
  cuda.accumulate(c.model, data, Precision::tf32, s_gpu);
  EXPECT_EQ(s_gpu[1], s_cpu[1]) << "rows folded in";
  EXPECT_NEAR(s_gpu[0], s_cpu[0], 2 * loglik_bound) << "Σ log-likelihood";
  check_component_statistics(c.model, c.values, N, weight, engine::shift_table(c.model, Precision::fp32), s_cpu, s_gpu);
}

TEST(CudaTf32, StatisticsMatchCpuWithinTheResponsibilityBound) {
  MIXLE_CUDA_OR_SKIP(cuda);
  expect_tf32_statistics_within_bound(*cuda, tf32_case());
}

// An eligible model's TF32 accumulate forms its log-densities on the tensor cores inside the fused
// kernel; MIXLE_CUDA_FUSED=0 keeps the unfused TF32 pass, a cuBLAS GEMM (score and the sharded
// pass use it always). Both within the bound, at the fused kernel's edges: tiles of 16 rows
// (K = 256), an odd K whose last register block reads one padding component, K and D padded to
// the tensor tiles (16 components, 8 dimensions), D = 64, and 16-row tensor tiles past the last
// row of a slot (1500 rows: the last slot's last tile holds 28).
TEST(CudaTf32, FusedAndUnfusedPassesWithinTheBoundAtTheFusedEdges) {
  MIXLE_CUDA_OR_SKIP(cuda);
  for (const auto& [K, D, rows] :
       {std::tuple<std::size_t, std::size_t, std::size_t>{256, 8, 555}, {31, 62, 401}, {5, 64, 300}, {16, 24, 1500}}) {
    SCOPED_TRACE("K=" + std::to_string(K) + " D=" + std::to_string(D));
    const Tf32Check c = tf32_case(K, D, rows);
    expect_tf32_statistics_within_bound(*cuda, c);
    ScopedEnv unfused("MIXLE_CUDA_FUSED", "0");
    expect_tf32_statistics_within_bound(*cuda, c);
  }
}

// The fused pass forms its tensor-core products per 16-row tile of a slot, and slots are fixed
// rows of the pass, so its TF32 statistics are the same bits for any chunking; the unfused pass
// (a cuBLAS GEMM per chunk) may move within the bound.
TEST(CudaTf32, ChunkingMovesStatisticsOnlyWithinTheBound) {
  MIXLE_CUDA_OR_SKIP(cuda);
  const Tf32Check c = tf32_case();
  const Dataset data =
      Dataset::from_vector(std::vector<float>(c.values.begin(), c.values.end()), c.rows, c.model.columns());
  const std::size_t size = static_cast<std::size_t>(engine::stat_layout(c.model).size);
  auto tf32_statistics = [&] {
    std::vector<double> s(size, 0.0);
    cuda->accumulate(c.model, data, Precision::tf32, s);
    return s;
  };
  const std::vector<double> whole = tf32_statistics();  // fused, one chunk
  for (const char* fused_or_not : {"1", "0"}) {
    SCOPED_TRACE(std::string("MIXLE_CUDA_FUSED=") + fused_or_not);
    ScopedEnv mode("MIXLE_CUDA_FUSED", fused_or_not);
    {
      ScopedEnv stream("MIXLE_CUDA_STREAM_ROWS", "256");
      expect_tf32_statistics_within_bound(*cuda, c);
      if (*fused_or_not == '1') EXPECT_EQ(tf32_statistics(), whole) << "streamed in chunks of 256 rows";
    }
    ScopedEnv cap("MIXLE_CUDA_CHUNK_ROWS", "384");
    expect_tf32_statistics_within_bound(*cuda, c);
    if (*fused_or_not == '1') EXPECT_EQ(tf32_statistics(), whole) << "resident in chunks of 384 rows";
  }
}

}  // namespace
}  // namespace mixle::test
