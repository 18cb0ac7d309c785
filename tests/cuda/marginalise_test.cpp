// `--missing marginalise` with the E-step on the device: incomplete rows reach the kernels with
// weight 0 and placeholders, and the host folds them in from their observed columns, so a fit on
// CUDA must match the CPU fit of the same rows (the host tests tie that fit to its oracles).
#include "common/kernel_compare.hpp"

#include <mixle/fit.hpp>

#include <limits>

namespace mixle::test {
namespace {

TEST(MarginaliseCuda, IncompleteRowsFitOnTheDeviceAsOnTheCpu) {
  MIXLE_CUDA_OR_SKIP(cuda);
  const Model truth = random_model(Family::gaussian_diag, 3, 3, 43);
  std::mt19937_64 rng(44);
  std::vector<double> values = sample_rows(truth, 1000, rng);
  for (std::size_t r : {0, 129, 130, 500, 999}) values[r * 3 + r % 3] = std::numeric_limits<double>::quiet_NaN();
  values[700 * 3] = values[700 * 3 + 2] = std::numeric_limits<double>::quiet_NaN();
  const Dataset data = Dataset::from_vector(values, 1000, 3);
  FitOptions o;
  o.components = 3;
  o.precision = "fp64";
  o.max_iter = 8;
  o.tol = 0;
  o.seed = 3;
  o.threads = 1;
  o.missing = "marginalise";
  const FitResult cpu = fit(data, o);
  o.device = "cuda";
  const FitResult gpu = fit(data, o);
  EXPECT_EQ(gpu.marginalised_rows, 6u);
  EXPECT_EQ(gpu.rows, 1000u);
  const Part &a = cpu.model.parts[0], &b = gpu.model.parts[0];
  for (std::size_t i = 0; i < a.mean.size(); ++i) EXPECT_NEAR(b.mean[i], a.mean[i], 1e-9 * (1.0 + std::abs(a.mean[i])));
  for (std::size_t i = 0; i < a.var.size(); ++i) EXPECT_NEAR(b.var[i], a.var[i], 1e-9 * (1.0 + a.var[i]));
  for (std::size_t k = 0; k < 3; ++k) EXPECT_NEAR(gpu.model.weights[k], cpu.model.weights[k], 1e-9);
  EXPECT_NEAR(gpu.final_mean_loglik, cpu.final_mean_loglik, 1e-9 * std::abs(cpu.final_mean_loglik));
}

}  // namespace
}  // namespace mixle::test
