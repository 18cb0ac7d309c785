// Checks the comparison harness itself on the CPU, so that the GPU tests are known to work
// before any GPU runs them: the CPU kernels with 3 threads pass as the candidate (no false
// failures, the tolerance arithmetic is sound), and a candidate with one statistic or one
// responsibility slightly wrong is caught (the tests can fail).
#include "common/kernel_compare.hpp"

#include <gtest/gtest-spi.h>

namespace mixle::test {
namespace {

using engine::Precision;

constexpr Tolerance kFp32{2e-5, 1e-5};  // as in the family tests
constexpr Tolerance kFp64{1e-13, 1e-13};

TEST(KernelCompareHarness, CpuCandidatePassesForEveryFamily) {
  auto candidate = engine::make_cpu_compute(3);
  run_case(*candidate, Family::gaussian_diag, Case{1037, 37, 5, 0, DType::f32, Precision::fp32}, kFp32);
  run_case(*candidate, Family::gaussian_full, Case{300, 5, 9, 0, DType::f64, Precision::fp64}, kFp64);
  run_case(*candidate, Family::categorical, Case{555, 6, 4, 5, DType::f32, Precision::fp32}, kFp32);
  run_case(*candidate, Family::poisson, Case{401, 3, 6, 0, DType::f32, Precision::fp32}, kFp32);
  run_case(*candidate, Family::exponential, Case{401, 3, 6, 0, DType::f64, Precision::fp64}, kFp64);
  run_case(*candidate, Family::bernoulli, Case{401, 3, 6, 0, DType::f32, Precision::fp32}, kFp32);
  const Model model = random_model(Family::gaussian_diag, 4, 3, 5);
  std::mt19937_64 rng(6);
  compare_given(*candidate, model, sample_rows(model, 300, rng), 300, kFp64);
  expect_variants_agree(*candidate, Family::gaussian_full, Case{300, 3, 70, 0, DType::f32, Precision::fp32},
                        "MIXLE_CUDA_FULL_STATS");
  expect_chunking_invariant(*candidate, Family::categorical, Case{1037, 6, 5, 4, DType::f32, Precision::fp32}, 200);
}

/// The CPU kernels with one deliberate error: statistic `stat` off by `stat_delta` (relative),
/// or responsibility [0, 0] off by `resp_delta`.
class PerturbedCompute final : public engine::Compute {
 public:
  PerturbedCompute(std::int64_t stat, double stat_delta, double resp_delta)
      : inner_(engine::make_cpu_compute(1)), stat_(stat), stat_delta_(stat_delta), resp_delta_(resp_delta) {}
  std::string name() const override { return "perturbed-cpu"; }
  kernels::PassReport accumulate(const Model& m, const Dataset& d, Precision p, std::vector<double>& s) override {
    const auto r = inner_->accumulate(m, d, p, s);
    s[static_cast<std::size_t>(stat_)] *= 1.0 + stat_delta_;
    return r;
  }
  kernels::PassReport score(const Model& m, const Dataset& d, Precision p, double* ll, double* resp) override {
    const auto r = inner_->score(m, d, p, ll, resp);
    if (resp) resp[0] += resp_delta_;
    return r;
  }
  void accumulate_given(const Model& m, const Dataset& d, const double* resp, std::vector<double>& s) override {
    inner_->accumulate_given(m, d, resp, s);
  }

 private:
  std::unique_ptr<engine::Compute> inner_;
  std::int64_t stat_;
  double stat_delta_, resp_delta_;
};

void run_perturbed(std::int64_t stat, double stat_delta, double resp_delta) {
  PerturbedCompute candidate(stat, stat_delta, resp_delta);
  run_case(candidate, Family::gaussian_diag, Case{517, 3, 4, 0, DType::f32, Precision::fp32}, kFp32);
}

TEST(KernelCompareHarness, CatchesOneWrongSecondMoment) {
  // Component 1's Σ r (x − s)² for dim 2, 1e-3 relative off: far above float rounding.
  const std::int64_t entry = kernels::stat_header_size(3) + 1 * 8 + 4 + 2;
  EXPECT_NONFATAL_FAILURE(run_perturbed(entry, 1e-3, 0.0), "gaussian_diag part 0 component 1 entry 6");
}

TEST(KernelCompareHarness, CatchesOneWrongMass) {
  EXPECT_NONFATAL_FAILURE(run_perturbed(kernels::kStatHeader + 2, 1e-3, 0.0), "mass of component 2");
}

TEST(KernelCompareHarness, CatchesOneWrongResponsibility) {
  EXPECT_NONFATAL_FAILURE(run_perturbed(0, 0.0, 0.05), "row 0 component 0 responsibility");
}

}  // namespace
}  // namespace mixle::test
