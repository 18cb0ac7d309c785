// gaussian_diag: the CUDA kernels against the CPU oracle (through engine::Compute).
#include "common/kernel_compare.hpp"

#include <algorithm>
#include <cmath>

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

// K = 5 too: the fused pass's last statistics pair holds a padding component, whose
// responsibility is never normalised (NaN in a NaN row) and must not make the row fold.
TEST(GaussianDiagCuda, NanRowsReportedAsOnCpu) {
  MIXLE_CUDA_OR_SKIP(cuda);
  for (const std::size_t K : {4u, 5u}) {
    const Model model = random_model(Family::gaussian_diag, K, 3, 11);
    std::mt19937_64 rng(12);
    std::vector<double> values = sample_rows(model, 400, rng);
    for (std::size_t row : {5u, 130u, 399u}) values[row * 3 + 1] = std::numeric_limits<double>::quiet_NaN();
    compare_kernels(*cuda, model, values, 400, DType::f32, Precision::fp32, kFp32);
  }
}

// TF32 (explicit opt-in): the log-densities are expanded about a centre c per dimension — the
// midpoint of the components' float means (kernels/cuda/tf32_expansion.cuh) — and the product
// rounds y², y (y = x − c) and the weights to 10-bit mantissas, so each expanded term h y²,
// −2hν y, h ν² (ν = m − c) carries ≈ 2⁻¹⁰ relative error and they cancel: the bound on a row's
// log-likelihood is 2⁻⁹·max_k Σ_d |h_kd|(y_d² + 2|ν_kd y_d| + ν_kd²) (factor 2 of margin; the
// log-sum-exp moves by at most the largest change of any L_k; docs/numerics.md bound (E)).
std::vector<double> tf32_row_bounds(const Model& model, const std::vector<double>& values, std::size_t N) {
  const Part& p = model.parts[0];
  const std::size_t K = model.components(), D = model.columns();
  std::vector<double> centre(D);
  for (std::size_t d = 0; d < D; ++d) {
    float lo = INFINITY, hi = -INFINITY;
    for (std::size_t k = 0; k < K; ++k) {
      lo = std::min(lo, static_cast<float>(p.mean[k * D + d]));
      hi = std::max(hi, static_cast<float>(p.mean[k * D + d]));
    }
    centre[d] = 0.5f * lo + 0.5f * hi;
  }
  std::vector<double> bounds(N);
  for (std::size_t n = 0; n < N; ++n) {
    double worst = 0.0;
    for (std::size_t k = 0; k < K; ++k) {
      double s = 0.0;
      for (std::size_t d = 0; d < D; ++d) {
        const double y = values[n * D + d] - centre[d], nu = p.mean[k * D + d] - centre[d];
        s += 0.5 / p.var[k * D + d] * (y * y + 2 * std::abs(nu * y) + nu * nu);
      }
      worst = std::max(worst, s);
    }
    bounds[n] = std::ldexp(worst, -9);
  }
  return bounds;
}

/// Score (the cuBLAS GEMM) row by row and accumulate (the fused kernel's tensor cores) in sum
/// against the CPU's fp32, within the bound; the bound's largest row is returned.
double expect_tf32_within_expansion_bound(engine::Compute& cuda, const Model& model, const std::vector<double>& values,
                                          std::size_t N) {
  const std::size_t K = model.components(), D = model.columns();
  const Dataset data = Dataset::from_vector(std::vector<float>(values.begin(), values.end()), N, D);
  auto cpu = engine::make_cpu_compute(1);
  std::vector<double> ll_cpu(N, std::nan("")), ll_gpu(N, std::nan("")), r_gpu(N * K, std::nan(""));
  cpu->score(model, data, Precision::fp32, ll_cpu.data(), nullptr);
  cuda.score(model, data, Precision::tf32, ll_gpu.data(), r_gpu.data());
  const std::vector<double> bound = tf32_row_bounds(model, values, N);
  double sum_bound = 0.0;
  for (std::size_t n = 0; n < N; ++n) {
    EXPECT_LE(std::abs(ll_gpu[n] - ll_cpu[n]), bound[n]) << "row " << n;
    double total = 0.0;
    for (std::size_t k = 0; k < K; ++k) total += r_gpu[n * K + k];
    EXPECT_NEAR(total, 1.0, 1e-5) << "row " << n << ": responsibilities must sum to 1";
    sum_bound += bound[n] + 1e-6 * std::abs(ll_cpu[n]);
  }
  const std::size_t size = static_cast<std::size_t>(engine::stat_layout(model).size);
  std::vector<double> s_cpu(size, 0.0), s_gpu(size, 0.0);
  cpu->accumulate(model, data, Precision::fp32, s_cpu);
  cuda.accumulate(model, data, Precision::tf32, s_gpu);
  EXPECT_EQ(s_gpu[1], s_cpu[1]) << "rows folded in";
  EXPECT_NEAR(s_gpu[0], s_cpu[0], sum_bound) << "Σ log-likelihood of the fused pass";
  return *std::max_element(bound.begin(), bound.end());
}

TEST(GaussianDiagCuda, Tf32LogLikelihoodWithinExpansionBound) {
  MIXLE_CUDA_OR_SKIP(cuda);
  constexpr std::size_t K = 64, D = 32, N = 2000;
  const Model model = random_model(Family::gaussian_diag, K, D, 21);
  std::mt19937_64 rng(22);
  expect_tf32_within_expansion_bound(*cuda, model, sample_rows(model, N, rng), N);
}

// The same mixture moved 1e4 from the origin (σ near 1): about the centre the bound, and the
// error, are what they are near the origin; expanded about 0 the error would be ≈ 2⁻¹¹·h·x² per
// term, 10⁵ nats and more, so this fails for a kernel that does not centre.
TEST(GaussianDiagCuda, Tf32ExpansionAboutTheCentreKeepsFarMixturesAccurate) {
  MIXLE_CUDA_OR_SKIP(cuda);
  constexpr std::size_t K = 16, D = 24, N = 700;
  Model model = random_model(Family::gaussian_diag, K, D, 23);
  std::mt19937_64 rng(24);
  std::vector<double> values = sample_rows(model, N, rng);
  for (double& m : model.parts[0].mean) m += 1e4;
  for (double& v : values) v += 1e4;
  EXPECT_LT(expect_tf32_within_expansion_bound(*cuda, model, values, N), 50.0);
}

}  // namespace
}  // namespace mixle::test
