// poisson: the CUDA kernels against the CPU oracle (through engine::Compute).
#include "common/kernel_compare.hpp"

namespace mixle::test {
namespace {

using engine::Precision;

// fp32: L adds x·log λ (mixed signs) and −Σλ, −Σ log x! in the CPU's order; counts up to ~20
// make the terms ~60 in size against |L| of the same order, so D·2⁻²⁴ relative to |L| (1.5e-5
// at D = 256) with a ×2 margin for the sign mix. Sums: ≤ 128 float terms, 128·2⁻²⁴.
constexpr Tolerance kFp32{3e-5, 1e-5};
constexpr Tolerance kFp64{1e-13, 1e-13};

TEST(PoissonCuda, MatchesCpuFp32) {
  MIXLE_CUDA_OR_SKIP(cuda);
  for (const Case& c :
       {Case{1037, 1, 1, 0, DType::f32, Precision::fp32}, Case{555, 37, 6, 0, DType::f32, Precision::fp32},
        Case{200, 1024, 3, 0, DType::f32, Precision::fp32}, Case{129, 5, 256, 0, DType::f64, Precision::fp32}})
    run_case(*cuda, Family::poisson, c, kFp32);
}

TEST(PoissonCuda, MatchesCpuFp64) {
  MIXLE_CUDA_OR_SKIP(cuda);
  run_case(*cuda, Family::poisson, Case{517, 9, 11, 0, DType::f64, Precision::fp64}, kFp64);
}

TEST(PoissonCuda, StreamedChunksMatchCpu) {
  MIXLE_CUDA_OR_SKIP(cuda);
  ScopedEnv stream("MIXLE_CUDA_STREAM_ROWS", "128");
  run_case(*cuda, Family::poisson, Case{901, 3, 4, 0, DType::f32, Precision::fp32}, kFp32);
}

TEST(PoissonCuda, ResidentAndStreamedStatisticsBitIdentical) {
  MIXLE_CUDA_OR_SKIP(cuda);
  expect_chunking_invariant(*cuda, Family::poisson, Case{1037, 6, 5, 0, DType::f32, Precision::fp32}, 200);
  expect_chunking_invariant(*cuda, Family::poisson, Case{1037, 6, 5, 0, DType::f64, Precision::fp64}, 300);
}

TEST(PoissonCuda, GivenResponsibilitiesMatchCpu) {
  MIXLE_CUDA_OR_SKIP(cuda);
  const Model model = random_model(Family::poisson, 6, 5, 51);
  std::mt19937_64 rng(52);
  compare_given(*cuda, model, sample_rows(model, 389, rng), 389, kFp64);
}

// Several parts in one model: a Gaussian, a Poisson (its per-row −log x! offset) and a
// Bernoulli part over consecutive columns, so part offsets and the row offset are exercised.
TEST(PoissonCuda, MixedPartsMatchCpu) {
  MIXLE_CUDA_OR_SKIP(cuda);
  constexpr std::size_t K = 11;
  std::mt19937_64 rng(61);
  Model model;
  model.weights = random_simplex(rng, K);
  model.parts.push_back(random_part(Family::gaussian_diag, K, 3, 0, rng));
  model.parts.push_back(random_part(Family::poisson, K, 2, 3, rng));
  model.parts.push_back(random_part(Family::bernoulli, K, 4, 5, rng));
  const std::vector<double> values = sample_rows(model, 611, rng);
  compare_kernels(*cuda, model, values, 611, DType::f32, Precision::fp32, kFp32);
  compare_kernels(*cuda, model, values, 611, DType::f64, Precision::fp64, kFp64);
}

}  // namespace
}  // namespace mixle::test
