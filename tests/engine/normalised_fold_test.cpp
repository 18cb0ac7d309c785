// Compute::accumulate_normalised (component sharding's fold): a component slice of a mixture,
// folded with the whole mixture's per-row log-likelihood as the normaliser, must give exactly
// the statistics that the whole mixture's own E-step gives for those components — per family,
// in fp64 (to rounding) and fp32 (to fp32 rounding) — and rows whose normaliser is not finite
// must contribute nothing.
#include "engine/component_sharded.hpp"
#include "engine/compute.hpp"

#include <mixle/error.hpp>
#include <mixle/fit.hpp>
#include <mixle/model.hpp>

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <ostream>

namespace mixle {
namespace {

using engine::Precision;

Model mixture(const std::string& kind) {
  const std::string text = kind == "diag" ? R"({"format":"mixle-model","version":1,"weights":[0.2,0.3,0.1,0.4],"parts":[
               {"family":"gaussian_diag","columns":[0,3],"mean":[[0,0,0],[4,0,0],[0,4,0],[0,0,4]],
                "var":[[1,1,1],[1,2,1],[0.5,1,1],[1,1,0.3]]}]})"
                           : kind == "full" ? R"({"format":"mixle-model","version":1,"weights":[0.3,0.3,0.4],"parts":[
               {"family":"gaussian_full","columns":[0,2],"mean":[[0,0],[5,5],[-3,2]],
                "cov":[[[2,1],[1,2]],[[1,-0.3],[-0.3,0.5]],[[1,0],[0,1]]]}]})"
                                            : R"({"format":"mixle-model","version":1,"weights":[0.5,0.3,0.2],"parts":[
               {"family":"gaussian_diag","columns":[0,2],"mean":[[0,0],[3,3],[-2,1]],"var":[[1,1],[1,1],[2,1]]},
               {"family":"categorical","columns":[2,3],"categories":3,"prob":[[0.8,0.1,0.1],[0.1,0.1,0.8],[0.3,0.4,0.3]]},
               {"family":"poisson","columns":[3,4],"rate":[[2],[9],[4]]}]})";
  return model_from_json(text);
}

/// Statistics values of components [begin, end) of a model with layout `layout`, in the order
/// of a slice's layout (masses, then each part's component blocks).
std::vector<double> component_stats(const std::vector<double>& stats, const engine::StatLayout& layout,
                                    std::size_t begin, std::size_t end) {
  std::vector<double> out;
  for (std::size_t k = begin; k < end; ++k) out.push_back(stats[kernels::kStatHeader + k]);
  for (std::size_t p = 0; p < layout.part_offset.size(); ++p) {
    const std::size_t stride = static_cast<std::size_t>(layout.part_stride[p]);
    const std::size_t first = static_cast<std::size_t>(layout.part_offset[p]) + begin * stride;
    out.insert(out.end(), stats.begin() + static_cast<std::ptrdiff_t>(first),
               stats.begin() + static_cast<std::ptrdiff_t>(first + (end - begin) * stride));
  }
  return out;
}

struct Case {
  const char* kind;
  Precision precision;
  double rtol;
  bool float32_rows = false;  // the rows as a float32 file gives them (the kernels' other instantiation)
};

// Test names show the case, not a byte dump of it.
void PrintTo(const Case& c, std::ostream* os) {
  *os << c.kind << (c.precision == Precision::fp64 ? " fp64" : " fp32") << (c.float32_rows ? " float32 rows" : "");
}

Dataset as_float32(const Dataset& rows) {
  std::vector<float> values(rows.rows() * rows.cols());
  for (std::size_t i = 0; i < values.size(); ++i) values[i] = static_cast<float>(rows.as<double>()[i]);
  return Dataset::from_vector(std::move(values), rows.rows(), rows.cols());
}

class NormalisedFold : public ::testing::TestWithParam<Case> {};

