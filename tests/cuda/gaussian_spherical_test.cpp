// gaussian_spherical on CUDA: it has no kernel of its own — the engine packs it for
// gaussian_diag's kernels — so these check that packing and the statistics' M-step path against
// the CPU oracle (through engine::Compute), resident and streamed.
#include "common/kernel_compare.hpp"

namespace mixle::test {
namespace {

using engine::Precision;

// gaussian_diag's bounds (tests/cuda/gaussian_diag_test.cpp): the same kernels, in the same order.
constexpr Tolerance kFp32{2e-5, 1e-5};
constexpr Tolerance kFp64{1e-13, 1e-13};

TEST(GaussianSphericalCuda, MatchesCpu) {
  MIXLE_CUDA_OR_SKIP(cuda);
  for (const Case& c :
       {Case{1037, 1, 1, 0, DType::f32, Precision::fp32}, Case{555, 37, 6, 0, DType::f32, Precision::fp32},
        Case{129, 5, 40, 0, DType::f64, Precision::fp32}})
    run_case(*cuda, Family::gaussian_spherical, c, kFp32);
  run_case(*cuda, Family::gaussian_spherical, Case{517, 9, 11, 0, DType::f64, Precision::fp64}, kFp64);
}

TEST(GaussianSphericalCuda, StreamedChunksMatchCpu) {
  MIXLE_CUDA_OR_SKIP(cuda);
  ScopedEnv stream("MIXLE_CUDA_STREAM_ROWS", "128");
  run_case(*cuda, Family::gaussian_spherical, Case{901, 3, 4, 0, DType::f32, Precision::fp32}, kFp32);
}

TEST(GaussianSphericalCuda, GivenResponsibilitiesMatchCpu) {
  MIXLE_CUDA_OR_SKIP(cuda);
  const Model model = random_model(Family::gaussian_spherical, 6, 5, 51);
  std::mt19937_64 rng(52);
  compare_given(*cuda, model, sample_rows(model, 389, rng), 389, kFp64);
}

}  // namespace
}  // namespace mixle::test
