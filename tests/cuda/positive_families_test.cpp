// gamma and lognormal: the CUDA kernels against the CPU oracle (through engine::Compute).
#include "common/kernel_compare.hpp"

namespace mixle::test {
namespace {

using engine::Precision;

// fp32: gamma adds (α−1)·log x − β·x (mixed signs, terms up to ~30 against |L| of that order)
// and lognormal a normal term of log x, each in the CPU's order, with logf on both sides: D·2⁻²⁴
// relative to |L| with a ×2 margin for the sign mix, as for poisson. Sums: ≤ 128 float terms.
constexpr Tolerance kFp32{3e-5, 1e-5};
constexpr Tolerance kFp64{1e-13, 1e-13};

class PositiveFamiliesCuda : public ::testing::TestWithParam<Family> {};

TEST_P(PositiveFamiliesCuda, MatchesCpuFp32) {
  MIXLE_CUDA_OR_SKIP(cuda);
  for (const Case& c :
       {Case{1037, 1, 1, 0, DType::f32, Precision::fp32}, Case{555, 37, 6, 0, DType::f32, Precision::fp32},
        Case{200, 300, 3, 0, DType::f32, Precision::fp32}, Case{129, 5, 64, 0, DType::f64, Precision::fp32}})
    run_case(*cuda, GetParam(), c, kFp32);
}

TEST_P(PositiveFamiliesCuda, MatchesCpuFp64) {
  MIXLE_CUDA_OR_SKIP(cuda);
  run_case(*cuda, GetParam(), Case{517, 9, 11, 0, DType::f64, Precision::fp64}, kFp64);
}

TEST_P(PositiveFamiliesCuda, StreamedChunksMatchCpu) {
  MIXLE_CUDA_OR_SKIP(cuda);
  ScopedEnv stream("MIXLE_CUDA_STREAM_ROWS", "128");
  run_case(*cuda, GetParam(), Case{901, 3, 4, 0, DType::f32, Precision::fp32}, kFp32);
}

TEST_P(PositiveFamiliesCuda, ResidentAndStreamedStatisticsBitIdentical) {
  MIXLE_CUDA_OR_SKIP(cuda);
  expect_chunking_invariant(*cuda, GetParam(), Case{1037, 6, 5, 0, DType::f32, Precision::fp32}, 200);
  expect_chunking_invariant(*cuda, GetParam(), Case{1037, 6, 5, 0, DType::f64, Precision::fp64}, 300);
}

TEST_P(PositiveFamiliesCuda, GivenResponsibilitiesMatchCpu) {
  MIXLE_CUDA_OR_SKIP(cuda);
  const Model model = random_model(GetParam(), 6, 5, 51);
  std::mt19937_64 rng(52);
  compare_given(*cuda, model, sample_rows(model, 389, rng), 389, kFp64);
}

INSTANTIATE_TEST_SUITE_P(Families, PositiveFamiliesCuda, ::testing::Values(Family::gamma, Family::lognormal),
                         [](const auto& info) { return std::string(family_name(info.param)); });

// Both next to the other families in one record: their row constants (lognormal's −Σ log x and
// poisson's −Σ log x!) add up in one per-row offset.
TEST(PositiveFamiliesCudaMixed, MixedPartsMatchCpu) {
  MIXLE_CUDA_OR_SKIP(cuda);
  constexpr std::size_t K = 7;
  std::mt19937_64 rng(71);
  Model model;
  model.weights = random_simplex(rng, K);
  model.parts.push_back(random_part(Family::lognormal, K, 2, 0, rng));
  model.parts.push_back(random_part(Family::poisson, K, 2, 2, rng));
  model.parts.push_back(random_part(Family::gamma, K, 3, 4, rng));
  model.parts.push_back(random_part(Family::gaussian_diag, K, 2, 7, rng));
  const std::vector<double> values = sample_rows(model, 611, rng);
  compare_kernels(*cuda, model, values, 611, DType::f32, Precision::fp32, kFp32);
  compare_kernels(*cuda, model, values, 611, DType::f64, Precision::fp64, kFp64);
}

}  // namespace
}  // namespace mixle::test