TEST_P(NormalisedFold, SlicesFoldedWithTheWholeLogLikelihoodEqualTheWholeEStep) {
  const Case c = GetParam();
  const Model whole = mixture(c.kind);
  // 1000 rows: several 128-row blocks and a partial one.
  const Dataset drawn = sample(whole, 1000, 7);
  const Dataset rows = c.float32_rows ? as_float32(drawn) : drawn;
  ASSERT_EQ(rows.dtype(), c.float32_rows ? DType::f32 : DType::f64);
  auto compute = engine::make_cpu_compute(1);
  std::vector<double> loglik(rows.rows());
  compute->score(whole, rows, Precision::fp64, loglik.data(), nullptr);
  const engine::StatLayout layout = engine::stat_layout(whole);
  std::vector<double> expected(static_cast<std::size_t>(layout.size), 0.0);
  compute->accumulate(whole, rows, c.precision, expected);
  const std::size_t K = whole.components(), cut = K / 2;
  for (const auto& [begin, end] : {std::pair<std::size_t, std::size_t>{0, cut}, {cut, K}}) {
    const Model slice = engine::slice_components(whole, begin, end);
    std::vector<double> stats(static_cast<std::size_t>(engine::stat_layout(slice).size), 0.0);
    stats[0] = 11.0, stats[1] = 13.0;  // the caller's header: left alone
    compute->accumulate_normalised(slice, rows, c.precision, loglik.data(), stats);
    EXPECT_EQ(stats[0], 11.0);
    EXPECT_EQ(stats[1], 13.0);
    const auto want = component_stats(expected, layout, begin, end);
    const std::vector<double> got(stats.begin() + kernels::kStatHeader, stats.end());
    ASSERT_EQ(got.size(), want.size());
    for (std::size_t i = 0; i < got.size(); ++i)
      EXPECT_NEAR(got[i], want[i], c.rtol * (1.0 + std::abs(want[i])))
          << c.kind << " components [" << begin << ", " << end << ") statistic " << i;
  }
}

INSTANTIATE_TEST_SUITE_P(Families, NormalisedFold,
                         ::testing::Values(Case{"diag", Precision::fp64, 1e-12}, Case{"full", Precision::fp64, 1e-12},
                                           Case{"mixed", Precision::fp64, 1e-12}, Case{"diag", Precision::fp32, 2e-5},
                                           Case{"full", Precision::fp32, 2e-5}, Case{"mixed", Precision::fp32, 2e-5},
                                           Case{"diag", Precision::fp32, 2e-5, true},
                                           Case{"mixed", Precision::fp64, 1e-12, true},
                                           Case{"full", Precision::fp32, 2e-5, true}),
                         [](const auto& info) {
                           return std::string(info.param.kind) +
                                  (info.param.precision == Precision::fp64 ? "_fp64" : "_fp32") +
                                  (info.param.float32_rows ? "_float32_rows" : "");
                         });

TEST_P(NormalisedFold, KeptLogDensitiesFoldBitIdenticallyToRecomputedOnes) {
  const Case c = GetParam();
  const Model whole = mixture(c.kind);
  const Dataset rows = sample(whole, 1000, 5);
  auto compute = engine::make_cpu_compute(2);
  std::vector<double> loglik(rows.rows());
  compute->score(whole, rows, Precision::fp64, loglik.data(), nullptr);
  const Model slice = engine::slice_components(whole, 1, whole.components());
  const std::size_t per_row = compute->kept_bytes_per_row(slice.components(), c.precision);
  EXPECT_EQ(per_row, slice.components() * (c.precision == Precision::fp64 ? sizeof(double) : sizeof(float)));
  std::vector<double> shard_ll(rows.rows()), shard_ll_kept(rows.rows());
  std::vector<unsigned char> kept;
  compute->score(slice, rows, c.precision, shard_ll.data(), nullptr);
  compute->score_keeping(slice, rows, c.precision, shard_ll_kept.data(), kept);
  EXPECT_EQ(kept.size(), 1024 * per_row);  // 1,000 rows kept as whole blocks of 128
  EXPECT_EQ(std::memcmp(shard_ll.data(), shard_ll_kept.data(), rows.rows() * sizeof(double)), 0);
  const std::size_t size = static_cast<std::size_t>(engine::stat_layout(slice).size);
  std::vector<double> recomputed(size, 0.0), from_kept(size, 0.0);
  compute->accumulate_normalised(slice, rows, c.precision, loglik.data(), recomputed);
  compute->accumulate_normalised_kept(slice, rows, c.precision, loglik.data(), kept, from_kept);
  EXPECT_EQ(std::memcmp(recomputed.data(), from_kept.data(), size * sizeof(double)), 0);
  // Log-densities kept for other rows are refused, not folded.
  EXPECT_THROW(
      compute->accumulate_normalised_kept(slice, rows.slice(0, 500), c.precision, loglik.data(), kept, from_kept),
      InvalidInput);
}

