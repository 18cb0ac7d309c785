// How the CUDA backend moves rows: resident data in several chunks, bad rows spread over chunks,
// residency kept across passes, and the TF32 path's statistics and chunking — on a GPU or on the
// simulator (the residency test needs the simulator's configurable device memory).
#include "common/backend_compare.hpp"
#include "kernels/cuda/chunk_plan.hpp"

#if MIXLE_CUDA_SIM
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
    // compare_backends checks the counts and the listed rows against the CPU exactly.
    compare_backends(*cuda, model, values, rows, DType::f32, Precision::fp32, kDiagFp32);
    compare_backends(*cuda, model, values, rows, DType::f64, Precision::fp64, kDiagFp64);
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

Tf32Check tf32_case() {
  Tf32Check c{random_model(Family::gaussian_diag, 16, 24, 61), {}, 1500};
  std::mt19937_64 rng(62);
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

TEST(CudaTf32, ChunkingMovesStatisticsOnlyWithinTheBound) {
  MIXLE_CUDA_OR_SKIP(cuda);
  const Tf32Check c = tf32_case();
  {
    ScopedEnv stream("MIXLE_CUDA_STREAM_ROWS", "256");
    expect_tf32_statistics_within_bound(*cuda, c);
  }
  ScopedEnv cap("MIXLE_CUDA_CHUNK_ROWS", "384");
  expect_tf32_statistics_within_bound(*cuda, c);
}

}  // namespace
}  // namespace mixle::test
