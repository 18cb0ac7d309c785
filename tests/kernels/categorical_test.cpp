// categorical: the CUDA backend against the CPU oracle (through engine::Compute).
#include "backend_compare.hpp"

namespace mixle::test {
namespace {

using engine::Precision;

// fp32: L adds D table entries (log θ < 0, one sign) in the CPU's order: worst case D·2⁻²⁴·|L|,
// 1.5e-5 at D = 256; the counts are sums of ≤ 128 float responsibilities, 128·2⁻²⁴.
constexpr Tolerance kFp32{2e-5, 1e-5};
constexpr Tolerance kFp64{1e-13, 1e-13};

TEST(CategoricalCuda, MatchesCpuFp32) {
  MIXLE_CUDA_OR_SKIP(cuda);
  for (const Case& c : {Case{1037, 1, 1, 2, DType::f32, Precision::fp32},
                        Case{555, 37, 4, 5, DType::f32, Precision::fp32},
                        Case{200, 1024, 2, 3, DType::f32, Precision::fp32},
                        Case{129, 6, 256, 3, DType::f64, Precision::fp32}})
    run_case(*cuda, Family::categorical, c, kFp32);
}

TEST(CategoricalCuda, MatchesCpuFp64) {
  MIXLE_CUDA_OR_SKIP(cuda);
  run_case(*cuda, Family::categorical, Case{517, 9, 3, 7, DType::f64, Precision::fp64}, kFp64);
}

TEST(CategoricalCuda, StreamedChunksMatchCpu) {
  MIXLE_CUDA_OR_SKIP(cuda);
  ScopedEnv stream("MIXLE_CUDA_STREAM_ROWS", "128");
  run_case(*cuda, Family::categorical, Case{1000, 3, 2, 4, DType::f32, Precision::fp32}, kFp32);
}

TEST(CategoricalCuda, ResidentAndStreamedStatisticsBitIdentical) {
  MIXLE_CUDA_OR_SKIP(cuda);
  expect_chunking_invariant(*cuda, Family::categorical, Case{1037, 6, 5, 4, DType::f32, Precision::fp32}, 200);
  expect_chunking_invariant(*cuda, Family::categorical, Case{1037, 6, 5, 4, DType::f64, Precision::fp64}, 300);
}

TEST(CategoricalCuda, GivenResponsibilitiesMatchCpu) {
  MIXLE_CUDA_OR_SKIP(cuda);
  const Model model = random_model(Family::categorical, 6, 5, 41, 4);
  std::mt19937_64 rng(42);
  compare_given(*cuda, model, sample_rows(model, 389, rng), 389, kFp64);
}

}  // namespace
}  // namespace mixle::test
