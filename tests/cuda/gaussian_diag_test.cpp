// gaussian_diag: the CUDA kernels against the CPU oracle (through engine::Compute).
#include "common/kernel_compare.hpp"

namespace mixle::test {
namespace {

using engine::Precision;

// fp32: both kernel sets add h·(x − m)² dim by dim in the same order onto log_const; they differ by
// FMA contraction (nvcc fuses) and the log-sum-exp's summation order. All terms share a sign, so
// the worst case is D·2⁻²⁴·|L| = 1.5e-5·|L| at D = 256. Sums: ≤ 128 float terms, 128·2⁻²⁴.
constexpr Tolerance kFp32{2e-5, 1e-5};
// fp64: the same reasoning with 2⁻⁵³: 256·1.1e-16 = 2.8e-14; 128·1.1e-16 = 1.4e-14.
constexpr Tolerance kFp64{1e-13, 1e-13};

TEST(GaussianDiagCuda, MatchesCpuFp32) {
  MIXLE_CUDA_OR_SKIP(cuda);
  for (const Case& c :
       {Case{1037, 1, 1, 0, DType::f32, Precision::fp32}, Case{777, 37, 5, 0, DType::f32, Precision::fp32},
        Case{300, 1024, 3, 0, DType::f32, Precision::fp32}, Case{129, 7, 256, 0, DType::f64, Precision::fp32}})
    run_case(*cuda, Family::gaussian_diag, c, kFp32);
}

TEST(GaussianDiagCuda, MatchesCpuFp64) {
  MIXLE_CUDA_OR_SKIP(cuda);
  for (const Case& c :
       {Case{1037, 37, 33, 0, DType::f64, Precision::fp64}, Case{333, 1024, 2, 0, DType::f32, Precision::fp64}})
    run_case(*cuda, Family::gaussian_diag, c, kFp64);
}

TEST(GaussianDiagCuda, StreamedChunksMatchCpu) {
  MIXLE_CUDA_OR_SKIP(cuda);
  ScopedEnv stream("MIXLE_CUDA_STREAM_ROWS", "256");  // 1037 rows → 5 chunks, the last partial
  run_case(*cuda, Family::gaussian_diag, Case{1037, 5, 7, 0, DType::f32, Precision::fp32}, kFp32);
  run_case(*cuda, Family::gaussian_diag, Case{1037, 5, 7, 0, DType::f64, Precision::fp64}, kFp64);
}

TEST(GaussianDiagCuda, ResidentAndStreamedStatisticsBitIdentical) {
  MIXLE_CUDA_OR_SKIP(cuda);
  expect_chunking_invariant(*cuda, Family::gaussian_diag, Case{1037, 6, 5, 0, DType::f32, Precision::fp32}, 200);
  expect_chunking_invariant(*cuda, Family::gaussian_diag, Case{1037, 6, 5, 0, DType::f64, Precision::fp64}, 300);
}

// The tiled statistics kernel (default) against the generic one-entry-per-thread kernel: per
// entry they do the same operations in the same order (bound in expect_variants_agree). Models
// the fused pass takes (float32, K ≤ 256, D ≤ 64) run it in both runs; the others reach the
// tiled kernel.
TEST(GaussianDiagCuda, TiledAndGenericStatisticsAgree) {
  MIXLE_CUDA_OR_SKIP(cuda);
  for (const Case& c :
       {Case{1037, 1, 1, 0, DType::f32, Precision::fp32}, Case{777, 37, 5, 0, DType::f32, Precision::fp32},
        Case{300, 1024, 3, 0, DType::f32, Precision::fp32},  // 8 component tiles
        Case{401, 301, 7, 0, DType::f32, Precision::fp32},   // 3 tiles, the last of 45: odd K, padded D
        Case{129, 7, 256, 0, DType::f64, Precision::fp32},   // 4 dim tiles
        Case{1037, 37, 33, 0, DType::f64, Precision::fp64}})
    expect_variants_agree(*cuda, Family::gaussian_diag, c, "MIXLE_CUDA_DIAG_STATS");
}

// The fused single-kernel E-step (default for one float32 diag part with K ≤ 256, D ≤ 64,
// ⌈K/2⌉·⌈D/4⌉ ≤ 256) against the unfused kernels (MIXLE_CUDA_FUSED=0): same operations, same order.
// Sizes at the eligibility edges; the fp32 CPU comparisons above run fused for their
// eligible cases (K=1/D=1, K=37/D=5) and the bad-row test too.
TEST(GaussianDiagCuda, FusedAndUnfusedAgree) {
  MIXLE_CUDA_OR_SKIP(cuda);
  for (const Case& c :
       {Case{1037, 1, 1, 0, DType::f32, Precision::fp32}, Case{777, 37, 5, 0, DType::f64, Precision::fp32},
        Case{1037, 64, 32, 0, DType::f32, Precision::fp32},  // K·D = 2048
        Case{555, 256, 8, 0, DType::f32, Precision::fp32},   // K = 256: tiles of 16 rows
        Case{401, 31, 62, 0, DType::f32, Precision::fp32},   // 16 × 16 blocks, odd K, padded D
        Case{300, 5, 64, 0, DType::f32, Precision::fp32}})   // D = 64
    expect_variants_agree(*cuda, Family::gaussian_diag, c, "MIXLE_CUDA_FUSED", "0");
}

TEST(GaussianDiagCuda, FusedMatchesCpuAtEligibilityEdges) {
  MIXLE_CUDA_OR_SKIP(cuda);
  for (const Case& c :
       {Case{1037, 64, 32, 0, DType::f32, Precision::fp32}, Case{555, 256, 8, 0, DType::f32, Precision::fp32},
        Case{401, 31, 62, 0, DType::f32, Precision::fp32}, Case{300, 5, 64, 0, DType::f32, Precision::fp32}})
    run_case(*cuda, Family::gaussian_diag, c, kFp32);
}

TEST(GaussianDiagCuda, GivenResponsibilitiesMatchCpu) {
  MIXLE_CUDA_OR_SKIP(cuda);
  const Model model = random_model(Family::gaussian_diag, 9, 13, 7);
  std::mt19937_64 rng(8);
  compare_given(*cuda, model, sample_rows(model, 517, rng), 517, kFp64);
}

TEST(GaussianDiagCuda, NanRowsReportedAsOnCpu) {
  MIXLE_CUDA_OR_SKIP(cuda);
  const Model model = random_model(Family::gaussian_diag, 4, 3, 11);
  std::mt19937_64 rng(12);
  std::vector<double> values = sample_rows(model, 400, rng);
  for (std::size_t row : {5u, 130u, 399u}) values[row * 3 + 1] = std::numeric_limits<double>::quiet_NaN();
  compare_kernels(*cuda, model, values, 400, DType::f32, Precision::fp32, kFp32);
}

// TF32 (explicit opt-in): the GEMM rounds x², x and the weights to 10-bit mantissas, so each
// expanded term h x², −2hm x carries ≈ 2⁻¹⁰ relative error and they cancel: the bound on a row's
// log-likelihood is 2⁻⁹·max_k Σ_d |h_kd|(x_d² + 2|m_kd x_d| + m_kd²) (factor 2 of margin; the
// log-sum-exp moves by at most the largest change of any L_k; docs/design.md §6).
TEST(GaussianDiagCuda, Tf32LogLikelihoodWithinExpansionBound) {
  MIXLE_CUDA_OR_SKIP(cuda);
  constexpr std::size_t K = 64, D = 32, N = 2000;
  const Model model = random_model(Family::gaussian_diag, K, D, 21);
  std::mt19937_64 rng(22);
  const std::vector<double> values = sample_rows(model, N, rng);
  const Dataset data = Dataset::from_vector(std::vector<float>(values.begin(), values.end()), N, D);
  std::vector<double> ll_cpu(N, std::nan("")), ll_gpu(N, std::nan("")), r_gpu(N * K, std::nan(""));
  engine::make_cpu_compute(1)->score(model, data, Precision::fp32, ll_cpu.data(), nullptr);
  cuda->score(model, data, Precision::tf32, ll_gpu.data(), r_gpu.data());
  const Part& p = model.parts[0];
  for (std::size_t n = 0; n < N; ++n) {
    double worst = 0.0;
    for (std::size_t k = 0; k < K; ++k) {
      double s = 0.0;
      for (std::size_t d = 0; d < D; ++d) {
        const double x = values[n * D + d], m = p.mean[k * D + d], h = 0.5 / p.var[k * D + d];
        s += h * (x * x + 2 * std::abs(m * x) + m * m);
      }
      worst = std::max(worst, s);
    }
    ASSERT_LE(std::abs(ll_gpu[n] - ll_cpu[n]), std::ldexp(1.0, -9) * worst) << "row " << n;
    double total = 0.0;
    for (std::size_t k = 0; k < K; ++k) total += r_gpu[n * K + k];
    ASSERT_NEAR(total, 1.0, 1e-5) << "row " << n << ": responsibilities must sum to 1";
  }
}

}  // namespace
}  // namespace mixle::test
