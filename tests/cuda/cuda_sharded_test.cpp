// The component-sharding passes of the CUDA kernels against the CPU oracle:
//   accumulate_normalised      a shard's share of the global posterior, r = exp(l − L), with L the
//                              whole mixture's log-likelihood computed elsewhere (CPU score)
// on gaussian_diag, gaussian_full and a mixed categorical + poisson record, fp32 and fp64, for a
// model that is a component slice of a larger one (engine::slice_components, global weights),
// with rows whose normaliser is −inf, +inf or NaN (folding nothing). The GPU tests skip visibly
// without a device and fail under MIXLE_REQUIRE_GPU=1. The same comparison also runs CPU
// against CPU (another thread count) everywhere, so the harness and its bounds are exercised
// by every build.
#include "common/kernel_compare.hpp"
#include "engine/component_sharded.hpp"

#include <mixle/fit.hpp>

#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <memory>
#include <limits>
#include <random>
#include <string>
#include <vector>

namespace mixle::test {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

enum class Record { gaussian_diag, gaussian_full, mixed };

const char* record_name(Record r) {
  switch (r) {
    case Record::gaussian_diag: return "gaussian_diag";
    case Record::gaussian_full: return "gaussian_full";
    case Record::mixed: return "categorical+poisson";
  }
  return "?";
}

/// Tolerances of the per-family CUDA-vs-CPU tests (tests/cuda/<family>_test.cpp).
Tolerance tolerance(Record r, engine::Precision precision) {
  const bool fp32 = precision != engine::Precision::fp64;
  switch (r) {
    case Record::gaussian_diag: return fp32 ? Tolerance{2e-5, 1e-5} : Tolerance{1e-13, 1e-13};
    case Record::gaussian_full: return fp32 ? Tolerance{4e-5, 1e-5} : Tolerance{2e-13, 1e-13};
    case Record::mixed: return fp32 ? Tolerance{3e-5, 1e-5} : Tolerance{1e-13, 1e-13};
  }
  return {};
}

/// A full model of K components for `r`, random parameters from `seed`.
Model full_model(Record r, std::size_t K, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  Model m;
  m.weights = random_simplex(rng, K);
  switch (r) {
    case Record::gaussian_diag: m.parts.push_back(random_part(Family::gaussian_diag, K, 5, 0, rng)); break;
    case Record::gaussian_full: m.parts.push_back(random_part(Family::gaussian_full, K, 3, 0, rng)); break;
    case Record::mixed:
      m.parts.push_back(random_part(Family::categorical, K, 2, 0, rng, 4));
      m.parts.push_back(random_part(Family::poisson, K, 2, 2, rng));
      break;
  }
  return m;
}

/// A column where a NaN may be written without indexing anything (not categorical).
std::size_t continuous_column(Record r) { return r == Record::mixed ? 2 : 0; }

Dataset make_data(const std::vector<double>& values, std::size_t rows, std::size_t cols, DType dtype) {
  if (dtype == DType::f64) return Dataset::from_vector(values, rows, cols);
  return Dataset::from_vector(std::vector<float>(values.begin(), values.end()), rows, cols);
}

/// Non-zero starting statistics: the passes must add to them (and keep [0], [1] where stated).
std::vector<double> baseline(std::int64_t size) {
  std::vector<double> s(static_cast<std::size_t>(size));
  for (std::size_t j = 0; j < s.size(); ++j) s[j] = 0.25 * static_cast<double>(j % 7) - 0.5;
  return s;
}

/// One sharding scenario: a full model of 7 components, its shard [2, 5) with the global
/// weights, rows sampled from the full model, the CPU's per-row log-likelihood under the full
/// model in `precision` as the normaliser, and bad rows: row 3 gets L = −inf, rows 130 and 400
/// L = NaN, row 260 L = +inf. Rows 3 and 130 are also moved far from every mean so that folding
/// them would show at full size. (The data stay finite: the CPU oracle's SIMD tails fold
/// 0·NaN = NaN for a NaN value in a zero-responsibility row, the CUDA kernels skip r = 0 rows —
/// CudaSharded.RejectedRowWithNanDataFoldsNothing checks the CUDA side on its own.)
struct Scenario {
  Record record;
  engine::Precision precision;
  DType dtype;
  std::size_t rows;
  Model full, shard;
  std::vector<double> values;
  std::vector<double> log_norm;
  std::vector<double> log_norm_true;  // before the bad rows were written
  std::vector<double> r_ref;          // rows × shard K: the global posterior of the shard's components (fp64)
  std::vector<bool> bad;              // rows folding nothing
};

Scenario make_scenario(Record record, engine::Precision precision, DType dtype, std::size_t rows = 1000) {
  Scenario s;
  s.record = record, s.precision = precision, s.dtype = dtype, s.rows = rows;
  const std::uint64_t seed = 7717u + static_cast<std::uint64_t>(record) * 101u + rows;
  s.full = full_model(record, 7, seed);
  s.shard = engine::slice_components(s.full, 2, 5);
  std::mt19937_64 rng(seed + 1);
  s.values = sample_rows(s.full, rows, rng);
  const std::size_t C = s.full.columns();
  const std::size_t col = continuous_column(record);
  s.values[3 * C + col] += 50.0;
  s.values[130 * C + col] += 50.0;
  auto cpu = engine::make_cpu_compute(1);
  s.log_norm.assign(rows, kNaN);
  cpu->score(s.full, make_data(s.values, rows, C, dtype), precision, s.log_norm.data(), nullptr);
  s.log_norm_true = s.log_norm;
  s.log_norm[3] = -kInf;
  s.log_norm[130] = kNaN;
  s.log_norm[260] = kInf;
  s.log_norm[400] = kNaN;
  s.bad.assign(rows, false);
  for (std::size_t n : {3, 130, 260, 400}) s.bad[n] = true;

  // Reference global responsibilities in float64: within-shard posterior × exp(ll_shard − L).
  const std::size_t K = s.shard.components();
  std::vector<double> ll(rows, kNaN), resp(rows * K, kNaN);
  cpu->score(s.shard, make_data(s.values, rows, C, DType::f64), engine::Precision::fp64, ll.data(), resp.data());
  s.r_ref.assign(rows * K, 0.0);
  for (std::size_t n = 0; n < rows; ++n) {
    if (s.bad[n] || !std::isfinite(ll[n])) continue;
    const double f = std::exp(std::min(ll[n] - s.log_norm[n], 0.0));
    for (std::size_t k = 0; k < K; ++k) s.r_ref[n * K + k] = resp[n * K + k] * f;
  }
  return s;
}

std::string trace(const Scenario& s) {
  return std::string(record_name(s.record)) + " precision=" + engine::precision_name(s.precision) +
         " data=" + dtype_name(s.dtype) + " rows=" + std::to_string(s.rows);
}

/// accumulate_normalised on `candidate` against `oracle` (the CPU kernels).
void compare_normalised(engine::Compute& oracle, engine::Compute& candidate, const Scenario& s) {
  SCOPED_TRACE("accumulate_normalised " + trace(s));
  const Dataset data = make_data(s.values, s.rows, s.full.columns(), s.dtype);
  const std::int64_t size = engine::stat_layout(s.shard).size;
  std::vector<double> want = baseline(size), got = baseline(size);
  oracle.accumulate_normalised(s.shard, data, s.precision, s.log_norm.data(), want);
  candidate.accumulate_normalised(s.shard, data, s.precision, s.log_norm.data(), got);
  const std::vector<double> base = baseline(size);
  EXPECT_EQ(0, std::memcmp(got.data(), base.data(), kernels::kStatHeader * sizeof(double)))
      << "stats[0] and stats[1] must be left exactly as passed: got " << got[0] << ", " << got[1];
  EXPECT_EQ(0, std::memcmp(want.data(), base.data(), kernels::kStatHeader * sizeof(double)));

  // Per (row, component): r = exp(l − L) with |Δl| ≤ tol·(1 + |l|) between the backends and
  // |l| ≤ |L| + |log r|, so |Δr| ≤ r·tol·(1 + |L| + |log r|); doubled for the exp and the cast
  // of L, plus the sums' rounding, plus a floor for a flip at the e^-40 flush threshold. Bad
  // rows get weight 0: any contribution from them fails.
  const Tolerance tol = tolerance(s.record, s.precision);
  const std::size_t K = s.shard.components();
  std::vector<double> weight(s.rows * K, 0.0);
  for (std::size_t n = 0; n < s.rows; ++n) {
    if (s.bad[n]) continue;
    for (std::size_t k = 0; k < K; ++k) {
      const double r = s.r_ref[n * K + k];
      const double log_r = r > 0.0 ? std::abs(std::log(r)) : 0.0;
      weight[n * K + k] = r * (4 * tol.log_density * (1.0 + std::abs(s.log_norm[n]) + log_r) + tol.sum) + 1e-17;
    }
  }
  check_component_statistics(s.shard, s.values, s.rows, weight, engine::shift_table(s.shard, s.precision), want, got);

  std::vector<double> again = baseline(size);
  candidate.accumulate_normalised(s.shard, data, s.precision, s.log_norm.data(), again);
  EXPECT_EQ(0, std::memcmp(again.data(), got.data(), again.size() * sizeof(double)))
      << "two passes over the same rows must give bit-identical statistics";
}

const Record kRecords[] = {Record::gaussian_diag, Record::gaussian_full, Record::mixed};
const engine::Precision kPrecisions[] = {engine::Precision::fp32, engine::Precision::fp64};

// ---- everywhere: the harness on CPU against CPU ---------------------------------------------

TEST(CudaShardedHarness, CpuAgainstCpuPassesTheSameChecks) {
  auto oracle = engine::make_cpu_compute(1);
  auto other = engine::make_cpu_compute(3);
  for (Record r : kRecords)
    for (engine::Precision p : kPrecisions) {
      const Scenario s = make_scenario(r, p, DType::f64);
      compare_normalised(*oracle, *other, s);
    }
}

/// A candidate that is the CPU kernels with its normalisers altered by `edit` (to show the
/// harness catches a wrong fold).
class EditedNormaliser final : public engine::Compute {
 public:
  explicit EditedNormaliser(std::function<void(std::vector<double>&)> edit)
      : cpu_(engine::make_cpu_compute(1)), edit_(std::move(edit)) {}
  std::string name() const override { return "edited-cpu"; }
  kernels::PassReport accumulate(const Model& m, const Dataset& d, engine::Precision p,
                                 std::vector<double>& s) override {
    return cpu_->accumulate(m, d, p, s);
  }
  kernels::PassReport score(const Model& m, const Dataset& d, engine::Precision p, double* ll, double* r) override {
    return cpu_->score(m, d, p, ll, r);
  }
  void accumulate_given(const Model& m, const Dataset& d, const double* r, std::vector<double>& s) override {
    cpu_->accumulate_given(m, d, r, s);
  }
  void accumulate_normalised(const Model& m, const Dataset& d, engine::Precision p, const double* log_norm,
                             std::vector<double>& s) override {
    std::vector<double> edited(log_norm, log_norm + d.rows());
    edit_(edited);
    cpu_->accumulate_normalised(m, d, p, edited.data(), s);
  }

