// categorical: the CUDA kernels against the CPU oracle (through engine::Compute).
#include "common/kernel_compare.hpp"

#include <mixle/fit.hpp>

namespace mixle::test {
namespace {

using engine::Precision;

// fp32: L adds D table entries (log θ < 0, one sign) in the CPU's order: worst case D·2⁻²⁴·|L|,
// 1.5e-5 at D = 256; the counts are sums of ≤ 128 float responsibilities, 128·2⁻²⁴.
constexpr Tolerance kFp32{2e-5, 1e-5};
constexpr Tolerance kFp64{1e-13, 1e-13};

TEST(CategoricalCuda, MatchesCpuFp32) {
  MIXLE_CUDA_OR_SKIP(cuda);
  for (const Case& c :
       {Case{1037, 1, 1, 2, DType::f32, Precision::fp32}, Case{555, 37, 4, 5, DType::f32, Precision::fp32},
        Case{200, 1024, 2, 3, DType::f32, Precision::fp32}, Case{129, 6, 256, 3, DType::f64, Precision::fp32}})
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

// A NaN code is refused at the engine's door on every device, naming the row. Past the door —
// a direct Compute call — it must not become category 0, which is what a GPU's float-to-int
// conversion makes of NaN: the row is a NaN row, reported, and folds nothing.
TEST(CategoricalCuda, NanCodeIsANanRowNotCategoryZero) {
  MIXLE_CUDA_OR_SKIP(cuda);
  constexpr std::size_t rows = 300, D = 2, K = 3;
  const Model model = random_model(Family::categorical, K, D, 51, 4);
  std::mt19937_64 rng(52);
  std::vector<double> values = sample_rows(model, rows, rng);
  values[7 * D + 1] = std::numeric_limits<double>::quiet_NaN();
  values[200 * D] = std::numeric_limits<double>::quiet_NaN();
  const Dataset data = Dataset::from_vector(std::vector<float>(values.begin(), values.end()), rows, D);
  for (const std::string device : {"cpu", "cuda"}) {
    try {
      score_samples(model, data, device, 1, "fp32");
      ADD_FAILURE() << device << ": a NaN categorical code must be refused";
    } catch (const InvalidInput& e) {
      EXPECT_NE(std::string(e.what()).find("row"), std::string::npos) << device << ": " << e.what();
    }
  }
  std::vector<double> ll(rows, 0.0), resp(rows * K, -1.0);
  const kernels::PassReport report = cuda->score(model, data, Precision::fp32, ll.data(), resp.data());
  EXPECT_EQ(report.nan_rows, 2);
  EXPECT_EQ(report.impossible_rows, 0);
  ASSERT_EQ(report.num_listed, 2);
  EXPECT_EQ(report.listed[0], 7);
  EXPECT_EQ(report.listed[1], 200);
  for (std::size_t row : {7u, 200u}) {
    EXPECT_TRUE(std::isnan(ll[row])) << "row " << row;
    for (std::size_t k = 0; k < K; ++k) EXPECT_EQ(resp[row * K + k], 0.0) << "row " << row;
  }
  std::vector<double> stats(static_cast<std::size_t>(engine::stat_layout(model).size), 0.0);
  cuda->accumulate(model, data, Precision::fp32, stats);
  EXPECT_EQ(stats[1], static_cast<double>(rows - 2)) << "rows folded in";
  double mass = 0.0;
  for (std::size_t k = 0; k < K; ++k) mass += stats[kernels::kStatHeader + k];
  EXPECT_NEAR(mass, static_cast<double>(rows - 2), 1e-3);
}

TEST(CategoricalCuda, GivenResponsibilitiesMatchCpu) {
  MIXLE_CUDA_OR_SKIP(cuda);
  const Model model = random_model(Family::categorical, 6, 5, 41, 4);
  std::mt19937_64 rng(42);
  compare_given(*cuda, model, sample_rows(model, 389, rng), 389, kFp64);
}

}  // namespace
}  // namespace mixle::test
