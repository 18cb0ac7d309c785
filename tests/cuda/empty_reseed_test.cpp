// `--empty reseed` with the E-step on the device: the reseed's two passes score rows on the CPU
// (fp64), so a fit on CUDA must reseed the same rows and end at the CPU fit's model.
#include "common/kernel_compare.hpp"

#include <mixle/fit.hpp>

#include <algorithm>

namespace mixle::test {
namespace {

TEST(EmptyReseedCuda, FitOnTheDeviceReseedsAsTheCpuFitDoes) {
  MIXLE_CUDA_OR_SKIP(cuda);
  // Clusters at (0, 0), (8, 0) and (−40, 5), 300 rows each; the start has components on the
  // first two and component 2 far from every row, so it captures none at iteration 1.
  std::mt19937_64 rng(9);
  std::normal_distribution<double> noise(0.0, 1.0);
  std::vector<double> values;
  for (const auto& [x, y] : {std::pair{0.0, 0.0}, std::pair{8.0, 0.0}, std::pair{-40.0, 5.0}})
    for (int r = 0; r < 300; ++r) values.insert(values.end(), {x + noise(rng), y + noise(rng)});
  const Dataset data = Dataset::from_vector(values, 900, 2);
  FitOptions o;
  o.init = InitMethod::model;
  o.init_model = model_from_json(R"({"format":"mixle-model","version":1,"weights":[0.5,0.5,0],"parts":[
      {"family":"gaussian_diag","columns":[0,2],"mean":[[0,0],[8,0],[1000,1000]],"var":[[1,1],[1,1],[1,1]]}]})");
  o.precision = "fp64";
  o.max_iter = 8;
  o.tol = 0;
  o.threads = 1;
  o.empty = "reseed";
  const FitResult cpu = fit(data, o);
  o.device = "cuda";
  const FitResult gpu = fit(data, o);
  ASSERT_FALSE(gpu.warnings.empty());
  EXPECT_NE(gpu.warnings[0].find("component 2 captured no rows at iteration 1; reseeded from the 300"),
            std::string::npos)
      << gpu.warnings[0];
  EXPECT_NEAR(gpu.model.weights[2], 1.0 / 3.0, 1e-3);
  for (std::size_t k = 0; k < 3; ++k) EXPECT_NEAR(gpu.model.weights[k], cpu.model.weights[k], 1e-9) << k;
  for (std::size_t i = 0; i < cpu.model.parts[0].mean.size(); ++i)
    EXPECT_NEAR(gpu.model.parts[0].mean[i], cpu.model.parts[0].mean[i],
                1e-9 * (1.0 + std::abs(cpu.model.parts[0].mean[i])))
        << i;
  for (std::size_t i = 0; i < cpu.model.parts[0].var.size(); ++i)
    EXPECT_NEAR(gpu.model.parts[0].var[i], cpu.model.parts[0].var[i], 1e-9 * (1.0 + cpu.model.parts[0].var[i])) << i;
}

}  // namespace
}  // namespace mixle::test
