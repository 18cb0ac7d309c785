// The statistics guard of the TF32 pass (docs/numerics.md §4): a component whose mean lies within
// 2σ of the part's centre in every dimension sums its second moments about the centre — the
// fused kernel's expanded fold, two FMAs an entry — and has them folded to its shift in
// float64 at the slot's end; every other component stays centred.
//
// The case is built so that the guard's choice is the only thing between the CPU oracle (fp32,
// centred) and the CUDA TF32 pass. Near components (means within 0.375σ of the centre, σ = 1)
// and far ones (20σ out, R = 20 > 2) over data on a grid of 1/8: near rows' TF32 products are
// then exact (y and its square need ≤ 11 significant bits, the weights are h = −½ and ν on a
// 1/16 grid), and far rows have r of exactly 1 or 0 wherever the far means carry TF32 error, so
// the responsibilities agree with the CPU's to rounding. What remains is the sums' rounding:
// centred γ · Σ r t², expanded γ · (Σ r y² + 2|δ| Σ r |y| + δ² N) with y = x − c, δ = s − c
// (the derivation of docs/numerics.md §4) — and a far component summed about the centre (R = 20)
// would miss that by far, as would a wrong δ or mass in the fold.
#include "common/kernel_compare.hpp"
#include "kernels/model_view.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>

