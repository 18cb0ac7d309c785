// gamma and lognormal, checked against what they must equal: gamma with shape 1 is the
// exponential family, a lognormal is a normal of log x less Σ log x, hand values, the M-step's
// fixed point, recovery of known mixtures, the model file and the data rules.
#include "engine_test_util.hpp"

#include <mixle/error.hpp>
#include <mixle/fit.hpp>
#include <mixle/model.hpp>

#include "common/require.hpp"

#include <boost/math/special_functions/digamma.hpp>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <numbers>
#include <sstream>

namespace mixle {
namespace {

using test::make_part;

Dataset column_data(const std::vector<double>& x) { return Dataset::from_vector(x, x.size(), 1); }

const std::vector<double> kPositive = {0.05, 0.3, 1.0, 1.5, 2.75, 7.0, 31.0};

TEST(GammaFamily, ShapeOneIsTheExponential) {
  Model gamma{{1.0}, {make_part(Family::gamma, 0, 1)}};
  gamma.parts[0].shape = {1.0};
  gamma.parts[0].rate = {2.5};
  Model exponential{{1.0}, {make_part(Family::exponential, 0, 1)}};
  exponential.parts[0].rate = {2.5};
  const auto a = score_samples(gamma, column_data(kPositive));
  const auto b = score_samples(exponential, column_data(kPositive));
  for (std::size_t i = 0; i < kPositive.size(); ++i) EXPECT_NEAR(a[i], b[i], 1e-12) << kPositive[i];
}

TEST(GammaFamily, HandValues) {
  // shape 2, rate 3: p(x) = 9 x e^(−3x) (Γ(2) = 1); shape 3, rate 1: x² e^(−x) / 2.
  Model m{{1.0}, {make_part(Family::gamma, 0, 2)}};
  m.parts[0].shape = {2.0, 3.0};
  m.parts[0].rate = {3.0, 1.0};
  const auto got = score_samples(m, Dataset::from_vector(std::vector<double>{1.5, 4.0}, 1, 2));
  const double want = std::log(9.0 * 1.5 * std::exp(-4.5)) + std::log(16.0 * std::exp(-4.0) / 2.0);
  EXPECT_NEAR(got[0], want, 1e-12);
  // The same in float32, within its rounding.
  const auto f32 = score_samples(m, Dataset::from_vector(std::vector<double>{1.5, 4.0}, 1, 2), "cpu", 1, "fp32");
  EXPECT_NEAR(f32[0], want, 1e-5);
}

TEST(LognormalFamily, IsTheNormalOfLogXLessLogX) {
  Model lognormal{{0.4, 0.6}, {make_part(Family::lognormal, 0, 1)}};
  lognormal.parts[0].mean = {-0.5, 1.0};
  lognormal.parts[0].var = {0.3, 2.0};
  Model normal = lognormal;
  normal.parts[0].family = Family::gaussian_diag;
  std::vector<double> logs;
  for (double x : kPositive) logs.push_back(std::log(x));
  const auto a = score_samples(lognormal, column_data(kPositive));
  const auto b = score_samples(normal, column_data(logs));
  for (std::size_t i = 0; i < kPositive.size(); ++i) EXPECT_NEAR(a[i], b[i] - logs[i], 1e-12) << kPositive[i];
  // Hand value: the standard lognormal at x = 1 is −½ log 2π.
  Model standard{{1.0}, {make_part(Family::lognormal, 0, 1)}};
  standard.parts[0].mean = {0.0};
  standard.parts[0].var = {1.0};
  EXPECT_NEAR(score_samples(standard, column_data({1.0}))[0], -0.5 * std::log(2.0 * std::numbers::pi), 1e-14);
}

/// The numbers a command prints, one per line.
std::vector<double> run_numbers(const std::string& command) {
  std::vector<double> out;
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return out;
  char line[128];
  while (std::fgets(line, sizeof line, pipe)) out.push_back(std::strtod(line, nullptr));
  pclose(pipe);
  return out;
}

// scipy.stats as the reference (the interpreter CMake found with scipy, tests/CMakeLists.txt):
// gamma.logpdf(x, a, scale=1/β) and lognorm.logpdf(x, s=σ, scale=e^μ) at positive values from
// 1e-3 to 1e3 and parameters from 0.3 to 40, against mixle's fp64 score of a one-component model.
TEST(PositiveFamilies, LogDensitiesMatchScipyStats) {
  const std::string python = MIXLE_TEST_SCIPY_PYTHON;
  if (python.empty()) {
    if (test::tools_required())
      FAIL() << "no Python with scipy was found at configure time, and MIXLE_REQUIRE_TOOLS=1 "
                "(Debian: apt-get install python3-scipy, then configure again)";
    GTEST_SKIP() << "no Python with scipy was found at configure time (Debian: apt-get install python3-scipy)";
  }
  const std::vector<double> xs = {1e-3, 0.05, 0.7, 1.0, 2.5, 9.0, 40.0, 1e3};
  struct Case {
    Family family;
    double first, second;  // gamma: shape, rate; lognormal: log_mean, log_var
  };
  for (const Case c : {Case{Family::gamma, 0.3, 2.0}, Case{Family::gamma, 1.0, 0.5}, Case{Family::gamma, 7.5, 3.0},
                       Case{Family::gamma, 40.0, 0.8}, Case{Family::lognormal, 0.0, 1.0},
                       Case{Family::lognormal, -1.5, 0.3}, Case{Family::lognormal, 2.0, 4.0}}) {
    std::ostringstream script;
    script.precision(17);
    script << "import scipy.stats as s, math\nfor x in [";
    for (double x : xs) script << x << ",";
    if (c.family == Family::gamma)
      script << "]: print(repr(float(s.gamma.logpdf(x, " << c.first << ", scale=1/" << c.second << "))))";
    else
      script << "]: print(repr(float(s.lognorm.logpdf(x, math.sqrt(" << c.second << "), scale=math.exp(" << c.first
             << ")))))";
    const std::vector<double> want = run_numbers(python + " -c '" + script.str() + "'");
    ASSERT_EQ(want.size(), xs.size()) << script.str();
    Model m{{1.0}, {make_part(c.family, 0, 1)}};
    if (c.family == Family::gamma) {
      m.parts[0].shape = {c.first};
      m.parts[0].rate = {c.second};
    } else {
      m.parts[0].mean = {c.first};
      m.parts[0].var = {c.second};
    }
    const auto got = score_samples(m, column_data(xs));
    for (std::size_t i = 0; i < xs.size(); ++i)
      EXPECT_NEAR(got[i], want[i], 1e-12 * std::max(1.0, std::abs(want[i])))
          << family_name(c.family) << "(" << c.first << ", " << c.second << ") at x = " << xs[i];
  }
}

FitOptions one_component(const std::string& layout) {
  FitOptions o;
  o.components = 1;
  o.layout = layout;
  o.max_iter = 3;
  o.threads = 1;
  o.precision = "fp64";
  return o;
}

// With K = 1 one M-step gives the maximum-likelihood estimate: log α − ψ(α) = log x̄ − mean log x
// and β = α / x̄. Two values 1 and r make the gap log((1 + r) / (2√r)): r from 1.003 to 1e52
// sweeps it from 1e-6 (α ≈ 5·10⁵) to 59 (α ≈ 0.008).
TEST(GammaFamily, MStepSolvesTheLikelihoodEquation) {
  std::vector<std::vector<double>> datasets = {kPositive};
  for (double r : {1.003, 1.1, 2.0, 10.0, 1e3, 1e6, 1e12, 1e30, 1e52}) datasets.push_back({1.0, r});
  for (const auto& x : datasets) {
    const FitResult r = fit(column_data(x), one_component("gamma"));
    double mean = 0.0, mean_log = 0.0;
    for (double v : x) mean += v / x.size(), mean_log += std::log(v) / x.size();
    const double gap = std::log(mean) - mean_log;
    const double alpha = r.model.parts[0].shape[0];
    ASSERT_TRUE(std::isfinite(alpha) && alpha > 0.0) << "gap " << gap;
    EXPECT_NEAR(std::log(alpha) - boost::math::digamma(alpha), gap, 1e-10 * std::max(1.0, gap)) << "gap " << gap;
    EXPECT_NEAR(r.model.parts[0].rate[0], alpha / mean, 1e-10 * alpha / mean) << "gap " << gap;
  }
}

// A component whose values are all equal has no finite maximum-likelihood shape: the M-step
// stops at the documented gap (α ≈ 5·10⁵), finite, with the component's mean kept.
TEST(GammaFamily, EqualValuesGiveALargeFiniteShape) {
  const FitResult r = fit(column_data({2.0, 2.0, 2.0, 2.0}), one_component("gamma"));
  const double alpha = r.model.parts[0].shape[0];
  EXPECT_GT(alpha, 1e5);
  EXPECT_LT(alpha, 1e6);
  EXPECT_NEAR(alpha / r.model.parts[0].rate[0], 2.0, 1e-9);
}

TEST(LognormalFamily, MStepIsTheMomentsOfLogX) {
  FitOptions o = one_component("lognormal");
  o.reg_covar = 0.0;
  const FitResult r = fit(column_data(kPositive), o);
  double m1 = 0.0, m2 = 0.0;
  for (double x : kPositive) m1 += std::log(x) / kPositive.size();
  for (double x : kPositive) m2 += (std::log(x) - m1) * (std::log(x) - m1) / kPositive.size();
  EXPECT_NEAR(r.model.parts[0].mean[0], m1, 1e-12);
  EXPECT_NEAR(r.model.parts[0].var[0], m2, 1e-12);
}

FitResult fit_mixture(const Model& truth, const std::string& layout) {
  const Dataset data = sample(truth, 20000, 9);
  FitOptions o;
  o.components = truth.components();
  o.layout = layout;
  o.init = InitMethod::kmeanspp;
  o.seed = 9;
  o.n_init = 2;
  o.max_iter = 300;
  o.tol = 1e-8;
  o.threads = 1;
  o.precision = "fp64";
  const FitResult r = fit(data, o);
  EXPECT_TRUE(r.converged);
  EXPECT_TRUE(test::all_finite(r.model));
  test::expect_monotone(r.mean_loglik, 1e-9);
  return r;
}

// Two components far apart (means 2 and 20 in each of two columns): weights within 0.01,
// shapes and rates within 10% (≥ 6000 rows each: the shape's relative standard error is
// about √(2/n) ≈ 2%, plus the overlap's bias).
TEST(GammaFamily, RecoversAKnownMixture) {
  Model truth{{0.3, 0.7}, {make_part(Family::gamma, 0, 2)}};
  truth.parts[0].shape = {2.0, 4.0, 20.0, 40.0};
  truth.parts[0].rate = {1.0, 2.0, 1.0, 2.0};
  const FitResult r = fit_mixture(truth, "gamma");
  const std::size_t first = r.model.parts[0].shape[0] < r.model.parts[0].shape[2] ? 0 : 1;
  for (std::size_t k = 0; k < 2; ++k) {
    const std::size_t j = k == 0 ? first : 1 - first;
    EXPECT_NEAR(r.model.weights[j], truth.weights[k], 0.01);
    for (std::size_t d = 0; d < 2; ++d) {
      EXPECT_NEAR(r.model.parts[0].shape[j * 2 + d] / truth.parts[0].shape[k * 2 + d], 1.0, 0.1) << k << "," << d;
      EXPECT_NEAR(r.model.parts[0].rate[j * 2 + d] / truth.parts[0].rate[k * 2 + d], 1.0, 0.1) << k << "," << d;
    }
  }
}

TEST(LognormalFamily, RecoversAKnownMixture) {
  Model truth{{0.4, 0.6}, {make_part(Family::lognormal, 0, 2)}};
  truth.parts[0].mean = {-1.0, 0.0, 2.0, 3.0};
  truth.parts[0].var = {0.1, 0.2, 0.15, 0.05};
  const FitResult r = fit_mixture(truth, "lognormal");
  const std::size_t first = r.model.parts[0].mean[0] < r.model.parts[0].mean[2] ? 0 : 1;
  for (std::size_t k = 0; k < 2; ++k) {
    const std::size_t j = k == 0 ? first : 1 - first;
    EXPECT_NEAR(r.model.weights[j], truth.weights[k], 0.01);
    for (std::size_t d = 0; d < 2; ++d) {
      EXPECT_NEAR(r.model.parts[0].mean[j * 2 + d], truth.parts[0].mean[k * 2 + d], 0.02) << k << "," << d;
      EXPECT_NEAR(r.model.parts[0].var[j * 2 + d] / truth.parts[0].var[k * 2 + d], 1.0, 0.05) << k << "," << d;
    }
  }
}

TEST(PositiveFamilies, ModelFileRoundTripsUnderTheFamiliesFieldNames) {
  Model m{{0.5, 0.5}, {make_part(Family::gamma, 0, 1), make_part(Family::lognormal, 1, 2)}};
  m.parts[0].shape = {2.0, 3.5};
  m.parts[0].rate = {1.0, 0.25};
  m.parts[1].mean = {0.0, -1.0};
  m.parts[1].var = {1.0, 0.5};
  const std::string text = model_to_json(m);
  for (const char* field : {"\"shape\"", "\"rate\"", "\"log_mean\"", "\"log_var\""})
    EXPECT_NE(text.find(field), std::string::npos) << field << "\n" << text;
  const Model back = model_from_json(text);
  EXPECT_EQ(back.parts[0].shape, m.parts[0].shape);
  EXPECT_EQ(back.parts[0].rate, m.parts[0].rate);
  EXPECT_EQ(back.parts[1].mean, m.parts[1].mean);
  EXPECT_EQ(back.parts[1].var, m.parts[1].var);
  // A bad value is named by the file's field.
  m.parts[1].var[1] = -1.0;
  try {
    validate_model(m);
    FAIL() << "a negative log_var is refused";
  } catch (const InvalidInput& e) {
    EXPECT_NE(std::string(e.what()).find("log_var[1][0]"), std::string::npos) << e.what();
  }
  m.parts[1].var[1] = 0.5;
  m.parts[0].shape[0] = 0.0;
  EXPECT_THROW(validate_model(m), InvalidInput);
}

TEST(PositiveFamilies, DataMustBePositive) {
  for (const char* layout : {"gamma", "lognormal"}) {
    try {
      fit(column_data({1.0, 2.0, 0.0, 3.0}), one_component(layout));
      FAIL() << layout << " refuses 0";
    } catch (const InvalidInput& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("row 2"), std::string::npos) << what;
      EXPECT_NE(what.find("> 0"), std::string::npos) << what;
      EXPECT_NE(what.find(layout), std::string::npos) << what;
    }
  }
}

}  // namespace
}  // namespace mixle
