// gaussian_full: the CUDA kernels against the CPU oracle (through engine::Compute).
#include "common/kernel_compare.hpp"

namespace mixle::test {
namespace {

using engine::Precision;

// fp32: y_i = Σ_{j≤i} P_ij (x_j − m_j) and L −= ½ y_i², in the CPU's order; the backends differ
// by FMA contraction. The terms of y mix signs, so the error is relative to Σ|P_ij (x_j − m_j)|
// rather than |y|: with the well-conditioned covariances drawn here (cov = AAᵀ/D + ½I) that is
// within a small factor of |y|, and the worst case D·2⁻²⁴ at D = 256 is 1.5e-5; 4e-5 leaves ×2.5.
// Sums: ≤ 128 float terms, 128·2⁻²⁴.
constexpr Tolerance kFp32{4e-5, 1e-5};
// fp64: the same reasoning with 2⁻⁵³.
constexpr Tolerance kFp64{2e-13, 1e-13};

TEST(GaussianFullCuda, MatchesCpuFp32) {
  MIXLE_CUDA_OR_SKIP(cuda);
  for (const Case& c :
       {Case{1037, 1, 1, 0, DType::f32, Precision::fp32}, Case{333, 1024, 2, 0, DType::f32, Precision::fp32},
        Case{517, 17, 33, 0, DType::f64, Precision::fp32}, Case{300, 3, 256, 0, DType::f32, Precision::fp32}})
    run_case(*cuda, Family::gaussian_full, c, kFp32);
}

TEST(GaussianFullCuda, MatchesCpuFp64) {
  MIXLE_CUDA_OR_SKIP(cuda);
  for (const Case& c :
       {Case{517, 17, 33, 0, DType::f64, Precision::fp64}, Case{200, 1024, 3, 0, DType::f64, Precision::fp64}})
    run_case(*cuda, Family::gaussian_full, c, kFp64);
}

TEST(GaussianFullCuda, StreamedChunksMatchCpu) {
  MIXLE_CUDA_OR_SKIP(cuda);
  ScopedEnv stream("MIXLE_CUDA_STREAM_ROWS", "200");  // rounded up to 256: 700 rows → 3 chunks
  run_case(*cuda, Family::gaussian_full, Case{700, 4, 6, 0, DType::f32, Precision::fp32}, kFp32);
}

TEST(GaussianFullCuda, ResidentAndStreamedStatisticsBitIdentical) {
  MIXLE_CUDA_OR_SKIP(cuda);
  expect_chunking_invariant(*cuda, Family::gaussian_full, Case{1037, 6, 5, 0, DType::f32, Precision::fp32}, 200);
  expect_chunking_invariant(*cuda, Family::gaussian_full, Case{1037, 6, 5, 0, DType::f64, Precision::fp64}, 300);
}

// The tiled second-moment kernel (default) against the generic one: same per-entry arithmetic.
TEST(GaussianFullCuda, TiledAndGenericStatisticsAgree) {
  MIXLE_CUDA_OR_SKIP(cuda);
  for (const Case& c :
       {Case{1037, 1, 1, 0, DType::f32, Precision::fp32}, Case{333, 37, 5, 0, DType::f32, Precision::fp32},
        Case{300, 3, 130, 0, DType::f32, Precision::fp32},  // 3×3 regions, ragged edge
        Case{517, 17, 33, 0, DType::f64, Precision::fp64}})
    expect_variants_agree(*cuda, Family::gaussian_full, c, "MIXLE_CUDA_FULL_STATS");
}

// The staged log-density (default where P_k and the block's d fit shared memory) against the
// row-wise one that reads P from global memory: per output the same operations in the same order.
TEST(GaussianFullCuda, StagedAndRowwiseLogDensityAgree) {
  MIXLE_CUDA_OR_SKIP(cuda);
  for (const Case& c : {Case{1037, 1, 1, 0, DType::f32, Precision::fp32},   // one output, 128-row blocks
                        Case{333, 7, 17, 0, DType::f32, Precision::fp32},   // a second, ragged group of outputs
                        Case{300, 3, 64, 0, DType::f32, Precision::fp32},   // four groups, 64-row blocks
                        Case{517, 5, 33, 0, DType::f64, Precision::fp64},   // double: 64-row blocks
                        Case{200, 2, 64, 0, DType::f64, Precision::fp64}})  // double past D = 63: row-wise either way
    expect_variants_agree(*cuda, Family::gaussian_full, c, "MIXLE_CUDA_FULL_DENSITY", "rowwise");
}

TEST(GaussianFullCuda, GivenResponsibilitiesMatchCpu) {
  MIXLE_CUDA_OR_SKIP(cuda);
  const Model model = random_model(Family::gaussian_full, 5, 7, 31);
  std::mt19937_64 rng(32);
  compare_given(*cuda, model, sample_rows(model, 300, rng), 300, kFp64);
}

}  // namespace
}  // namespace mixle::test
