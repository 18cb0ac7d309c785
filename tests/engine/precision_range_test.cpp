// Valid float64 parameters that float32 cannot represent (a variance of 1e-300 whose −1/(2 var)
// overflows, an exponential rate of 1e300): scoring or fitting in fp32 must not turn them into
// NaN log-densities and then report the rows as "zero probability under every component".
#include "engine_test_util.hpp"

#include "engine/estimator.hpp"
#include "kernels/cpu/cpu_kernels.hpp"

#include <mixle/error.hpp>
#include <mixle/fit.hpp>

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <numbers>
#include <string>
#include <utility>
#include <vector>

namespace mixle {
namespace {

using test::make_part;

/// fp32 either gives the right answer or refuses the model with InvalidInput; it must never
/// blame the data with ImpossibleEvidence (the rows are possible, and likely).
void expect_fp32_honest(const Model& m, const Dataset& data, double expected_first) {
  // fp64 is the reference: the row is possible.
  const auto ll64 = score_samples(m, data, "cpu", 1, "fp64");
  EXPECT_NEAR(ll64[0], expected_first, 1e-9 * std::abs(expected_first));
  try {
    const auto ll32 = score_samples(m, data, "cpu", 1, "fp32");
    EXPECT_TRUE(std::isfinite(ll32[0]));
  } catch (const ImpossibleEvidence& e) {
    ADD_FAILURE() << "fp32 blamed the data: " << e.what();
  } catch (const InvalidInput& e) {
    EXPECT_NE(std::string(e.what()).find("fp32"), std::string::npos) << e.what();
  }
}

TEST(EnginePrecisionRange, TinyVarianceInFp32) {
  Model m;
  m.weights = {1.0};
  Part g = make_part(Family::gaussian_diag, 0, 1);
  g.mean = {0.0};
  g.var = {1e-300};
  m.parts = {g};
  // x at the mean: log p = −½ log(2π·1e-300).
  expect_fp32_honest(m, Dataset::from_vector(std::vector<double>{0.0}, 1, 1),
                     -0.5 * std::log(2.0 * std::numbers::pi * 1e-300));
}

// The range check reads every component's coefficients: here the second of two, in a part of
// two columns, holds the variance float32 cannot invert — fp32 refuses it by name.
TEST(EnginePrecisionRange, TheComponentOutOfRangeIsNamedWhicheverItIs) {
  Model m;
  m.weights = {0.5, 0.5};
  Part g = make_part(Family::gaussian_diag, 0, 2);
  g.mean = {0.0, 0.0, 5.0, 5.0};
  g.var = {1.0, 1.0, 1.0, 1e-300};
  m.parts = {g};
  const Dataset row = Dataset::from_vector(std::vector<double>{0.0, 0.0}, 1, 2);
  try {
    (void)score_samples(m, row, "cpu", 1, "fp32");
    ADD_FAILURE() << "fp32 scored a model it cannot represent";
  } catch (const InvalidInput& e) {
    EXPECT_NE(std::string(e.what()).find("component 1"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("fp32"), std::string::npos) << e.what();
  }
}

// In a model of two parts, the refusal names the part that holds the coefficient and the
// coefficient itself: a value float32 cannot hold, not the other part's.
TEST(EnginePrecisionRange, TheRefusalNamesThePartAndItsOwnCoefficient) {
  Model m;
  m.weights = {0.5, 0.5};
  Part g = make_part(Family::gaussian_diag, 0, 1);
  g.mean = {0.0, 5.0};
  g.var = {1.0, 1e-300};
  Part e = make_part(Family::exponential, 1, 2);
  e.rate = {2.0, 3.0};
  m.parts = {g, e};
  const Dataset row = Dataset::from_vector(std::vector<double>{0.0, 1.0}, 1, 2);
  std::string message;
  try {
    (void)score_samples(m, row, "cpu", 1, "fp32");
  } catch (const InvalidInput& e) {
    message = e.what();
  }
  ASSERT_FALSE(message.empty()) << "fp32 scored a model it cannot represent";
  EXPECT_NE(message.find("parts[0] (gaussian_diag), component 1"), std::string::npos) << message;
  const std::string before = "packed coefficient (from a parameter) ";
  const auto at = message.find(before);
  ASSERT_NE(at, std::string::npos) << message;
  const double value = std::stod(message.substr(at + before.size()));
  EXPECT_GT(std::abs(value), static_cast<double>(std::numeric_limits<float>::max())) << message;
}

// float64 has a range too: a subnormal variance's −1/(2 var) overflows it. The refusal names
// fp64 and does not send the user to the precision already in use.
TEST(EnginePrecisionRange, ASubnormalVarianceIsOutsideFp64) {
  Model m;
  m.weights = {1.0};
  Part g = make_part(Family::gaussian_diag, 0, 1);
  g.mean = {0.0};
  g.var = {1e-320};
  m.parts = {g};
  std::string message;
  try {
    (void)score_samples(m, Dataset::from_vector(std::vector<double>{0.0}, 1, 1), "cpu", 1, "fp64");
  } catch (const InvalidInput& e) {
    message = e.what();
  }
  ASSERT_FALSE(message.empty()) << "fp64 scored a variance whose inverse it cannot hold";
  EXPECT_NE(message.find("outside the range of the compute precision fp64; raise --reg-covar"), std::string::npos)
      << message;
  EXPECT_EQ(message.find("use --precision fp64"), std::string::npos) << message;
}

TEST(EnginePrecisionRange, HugeExponentialRateInFp32) {
  Model m;
  m.weights = {1.0};
  Part e = make_part(Family::exponential, 0, 1);
  e.rate = {1e300};
  m.parts = {e};
  // x = 0: log p = log rate.
  expect_fp32_honest(m, Dataset::from_vector(std::vector<double>{0.0}, 1, 1), std::log(1e300));
}

TEST(EnginePrecisionRange, HugeMeanInFp32) {
  Model m;
  m.weights = {1.0};
  Part g = make_part(Family::gaussian_full, 0, 1);
  g.mean = {1e300};
  g.cov = {1.0};
  m.parts = {g};
  expect_fp32_honest(m, Dataset::from_vector(std::vector<double>{1e300}, 1, 1),
                     -0.5 * std::log(2.0 * std::numbers::pi));
}

// A mean float32 cannot hold is refused in fp32 before any row is scored, naming its part —
// the first as well as a later one — and its value as written (not 40 digits of it).
TEST(EnginePrecisionRange, AMeanPastFloat32IsRefusedInAnyPart) {
  // float32 ends at 3.4e38.
  Part huge = make_part(Family::gaussian_diag, 0, 1), plain = make_part(Family::gaussian_diag, 1, 2);
  huge.mean = {1e39};
  huge.var = {1.0};
  plain.mean = {0.0};
  plain.var = {1.0};
  const Dataset rows = Dataset::from_vector(std::vector<double>{1e39, 0.0}, 1, 2);
  for (const bool first : {true, false}) {
    Model m;
    m.weights = {1.0};
    m.parts = first ? std::vector<Part>{huge, plain} : std::vector<Part>{plain, huge};
    if (!first) {  // the same columns, in the other part order
      m.parts[0].col_begin = 1, m.parts[0].col_end = 2;
      m.parts[1].col_begin = 0, m.parts[1].col_end = 1;
    }
    SCOPED_TRACE(first ? "huge mean in part 0" : "huge mean in part 1");
    EXPECT_TRUE(std::isfinite(score_samples(m, rows, "cpu", 1, "fp64")[0]));
    test::expect_invalid_input(
        [&] { (void)score_samples(m, rows, "cpu", 1, "fp32"); },
        {std::string("model parts[") + (first ? "0" : "1") +
         "] (gaussian_diag), component 0: packed coefficient (from a parameter) 1e+39 is outside the "
         "range of the compute precision fp32"});
  }
}

// pack_model's last guard, on what reaches it unvalidated: a component whose normalising
// constant is NaN (here from a NaN weight) is named, with its own value.
TEST(EnginePrecisionRange, ANormalisingConstantOutOfRangeNamesItsComponent) {
  Model m;
  m.weights = {0.5, std::numeric_limits<double>::quiet_NaN()};
  Part g = make_part(Family::gaussian_diag, 0, 1);
  g.mean = {0.0, 1.0};
  g.var = {1.0, 1.0};
  m.parts = {g};
  test::expect_invalid_input([&] { (void)engine::pack_model<float>(m, 1); },
                             {"model component 1: its normalising constant nan is outside the range of the compute "
                              "precision fp32"});
}

/// A one-column gaussian_diag model packed by hand in the kernels' layout (model_view.hpp): the
/// engine refuses parameters that would produce NaN, so the NaN-row tests reach the kernel
/// directly. Per component k: log_const[k] (log weight plus the normaliser), mean[k] and variance 1
/// (coefficients mean, −½); the shift is the mean.
class OneColumnDiag {
 public:
  OneColumnDiag(std::vector<float> log_const, const std::vector<float>& means)
      : log_const_(std::move(log_const)), shift_(means) {
    const int k_count = static_cast<int>(means.size());
    for (const float mean : means) coef_.insert(coef_.end(), {mean, -0.5f});
    part_.kind = kernels::PartKind::gaussian_diag;
    part_.col_begin = 0;
    part_.dims = 1;
    part_.coef = coef_.data();
    part_.coef_stride = 2;
    part_.shift = shift_.data();
    part_.stat_offset = 2 + k_count;  // after the log-likelihood, the row count and K masses
    part_.stat_stride = 2;            // Σ r (x−s), Σ r (x−s)²
    view_.components = k_count;
    view_.columns = 1;
    view_.log_const = log_const_.data();
    view_.parts = &part_;
    view_.num_parts = 1;
    view_.stat_size = 2 + 3 * k_count;
  }
  OneColumnDiag(const OneColumnDiag&) = delete;
  OneColumnDiag& operator=(const OneColumnDiag&) = delete;

  [[nodiscard]] const kernels::ModelView<float>& view() const { return view_; }

 private:
  std::vector<float> log_const_, shift_, coef_;
  kernels::PartView<float> part_;
  kernels::ModelView<float> view_;
};

// The row maximum `l > mx ? l : mx` skips NaN; a row NaN in every component must still be
// counted as a NaN row (InvalidInput), not as impossible (ImpossibleEvidence).
TEST(EngineKernelRules, AllNaNRowIsReportedAsNaNNotImpossible) {
  const OneColumnDiag model({std::numeric_limits<float>::quiet_NaN()}, {0.0f});
  const float x[3] = {0.0f, 1.0f, 2.0f};
  double loglik[3];
  const kernels::PassReport r = kernels::cpu::score(model.view(), x, 3, 1, loglik, nullptr, kernels::cpu::Options{});
  EXPECT_EQ(r.nan_rows, 3);
  EXPECT_EQ(r.impossible_rows, 0);
}

// A NaN is the row's own: with two components, a NaN value in row 2 makes row 2 a NaN row and
// leaves row 1 — impossible (x = +inf) — an impossible row, whether the pass writes
// responsibilities or log-likelihoods only; the finite rows keep their log-likelihoods.
TEST(EngineKernelRules, ANaNRowLeavesItsNeighboursAlone) {
  // log weight ½ plus the normal's −½ log 2π, per component.
  const float c = static_cast<float>(std::log(0.5) - 0.5 * std::log(2 * std::numbers::pi));
  const OneColumnDiag model({c, c}, {0.0f, 3.0f});
  const float x[4] = {0.0f, std::numeric_limits<float>::infinity(), std::numeric_limits<float>::quiet_NaN(), 3.0f};
  // log(½ N(0; 0, 1) + ½ N(0; 3, 1)), and the same at 3 by symmetry.
  const double want = std::log(0.5 * std::exp(-0.5 * std::log(2 * std::numbers::pi)) * (1.0 + std::exp(-4.5)));
  for (const bool with_resp : {true, false}) {
    SCOPED_TRACE(with_resp ? "responsibilities" : "log-likelihoods only");
    double loglik[4], resp[8];
    const kernels::PassReport r =
        kernels::cpu::score(model.view(), x, 4, 1, loglik, with_resp ? resp : nullptr, kernels::cpu::Options{});
    EXPECT_EQ(r.nan_rows, 1);
    EXPECT_EQ(r.impossible_rows, 1);
    EXPECT_NEAR(loglik[0], want, 1e-6);
    EXPECT_EQ(loglik[1], -std::numeric_limits<double>::infinity());
    EXPECT_TRUE(std::isnan(loglik[2]));
    EXPECT_NEAR(loglik[3], want, 1e-6);
  }
}

}  // namespace
}  // namespace mixle