namespace mixle::test {
namespace {

using engine::Precision;

constexpr double kFar = 20.0;

/// `pattern[k]` true: a near component (mean within ±0.375 of 0 on a 1/8 grid), false: a far one
/// at ±kFar, the sides alternating — patterns hold far components in pairs, so the midpoint
/// centre is 0 in every dimension. σ = 1 everywhere.
Model guard_model(const std::vector<bool>& pattern, std::size_t D) {
  Model m;
  const std::size_t K = pattern.size();
  m.weights.assign(K, 1.0 / static_cast<double>(K));
  Part p;
  p.family = Family::gaussian_diag;
  p.col_begin = 0;
  p.col_end = D;
  p.mean.resize(K * D);
  p.var.assign(K * D, 1.0);
  int far_side = 1;
  for (std::size_t k = 0; k < K; ++k) {
    if (!pattern[k]) far_side = -far_side;
    for (std::size_t d = 0; d < D; ++d)
      p.mean[k * D + d] =
          pattern[k] ? 0.125 * static_cast<double>(static_cast<int>((k + 2 * d) % 7) - 3) : far_side * kFar;
  }
  m.parts.push_back(p);
  return m;
}

/// Rows drawn from the model, put on the 1/8 grid; near rows kept within ±5.5 of 0 (y² < 32 has
/// ≤ 11 significant bits on that grid).
std::vector<double> guard_rows(const Model& model, std::size_t rows, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<double> v = sample_rows(model, rows, rng);
  for (double& x : v) {
    x = std::round(8.0 * x) / 8.0;
    if (std::abs(x) < kFar / 2) x = std::clamp(x, -5.5, 5.5);
  }
  return v;
}

/// The rows with a NaN row at 7 (NaN in its first column) and an impossible one (+inf in its
/// middle column) at 11 added; they fold nothing.
std::vector<double> with_bad_rows(std::vector<double> v, std::size_t D) {
  std::vector<double> bad(D, 0.5);
  bad[0] = std::numeric_limits<double>::quiet_NaN();
  v.insert(v.begin() + 7 * static_cast<std::ptrdiff_t>(D), bad.begin(), bad.end());
  bad[0] = 0.5;
  bad[D / 2] = std::numeric_limits<double>::infinity();
  v.insert(v.begin() + 11 * static_cast<std::ptrdiff_t>(D), bad.begin(), bad.end());
  return v;
}

/// The trace line's count of (row, component) pairs summed about the centre, or -1.
long long expanded_pairs(const std::string& trace) {
  std::istringstream in(trace);
  std::string line;
  long long pairs = -1;
  while (std::getline(in, line)) {
    const std::size_t at = line.find("second moments of ");
    if (at != std::string::npos) pairs = std::stoll(line.substr(at + 18));
  }
  return pairs;
}

void expect_guarded_statistics(engine::Compute& cuda, const std::vector<bool>& pattern, std::size_t D,
                               std::size_t rows) {
  const Model model = guard_model(pattern, D);
  const std::size_t K = model.components();
  const std::vector<double> values = guard_rows(model, rows, 17 + K * D), all = with_bad_rows(values, D);
  const Dataset clean = Dataset::from_vector(std::vector<float>(values.begin(), values.end()), rows, D);
  const Dataset data = Dataset::from_vector(std::vector<float>(all.begin(), all.end()), rows + 2, D);
  auto cpu = engine::make_cpu_compute(1);
  const std::size_t size = static_cast<std::size_t>(engine::stat_layout(model).size);
  std::vector<double> want(size, 0.0), got(size, 0.0);
  cpu->accumulate(model, clean, Precision::fp32, want);
  ScopedEnv trace("MIXLE_CUDA_TRACE", "1");
  ::testing::internal::CaptureStderr();
  const kernels::PassReport report = cuda.accumulate(model, data, Precision::tf32, got);
  const std::string text = ::testing::internal::GetCapturedStderr();
  // The bad rows reported as the CPU reports them: the expansion alone would turn the +inf row's
  // −inf into NaN (−inf + inf), in this pass and in score's (the cuBLAS path).
  EXPECT_EQ(report.nan_rows, 1);
  EXPECT_EQ(report.impossible_rows, 1);
  {
    std::vector<double> ll(rows + 2), resp((rows + 2) * K);
    const kernels::PassReport scored = cuda.score(model, data, Precision::tf32, ll.data(), resp.data());
    EXPECT_EQ(scored.nan_rows, 1);
    EXPECT_EQ(scored.impossible_rows, 1);
    EXPECT_TRUE(std::isnan(ll[7]));
    EXPECT_EQ(ll[11], -std::numeric_limits<double>::infinity());
  }

  // The guard admits exactly the near components, for every row of the pass (the bad ones too).
  const auto near = static_cast<long long>(std::count(pattern.begin(), pattern.end(), true));
  EXPECT_EQ(expanded_pairs(text), near * static_cast<long long>(rows + 2)) << text;

  EXPECT_EQ(got[1], want[1]) << "rows folded in";
  std::vector<double> r(rows * K), ll(rows);
  cpu->score(model, clean, Precision::fp32, ll.data(), r.data());
  const engine::ShiftTable shifts = engine::shift_table(model, Precision::fp32);
  const engine::StatLayout layout = engine::stat_layout(model);
  const double gamma = 140.0 * std::ldexp(1.0, -24);  // 128 float additions, rounded products and y
  for (std::size_t k = 0; k < K; ++k) {
    double mass = 0.0;
    for (std::size_t n = 0; n < rows; ++n) mass += r[n * K + k];
    EXPECT_NEAR(got[kernels::kStatHeader + k], want[kernels::kStatHeader + k], 1e-5 * mass + 1e-300)
        << "mass of component " << k;
    for (std::size_t d = 0; d < D; ++d) {
      const double s = static_cast<double>(static_cast<float>(shifts.values[shifts.part_offset[0] + k * D + d]));
      const double delta = s;  // the centre is 0: the far means sit symmetrically about it
      double abs_t = 0.0, t2 = 0.0, abs_y = 0.0, y2 = 0.0;
      for (std::size_t n = 0; n < rows; ++n) {
        const double w = r[n * K + k], x = values[n * D + d];
        abs_t += w * std::abs(x - s), t2 += w * (x - s) * (x - s), abs_y += w * std::abs(x), y2 += w * x * x;
      }
      // Both sides' rounding, the responsibilities' (1e-5 relative, as the other TF32 tests), and
      // for a near component the expanded fold's.
      double bound1 = 2 * (gamma + 1e-5) * abs_t, bound2 = 2 * (gamma + 1e-5) * t2;
      if (pattern[k]) {
        bound1 += 2 * gamma * (abs_y + std::abs(delta) * mass);
        bound2 += 2 * gamma * (y2 + 2 * std::abs(delta) * abs_y + delta * delta * mass);
      }
      const std::size_t at = static_cast<std::size_t>(layout.part_offset[0] + k * layout.part_stride[0]) + d;
      EXPECT_NEAR(got[at], want[at], bound1 + 1e-300) << "Σ r (x − s), component " << k << " dim " << d;
      EXPECT_NEAR(got[at + D], want[at + D], bound2 + 1e-300) << "Σ r (x − s)², component " << k << " dim " << d;
    }
  }

  // Tiles and slots sit at fixed rows of the pass: the same bits in chunks of 256 rows.
  std::vector<double> streamed(size, 0.0);
  ScopedEnv stream("MIXLE_CUDA_STREAM_ROWS", "256");
  cuda.accumulate(model, data, Precision::tf32, streamed);
  EXPECT_EQ(streamed, got);
}

// Component pairs (a thread's statistics block is 2 components × 4 dims): both near (the expanded
// loop), near and far (the guarded loop), far and the padding component (centred); then far and
// near, near and far.
TEST(CudaTf32StatisticsGuard, NearComponentsSumAboutTheCentreFarOnesStayCentred) {
  MIXLE_CUDA_OR_SKIP(cuda);
  expect_guarded_statistics(*cuda, {true, true, true, false, false}, 3, 1500);
  expect_guarded_statistics(*cuda, {false, true, true, false}, 6, 700);  // D not a multiple of 4
}

// Every component admitted; a model with none admitted runs the centred loops only. D = 8 fills
// the tensor tiles' dimensions exactly, so a y tile read past its row's padding would take the
// next row's first values (the NaN row's into the valid row before it).
TEST(CudaTf32StatisticsGuard, AllOrNoneAdmitted) {
  MIXLE_CUDA_OR_SKIP(cuda);
  expect_guarded_statistics(*cuda, std::vector<bool>(16, true), 8, 1100);
  expect_guarded_statistics(*cuda, {false, false, false}, 4, 600);
}

}  // namespace
}  // namespace mixle::test