 private:
  std::unique_ptr<engine::Compute> cpu_;
  std::function<void(std::vector<double>&)> edit_;
};

/// Failures `compare_normalised(oracle, candidate, s)` reports (intercepted, not propagated).
int failures_of(engine::Compute& oracle, engine::Compute& candidate, const Scenario& s) {
  ::testing::TestPartResultArray results;
  {
    ::testing::ScopedFakeTestPartResultReporter reporter(
        ::testing::ScopedFakeTestPartResultReporter::INTERCEPT_ONLY_CURRENT_THREAD, &results);
    compare_normalised(oracle, candidate, s);
  }
  return results.size();
}

TEST(CudaShardedHarness, CatchesAFoldedBadRowAndAShiftedNormaliser) {
  auto oracle = engine::make_cpu_compute(1);
  for (engine::Precision p : kPrecisions) {
    const Scenario s = make_scenario(Record::gaussian_diag, p, DType::f64);
    // Row 260 (L = +inf) folded with its true normaliser.
    EditedNormaliser folds_bad_row([&](std::vector<double>& l) { l[260] = s.log_norm_true[260]; });
    EXPECT_GT(failures_of(*oracle, folds_bad_row, s), 0) << engine::precision_name(p);
  }
  // fp64: every responsibility 1e-6 relative too large.
  const Scenario s = make_scenario(Record::gaussian_full, engine::Precision::fp64, DType::f64);
  EditedNormaliser shifted([](std::vector<double>& l) {
    for (double& v : l) v -= 1e-6;
  });
  EXPECT_GT(failures_of(*oracle, shifted, s), 0);
}

TEST(CudaShardedHarness, ShardsOfTheWholeModelShareEachRowOnce) {
  // Σ over shards of the folded masses is the count of rows with a finite normaliser: the
  // scenario's L is the whole model's, so the bound weights above are the global posterior.
  auto cpu = engine::make_cpu_compute(1);
  const Scenario s = make_scenario(Record::gaussian_diag, engine::Precision::fp64, DType::f64);
  const Dataset data = make_data(s.values, s.rows, s.full.columns(), s.dtype);
  double mass = 0.0;
  for (auto [b, e] : {std::pair<std::size_t, std::size_t>{0, 2}, {2, 5}, {5, 7}}) {
    const Model shard = engine::slice_components(s.full, b, e);
    std::vector<double> stats(static_cast<std::size_t>(engine::stat_layout(shard).size), 0.0);
    cpu->accumulate_normalised(shard, data, s.precision, s.log_norm.data(), stats);
    for (std::size_t k = 0; k < shard.components(); ++k) mass += stats[kernels::kStatHeader + k];
  }
  EXPECT_NEAR(mass, static_cast<double>(s.rows - 4), 1e-9 * static_cast<double>(s.rows));
}

// ---- CUDA against the CPU oracle --------------------------------------------------------------

TEST(CudaSharded, NormalisedMatchesCpu) {
  MIXLE_CUDA_OR_SKIP(cuda);
  auto cpu = engine::make_cpu_compute(1);
  for (Record r : kRecords)
    for (engine::Precision p : kPrecisions) compare_normalised(*cpu, *cuda, make_scenario(r, p, DType::f64));
  // float32 storage (converted on the device side's host staging) once per record.
  for (Record r : kRecords) compare_normalised(*cpu, *cuda, make_scenario(r, engine::Precision::fp32, DType::f32));
}

TEST(CudaSharded, ShardMassesSumToValidRows) {
  MIXLE_CUDA_OR_SKIP(cuda);
  for (Record r : kRecords)
    for (engine::Precision p : kPrecisions) {
      const Scenario s = make_scenario(r, p, DType::f64);
      SCOPED_TRACE(trace(s));
      const Dataset data = make_data(s.values, s.rows, s.full.columns(), s.dtype);
      double mass = 0.0;
      for (auto [b, e] : {std::pair<std::size_t, std::size_t>{0, 2}, {2, 5}, {5, 7}}) {
        const Model shard = engine::slice_components(s.full, b, e);
        std::vector<double> stats(static_cast<std::size_t>(engine::stat_layout(shard).size), 0.0);
        cuda->accumulate_normalised(shard, data, s.precision, s.log_norm.data(), stats);
        EXPECT_EQ(stats[0], 0.0);
        EXPECT_EQ(stats[1], 0.0);
        for (std::size_t k = 0; k < shard.components(); ++k) mass += stats[kernels::kStatHeader + k];
      }
      // fp32: each r carries ~1e-6 relative error from exp and the log-densities.
      const double tol = p == engine::Precision::fp64 ? 1e-9 : 1e-4;
      EXPECT_NEAR(mass, static_cast<double>(s.rows - 4), tol * static_cast<double>(s.rows));
    }
}

TEST(CudaSharded, ResidentAndStreamedAreBitIdentical) {
  MIXLE_CUDA_OR_SKIP(cuda);
  for (Record r : kRecords)
    for (engine::Precision p : kPrecisions) {
      const Scenario s = make_scenario(r, p, DType::f64, 1500);
      SCOPED_TRACE(trace(s));
      const Dataset data = make_data(s.values, s.rows, s.full.columns(), s.dtype);
      const std::size_t size = static_cast<std::size_t>(engine::stat_layout(s.shard).size);
      std::vector<double> norm_res = baseline(size), norm_str = baseline(size);
      cuda->accumulate_normalised(s.shard, data, s.precision, s.log_norm.data(), norm_res);
      {
        // 256-row chunks (rounded up to the slot size): several chunks, both staging buffers.
        ScopedEnv stream("MIXLE_CUDA_STREAM_ROWS", "256");
        cuda->accumulate_normalised(s.shard, data, s.precision, s.log_norm.data(), norm_str);
      }
      EXPECT_EQ(0, std::memcmp(norm_res.data(), norm_str.data(), size * sizeof(double)))
          << "accumulate_normalised: resident and streamed statistics differ";
    }
}

TEST(CudaSharded, RejectedRowWithNanDataFoldsNothing) {
  // Row 400 has L = NaN: a NaN data value there must not reach the
  // statistics — the CUDA statistics kernels skip r = 0 rows, so the statistics are bit for bit
  // those of the same rows with a finite value there.
  MIXLE_CUDA_OR_SKIP(cuda);
  for (Record r : kRecords)
    for (engine::Precision p : kPrecisions) {
      const Scenario s = make_scenario(r, p, DType::f64);
      SCOPED_TRACE(trace(s));
      std::vector<double> poisoned = s.values;
      poisoned[400 * s.full.columns() + continuous_column(r)] = kNaN;
      const Dataset clean = make_data(s.values, s.rows, s.full.columns(), s.dtype);
      const Dataset bad = make_data(poisoned, s.rows, s.full.columns(), s.dtype);
      const std::size_t size = static_cast<std::size_t>(engine::stat_layout(s.shard).size);
      std::vector<double> a = baseline(size), b = baseline(size);
      cuda->accumulate_normalised(s.shard, clean, s.precision, s.log_norm.data(), a);
      cuda->accumulate_normalised(s.shard, bad, s.precision, s.log_norm.data(), b);
      EXPECT_EQ(0, std::memcmp(a.data(), b.data(), size * sizeof(double))) << "accumulate_normalised";
    }
}

TEST(CudaSharded, Tf32NormalisedFoldsLikeFp32) {
  // tf32 computes gaussian_diag log-densities with a tensor-op GEMM (≈2⁻¹⁰ relative in each
  // expanded term, up to a few tenths of a nat per row here), so only a loose agreement of the
  // masses with the fp32 fold is expected — a smoke test of the path; the header stays put.
  MIXLE_CUDA_OR_SKIP(cuda);
  const Scenario s = make_scenario(Record::gaussian_diag, engine::Precision::fp32, DType::f32);
  const Dataset data = make_data(s.values, s.rows, s.full.columns(), s.dtype);
  const std::size_t size = static_cast<std::size_t>(engine::stat_layout(s.shard).size);
  std::vector<double> fp32 = baseline(size), tf32 = baseline(size);
  cuda->accumulate_normalised(s.shard, data, engine::Precision::fp32, s.log_norm.data(), fp32);
  cuda->accumulate_normalised(s.shard, data, engine::Precision::tf32, s.log_norm.data(), tf32);
  EXPECT_EQ(tf32[0], baseline(size)[0]);
  EXPECT_EQ(tf32[1], baseline(size)[1]);
  for (std::size_t k = 0; k < s.shard.components(); ++k)
    EXPECT_NEAR(tf32[kernels::kStatHeader + k], fp32[kernels::kStatHeader + k],
                0.25 * std::abs(fp32[kernels::kStatHeader + k]) + 2.0)
        << "mass of component " << k;
}

TEST(CudaSharded, EmptyRowsAndMissingInputs) {
  MIXLE_CUDA_OR_SKIP(cuda);
  const Scenario s = make_scenario(Record::mixed, engine::Precision::fp64, DType::f64);
  const std::size_t size = static_cast<std::size_t>(engine::stat_layout(s.shard).size);
  const Dataset none = make_data({}, 0, s.full.columns(), DType::f64);
  std::vector<double> stats = baseline(size);
  cuda->accumulate_normalised(s.shard, none, s.precision, nullptr, stats);
  EXPECT_EQ(0, std::memcmp(stats.data(), baseline(size).data(), size * sizeof(double))) << "no rows, no change";
  const Dataset data = make_data(s.values, s.rows, s.full.columns(), s.dtype);
  EXPECT_THROW(cuda->accumulate_normalised(s.shard, data, s.precision, nullptr, stats), InvalidInput);
  std::vector<double> wrong(size + 1, 0.0);
  EXPECT_THROW(cuda->accumulate_normalised(s.shard, data, s.precision, s.log_norm.data(), wrong), InvalidInput);
}

TEST(CudaSharded, InProcessShardedFitOnTheGpuMatchesTheCpuFitFp64) {
  // The whole sharded EM on the device (backend component_sharded, 2 shards, each a CUDA
  // compute on the available GPUs) against the unsharded CPU fit: fp64 on both sides.
  MIXLE_CUDA_OR_SKIP(cuda);
  const Model truth = full_model(Record::gaussian_diag, 6, 17);
  const Dataset data = sample(truth, 4000, 3);
  FitOptions o;
  o.init = InitMethod::model;
  o.init_model = truth;
  o.max_iter = 5;
  o.tol = 0;
  o.precision = "fp64";
  o.threads = 1;
  const FitResult cpu = fit(data, o);
  FitOptions g = o;
  g.device = "cuda";
  g.backend = "component_sharded";
  g.num_workers = 2;
  const FitResult gpu = fit(data, g);
  ASSERT_EQ(gpu.model.components(), cpu.model.components());
  EXPECT_NEAR(gpu.final_mean_loglik, cpu.final_mean_loglik, 1e-9 * std::abs(cpu.final_mean_loglik));
  for (std::size_t i = 0; i < cpu.model.parts[0].mean.size(); ++i)
    EXPECT_NEAR(gpu.model.parts[0].mean[i], cpu.model.parts[0].mean[i],
                1e-8 * (1.0 + std::abs(cpu.model.parts[0].mean[i])));
  for (std::size_t k = 0; k < cpu.model.weights.size(); ++k)
    EXPECT_NEAR(gpu.model.weights[k], cpu.model.weights[k], 1e-9);
}

}  // namespace
}  // namespace mixle::test
