// exponential: the CUDA kernels against the CPU oracle (through engine::Compute).
#include "common/kernel_compare.hpp"

namespace mixle::test {
namespace {

using engine::Precision;

// fp32: L adds −λx (one sign) to log λ terms in the CPU's order: D·2⁻²⁴·|L| worst case,
// 1.5e-5 at D = 256. Sums: ≤ 128 float terms, 128·2⁻²⁴.
constexpr Tolerance kFp32{2e-5, 1e-5};
constexpr Tolerance kFp64{1e-13, 1e-13};

TEST(ExponentialCuda, MatchesCpuFp32) {
  MIXLE_CUDA_OR_SKIP(cuda);
  for (const Case& c :
       {Case{1037, 1, 1, 0, DType::f32, Precision::fp32}, Case{555, 37, 6, 0, DType::f32, Precision::fp32},
        Case{200, 1024, 3, 0, DType::f32, Precision::fp32}, Case{129, 5, 256, 0, DType::f64, Precision::fp32}})
    run_case(*cuda, Family::exponential, c, kFp32);
}

TEST(ExponentialCuda, MatchesCpuFp64) {
  MIXLE_CUDA_OR_SKIP(cuda);
  run_case(*cuda, Family::exponential, Case{517, 9, 11, 0, DType::f64, Precision::fp64}, kFp64);
}

TEST(ExponentialCuda, StreamedChunksMatchCpu) {
  MIXLE_CUDA_OR_SKIP(cuda);
  ScopedEnv stream("MIXLE_CUDA_STREAM_ROWS", "128");
  run_case(*cuda, Family::exponential, Case{901, 3, 4, 0, DType::f32, Precision::fp32}, kFp32);
}

TEST(ExponentialCuda, ResidentAndStreamedStatisticsBitIdentical) {
  MIXLE_CUDA_OR_SKIP(cuda);
  expect_chunking_invariant(*cuda, Family::exponential, Case{1037, 6, 5, 0, DType::f32, Precision::fp32}, 200);
  expect_chunking_invariant(*cuda, Family::exponential, Case{1037, 6, 5, 0, DType::f64, Precision::fp64}, 300);
}

TEST(ExponentialCuda, GivenResponsibilitiesMatchCpu) {
  MIXLE_CUDA_OR_SKIP(cuda);
  const Model model = random_model(Family::exponential, 6, 5, 51);
  std::mt19937_64 rng(52);
  compare_given(*cuda, model, sample_rows(model, 389, rng), 389, kFp64);
}

}  // namespace
}  // namespace mixle::test
