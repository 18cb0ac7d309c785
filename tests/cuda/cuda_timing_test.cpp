// GPU timing of one EM E-step pass (accumulate) at the performance target sizes
// (docs/design.md §11), until `mixle bench` exists. DISABLED_ by default (minutes of host data
// generation and CPU-free but large work); scripts/gpu-check runs them with
// --gtest_also_run_disabled_tests. Each run checks what it timed: the statistics of the timed
// passes are bit-identical to the warm-up's, and the masses add up to the row count. Results are
// recorded as test properties (ms per pass and the % of the fp32 roofline of docs/design.md §11),
// which gtest writes to its JSON output.
#include "common/kernel_compare.hpp"

#include <chrono>
#include <cstdio>

namespace mixle::test {
namespace {

using engine::Precision;

/// Rows from a cheap generator (xorshift, sums of uniforms): the timing does not need a good
/// Gaussian, only realistic values, and 3·10⁸ draws from std::normal_distribution take minutes.
std::vector<float> cheap_rows(const Model& model, std::size_t rows) {
  const Part& p = model.parts[0];
  const std::size_t D = p.dims(), K = model.components();
  std::vector<float> x(rows * D);
  std::uint64_t s = 0x9E3779B97F4A7C15ull;
  auto next = [&s] {
    s ^= s << 13, s ^= s >> 7, s ^= s << 17;
    return static_cast<double>(s >> 11) * 0x1p-53;
  };
  for (std::size_t n = 0; n < rows; ++n) {
    const std::size_t k = static_cast<std::size_t>(next() * static_cast<double>(K)) % K;
    for (std::size_t d = 0; d < D; ++d) {
      const double z = (next() + next() + next() - 1.5) * 2.0;
      const double var = p.family == Family::gaussian_diag ? p.var[k * D + d] : p.cov[k * D * D + d * D + d];
      x[n * D + d] = static_cast<float>(p.mean[k * D + d] + std::sqrt(var) * z);
    }
  }
  return x;
}

void time_accumulate(Family family, std::size_t N, std::size_t D, std::size_t K, Precision precision,
                     double roofline_ms, int passes) {
  MIXLE_CUDA_OR_SKIP(cuda);
  const Model model = random_model(family, K, D, 2024);
  const std::vector<float> values = cheap_rows(model, N);
  const Dataset data = Dataset::from_vector(values, N, D);
  const std::size_t size = static_cast<std::size_t>(engine::stat_layout(model).size);
  std::vector<double> warm(size, 0.0);
  const auto t_up = std::chrono::steady_clock::now();
  cuda->accumulate(model, data, precision, warm);  // uploads the rows (resident) and warms up
  const double first_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t_up).count();
  double mass = 0.0;
  for (std::size_t k = 0; k < K; ++k) mass += warm[kernels::kStatHeader + k];
  EXPECT_NEAR(mass, static_cast<double>(N), 1e-4 * static_cast<double>(N));
  EXPECT_EQ(warm[1], static_cast<double>(N));
  double best = 1e300, total = 0.0;
  for (int i = 0; i < passes; ++i) {
    std::vector<double> stats(size, 0.0);
    const auto t0 = std::chrono::steady_clock::now();
    cuda->accumulate(model, data, precision, stats);
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    best = std::min(best, ms);
    total += ms;
    EXPECT_EQ(0, std::memcmp(stats.data(), warm.data(), size * sizeof(double))) << "pass " << i << " not bit-identical";
  }
  const double mean = total / passes;
  const char* fused = std::getenv("MIXLE_CUDA_FUSED");
  std::printf(
      "[timing] %s%s N=%zu D=%zu K=%zu %s: first %.2f ms, best %.3f ms, mean %.3f ms per pass; "
      "roofline %.2f ms -> %.1f%% of roofline (best)\n",
      family_name(family), fused && std::string(fused) == "0" ? " (unfused)" : "", N, D, K,
      engine::precision_name(precision), first_ms, best, mean, roofline_ms, 100.0 * roofline_ms / best);
  testing::Test::RecordProperty("best_ms", std::to_string(best));
  testing::Test::RecordProperty("mean_ms", std::to_string(mean));
  testing::Test::RecordProperty("first_ms", std::to_string(first_ms));
  testing::Test::RecordProperty("roofline_ms", std::to_string(roofline_ms));
  testing::Test::RecordProperty("percent_of_roofline", std::to_string(100.0 * roofline_ms / best));
}

// Case A of docs/design.md §11: target ≤ 3.8 ms fp32 (roofline 2.56 ms, FP32 SIMT 8NKD).
TEST(CudaTiming, DISABLED_GaussianDiagCaseAFp32) {
  time_accumulate(Family::gaussian_diag, 10'000'000, 32, 64, Precision::fp32, 2.56, 5);
}
// Case A through the unfused kernels (materialised rows × K block), for comparison.
TEST(CudaTiming, DISABLED_GaussianDiagCaseAFp32Unfused) {
  ScopedEnv unfused("MIXLE_CUDA_FUSED", "0");
  time_accumulate(Family::gaussian_diag, 10'000'000, 32, 64, Precision::fp32, 2.56, 5);
}
// Same with the TF32 opt-in: target ≤ 0.6 ms (roofline 0.35 ms TF32 dense).
TEST(CudaTiming, DISABLED_GaussianDiagCaseATf32) {
  time_accumulate(Family::gaussian_diag, 10'000'000, 32, 64, Precision::tf32, 0.35, 5);
}
// The TF32 pass through the unfused kernels (L initialised, accumulated by the GEMM, the constant
// added, normalised, read by the header and statistics kernels), for comparison with the fused one.
TEST(CudaTiming, DISABLED_GaussianDiagCaseATf32Unfused) {
  ScopedEnv unfused("MIXLE_CUDA_FUSED", "0");
  time_accumulate(Family::gaussian_diag, 10'000'000, 32, 64, Precision::tf32, 0.35, 5);
}
// Case B full covariance: target within 2× of the structured fp32 roofline (32 ms).
TEST(CudaTiming, DISABLED_GaussianFullCaseBFp32) {
  time_accumulate(Family::gaussian_full, 1'000'000, 64, 256, Precision::fp32, 32.0, 2);
}

}  // namespace
}  // namespace mixle::test
