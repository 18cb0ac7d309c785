// Sample weights on the CUDA kernels, against the CPU oracle with the same weights: the E-step
// (fp64 and fp32 — a weighted float gaussian_diag pass leaves the fused kernel), given
// responsibilities, the component-sharded normalised fold, streamed chunks, and weights equal
// to repeated rows.
#include "common/kernel_compare.hpp"

#include <cmath>
#include <cstring>

namespace mixle::test {
namespace {

using engine::Precision;

/// |got − want| ≤ rtol · (|want| + 1e-3 · max |want|) for every entry.
void expect_close(const std::vector<double>& want, const std::vector<double>& got, double rtol, const char* what) {
  ASSERT_EQ(want.size(), got.size()) << what;
  double largest = 0.0;
  for (double v : want) largest = std::max(largest, std::abs(v));
  for (std::size_t j = 0; j < want.size(); ++j)
    EXPECT_LE(std::abs(got[j] - want[j]), rtol * (std::abs(want[j]) + 1e-3 * largest))
        << what << ": statistic " << j << " is " << got[j] << ", the CPU's " << want[j];
}

/// A gaussian_diag, a categorical, a poisson and a gamma part over 9 columns, K components.
Model mixed_model(std::size_t K, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  Model model;
  model.weights = random_simplex(rng, K);
  model.parts.push_back(random_part(Family::gaussian_diag, K, 5, 0, rng));
  model.parts.push_back(random_part(Family::categorical, K, 1, 5, rng, 4));
  model.parts.push_back(random_part(Family::poisson, K, 2, 6, rng));
  model.parts.push_back(random_part(Family::gamma, K, 1, 8, rng));
  return model;
}

struct WeightedRows {
  std::vector<double> values, weights;
  std::size_t rows = 0, cols = 0;
  Dataset data(DType dtype) const {
    Dataset d = dtype == DType::f64
                    ? Dataset::from_vector(values, rows, cols)
                    : Dataset::from_vector(std::vector<float>(values.begin(), values.end()), rows, cols);
    return d.with_weights(weights);
  }
};

WeightedRows draw(const Model& model, std::size_t rows, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  WeightedRows w;
  w.values = sample_rows(model, rows, rng);
  w.rows = rows;
  w.cols = model.columns();
  w.weights.resize(rows);
  for (std::size_t r = 0; r < rows; ++r) w.weights[r] = static_cast<double>((r * 7 + 3) % 5) * 0.75;  // 0 … 3
  return w;
}

std::vector<double> accumulate(engine::Compute& compute, const Model& model, const Dataset& rows, Precision p) {
  std::vector<double> stats(static_cast<std::size_t>(engine::stat_layout(model).size), 0.0);
  compute.accumulate(model, rows, p, stats);
  return stats;
}

TEST(SampleWeightsCuda, EStepMatchesCpuFp64AndFp32) {
  MIXLE_CUDA_OR_SKIP(cuda);
  const auto cpu = engine::make_cpu_compute(1);
  const Model model = mixed_model(7, 3);
  const WeightedRows w = draw(model, 1301, 4);
  const Dataset rows = w.data(DType::f64);
  expect_close(accumulate(*cpu, model, rows, Precision::fp64), accumulate(*cuda, model, rows, Precision::fp64), 1e-10,
               "fp64");
  // fp32: a gaussian_diag model alone would take the fused kernel unweighted.
  const Model diag = random_model(Family::gaussian_diag, 9, 12, 5);
  const WeightedRows d = draw(diag, 1501, 6);
  const Dataset drows = d.data(DType::f32);
  const auto want = accumulate(*cpu, diag, drows, Precision::fp32),
             got = accumulate(*cuda, diag, drows, Precision::fp32);
  expect_close(want, got, 2e-4, "fp32 gaussian_diag");
  double total = 0.0;
  for (double v : d.weights) total += v;
  EXPECT_NEAR(got[1], total, 1e-9 * total);  // the row count is the total weight
}

TEST(SampleWeightsCuda, WeightsEqualRepeatedRowsAndStreamingChangesNoBit) {
  MIXLE_CUDA_OR_SKIP(cuda);
  const Model model = mixed_model(5, 11);
  WeightedRows w = draw(model, 700, 12);
  for (double& v : w.weights) v = std::round(v);  // integers 0 … 3
  std::vector<double> repeated;
  for (std::size_t r = 0; r < w.rows; ++r)
    for (int c = 0; c < static_cast<int>(w.weights[r]); ++c)
      repeated.insert(repeated.end(), w.values.begin() + r * w.cols, w.values.begin() + (r + 1) * w.cols);
  const Dataset copies = Dataset::from_vector(repeated, repeated.size() / w.cols, w.cols);
  const auto weighted = accumulate(*cuda, model, w.data(DType::f64), Precision::fp64);
  expect_close(accumulate(*cuda, model, copies, Precision::fp64), weighted, 1e-11, "repeated rows");
  ScopedEnv stream("MIXLE_CUDA_STREAM_ROWS", "128");
  const auto streamed = accumulate(*cuda, model, w.data(DType::f64), Precision::fp64);
  ASSERT_EQ(streamed.size(), weighted.size());
  EXPECT_EQ(std::memcmp(streamed.data(), weighted.data(), weighted.size() * sizeof(double)), 0);
}

TEST(SampleWeightsCuda, GivenAndNormalisedFoldsMatchCpu) {
  MIXLE_CUDA_OR_SKIP(cuda);
  const auto cpu = engine::make_cpu_compute(1);
  const Model model = mixed_model(6, 21);
  const WeightedRows w = draw(model, 901, 22);
  const Dataset rows = w.data(DType::f64);
  const std::size_t K = model.components(), S = static_cast<std::size_t>(engine::stat_layout(model).size);
  std::mt19937_64 rng(23);
  std::vector<double> resp(w.rows * K);
  for (std::size_t r = 0; r < w.rows; ++r) {
    const auto p = random_simplex(rng, K);
    std::copy(p.begin(), p.end(), resp.begin() + r * K);
  }
  std::vector<double> want(S, 0.0), got(S, 0.0);
  cpu->accumulate_given(model, rows, resp.data(), want);
  cuda->accumulate_given(model, rows, resp.data(), got);
  expect_close(want, got, 1e-12, "given");
  // Normalisers: each row's log-likelihood under the model itself (one shard = everything).
  std::vector<double> norm(w.rows);
  cpu->score(model, rows, Precision::fp64, norm.data(), nullptr);
  std::fill(want.begin(), want.end(), 0.0);
  std::fill(got.begin(), got.end(), 0.0);
  cpu->accumulate_normalised(model, rows, Precision::fp64, norm.data(), want);
  cuda->accumulate_normalised(model, rows, Precision::fp64, norm.data(), got);
  expect_close(want, got, 1e-10, "normalised");
}

}  // namespace
}  // namespace mixle::test
