// gaussian_full: the CUDA kernels against the CPU oracle (through engine::Compute).
#include "common/kernel_compare.hpp"

#include <utility>

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

// The packed second-moment kernel (float, D ≤ 64: the default there) against the region kernel
// (MIXLE_CUDA_FULL_STATS=region): per entry the same operations in the same order, so the same
// bits. The shapes cover one component a block (D = 64, K = 1), blocks of several components with
// a last one part full (D = 5: 40 a block, K = 45; D = 16: 21 a block, K = 23; D = 33: 5 a block,
// K = 7; D = 64: 3 a block, K = 5), ragged column blocks (D = 5, 33), slots of six sub-blocks
// (D = 64, K = 5: the partials' budget makes slots of 768 rows) and a last tile of 13 rows. Three
// rows carry a NaN: they are NaN rows (r = 0), which neither kernel may fold.
TEST(GaussianFullCuda, PackedAndRegionStatisticsBitIdentical) {
  MIXLE_CUDA_OR_SKIP(cuda);
  constexpr std::size_t rows = 1037;
  for (const auto& [K, D] :
       std::vector<std::pair<std::size_t, std::size_t>>{{1, 64}, {45, 5}, {23, 16}, {7, 33}, {5, 64}}) {
    SCOPED_TRACE("K=" + std::to_string(K) + " D=" + std::to_string(D));
    const Model model = random_model(Family::gaussian_full, K, D, K * 100 + D);
    std::mt19937_64 rng(D);
    std::vector<double> values = sample_rows(model, rows, rng);
    for (std::size_t row : {3u, 130u, 1036u}) values[row * D + D / 2] = std::numeric_limits<double>::quiet_NaN();
    const Dataset data = Dataset::from_vector(std::vector<float>(values.begin(), values.end()), rows, D);
    const std::size_t size = static_cast<std::size_t>(engine::stat_layout(model).size);
    std::vector<double> packed(size, 0.0), region(size, 0.0);
    EXPECT_EQ(cuda->accumulate(model, data, Precision::fp32, packed).nan_rows, 3);
    {
      ScopedEnv variant("MIXLE_CUDA_FULL_STATS", "region");
      cuda->accumulate(model, data, Precision::fp32, region);
    }
    for (std::size_t j = 0; j < size; ++j) {
      ASSERT_TRUE(std::isfinite(packed[j])) << "entry " << j;
      ASSERT_EQ(std::memcmp(&packed[j], &region[j], sizeof(double)), 0)
          << "entry " << j << ": packed " << packed[j] << ", region " << region[j];
    }
  }
}

// The staged log-density (default where P_k and the block's d fit shared memory) against the
// row-wise one that reads P from global memory: per output the same operations in the same order.
TEST(GaussianFullCuda, StagedAndRowwiseLogDensityAgree) {
  MIXLE_CUDA_OR_SKIP(cuda);
  for (const Case& c : {Case{1037, 1, 1, 0, DType::f32, Precision::fp32},   // one output, 128-row blocks
                        Case{333, 7, 17, 0, DType::f32, Precision::fp32},   // a second, ragged group of outputs
                        Case{300, 3, 64, 0, DType::f32, Precision::fp32},   // four groups, 128-row blocks
                        Case{200, 2, 96, 0, DType::f32, Precision::fp32},   // six groups, 64-row blocks
                        Case{150, 2, 112, 0, DType::f32, Precision::fp32},  // seven groups, 32-row blocks
                        Case{517, 5, 33, 0, DType::f64, Precision::fp64},   // double: 128-row blocks
                        Case{200, 2, 70, 0, DType::f64, Precision::fp64}})  // double past D = 69: row-wise either way
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
