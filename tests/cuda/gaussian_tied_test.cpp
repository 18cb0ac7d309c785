// gaussian_tied on CUDA: it has no kernel of its own — the engine packs it for gaussian_full's
// kernels, and its shared covariance is pooled in the host's M-step — so these check that packing
// against the CPU oracle (through engine::Compute) and a whole fit on the device against the CPU's.
#include "common/kernel_compare.hpp"

#include <mixle/fit.hpp>

namespace mixle::test {
namespace {

using engine::Precision;

// gaussian_full's bounds (tests/cuda/gaussian_full_test.cpp): the same kernels, in the same order.
constexpr Tolerance kFp32{4e-5, 1e-5};
constexpr Tolerance kFp64{2e-13, 1e-13};

TEST(GaussianTiedCuda, MatchesCpu) {
  MIXLE_CUDA_OR_SKIP(cuda);
  run_case(*cuda, Family::gaussian_tied, Case{555, 7, 5, 0, DType::f32, Precision::fp32}, kFp32);
  run_case(*cuda, Family::gaussian_tied, Case{517, 9, 6, 0, DType::f64, Precision::fp64}, kFp64);
}

TEST(GaussianTiedCuda, FitOnTheDeviceEqualsTheCpuFit) {
  MIXLE_CUDA_OR_SKIP(cuda);
  const Model truth = random_model(Family::gaussian_tied, 4, 3, 71);
  std::mt19937_64 rng(72);
  const std::vector<double> values = sample_rows(truth, 2000, rng);
  const Dataset data = Dataset::from_vector(values, 2000, 3);
  FitOptions o;
  o.components = 4;
  o.layout = "gaussian_tied";
  o.precision = "fp64";
  o.max_iter = 10;
  o.tol = 0;
  o.seed = 2;
  o.threads = 1;
  const Model cpu = fit(data, o).model;
  o.device = "cuda";
  const Model gpu = fit(data, o).model;
  ASSERT_EQ(gpu.parts.at(0).family, Family::gaussian_tied);
  for (std::size_t i = 0; i < cpu.parts[0].cov.size(); ++i)
    EXPECT_NEAR(gpu.parts[0].cov[i], cpu.parts[0].cov[i], 1e-9 * (1.0 + std::abs(cpu.parts[0].cov[i]))) << i;
  for (std::size_t i = 0; i < cpu.parts[0].mean.size(); ++i)
    EXPECT_NEAR(gpu.parts[0].mean[i], cpu.parts[0].mean[i], 1e-9 * (1.0 + std::abs(cpu.parts[0].mean[i]))) << i;
  for (std::size_t k = 1; k < 4; ++k) EXPECT_EQ(gpu.parts[0].cov[k * 9 + 4], gpu.parts[0].cov[4]);
}

}  // namespace
}  // namespace mixle::test