TEST(NormalisedFold, RowsWithoutAFiniteNormaliserFoldNothing) {
  const Model whole = mixture("diag");
  const Dataset rows = sample(whole, 300, 3);
  auto compute = engine::make_cpu_compute(1);
  std::vector<double> loglik(rows.rows());
  compute->score(whole, rows, Precision::fp64, loglik.data(), nullptr);
  const Model slice = engine::slice_components(whole, 1, 3);
  const std::size_t size = static_cast<std::size_t>(engine::stat_layout(slice).size);
  // Reference: the first 200 rows only.
  std::vector<double> expected(size, 0.0);
  compute->accumulate_normalised(slice, rows.slice(0, 200), Precision::fp64, loglik.data(), expected);
  // Rows 200..299 marked −inf, NaN and +inf in turn: they must add nothing.
  for (std::size_t i = 200; i < 300; ++i)
    loglik[i] = i % 3 == 0   ? -std::numeric_limits<double>::infinity()
                : i % 3 == 1 ? std::numeric_limits<double>::quiet_NaN()
                             : std::numeric_limits<double>::infinity();
  std::vector<double> stats(size, 0.0);
  compute->accumulate_normalised(slice, rows, Precision::fp64, loglik.data(), stats);
  for (std::size_t i = kernels::kStatHeader; i < size; ++i) {
    ASSERT_TRUE(std::isfinite(stats[i])) << "statistic " << i;
    // The same 128-row blocks (rows 0..199 lie in blocks 0 and 1 either way): equal to rounding.
    EXPECT_NEAR(stats[i], expected[i], 1e-12 * (1.0 + std::abs(expected[i]))) << "statistic " << i;
  }
}

/// A Compute with only the required operations (the CPU kernels underneath): what a backend that
/// keeps no log-densities between scoring and folding inherits.
class BareCompute final : public engine::Compute {
 public:
  std::string name() const override { return "bare"; }
  kernels::PassReport accumulate(const Model& m, const Dataset& d, Precision p, std::vector<double>& s) override {
    return inner_->accumulate(m, d, p, s);
  }
  kernels::PassReport score(const Model& m, const Dataset& d, Precision p, double* ll, double* resp) override {
    return inner_->score(m, d, p, ll, resp);
  }
  void accumulate_given(const Model& m, const Dataset& d, const double* resp, std::vector<double>& s) override {
    inner_->accumulate_given(m, d, resp, s);
  }

 private:
  std::unique_ptr<engine::Compute> inner_ = engine::make_cpu_compute(1);
};

// Such a Compute says it keeps nothing (0 bytes per row, so component sharding sizes its chunks
// for recomputation), keeps nothing when asked to, and its score_keeping is its score.
TEST(NormalisedFold, AComputeThatKeepsNoLogDensitiesSaysSo) {
  BareCompute bare;
  EXPECT_EQ(bare.kept_bytes_per_row(4, Precision::fp32), 0u);
  EXPECT_EQ(bare.kept_bytes_per_row(4, Precision::fp64), 0u);
  const Model whole = mixture("diag");
  const Dataset rows = sample(whole, 200, 4);
  std::vector<double> scored(rows.rows()), kept_scored(rows.rows());
  bare.score(whole, rows, Precision::fp64, scored.data(), nullptr);
  std::vector<unsigned char> kept(16, 1);
  bare.score_keeping(whole, rows, Precision::fp64, kept_scored.data(), kept);
  EXPECT_TRUE(kept.empty());
  EXPECT_EQ(kept_scored, scored);
}

}  // namespace
}  // namespace mixle
