// Hand-computable cases per family: log-densities (score_samples, fp64) and the M-step (fit from
// a K = 1 model with max_iter 1, so every responsibility is 1 and the result is exactly the
// M-step of the data). Inputs are small integers or dyadic fractions, so every sum is exact.
#include "engine_test_util.hpp"

#include <mixle/error.hpp>
#include <mixle/fit.hpp>

#include <gtest/gtest.h>

#include <cmath>
#include <numbers>

namespace mixle {
namespace {

using test::make_part;

// fp64 log-densities are a handful of rounded operations (log, lgamma, products) on O(1)
// values; a few ulps of the result's O(10) magnitude.
constexpr double kLogDensityTol = 1e-12;
// M-step inputs are exact in binary and their sums and quotients are exact, so the only
// rounding is in the final add of reg_covar or the division by the pseudo-counted total.
constexpr double kMStepTol = 1e-14;

const double kLog2Pi = std::log(2.0 * std::numbers::pi);

Model one_part(Part p, std::vector<double> weights = {1.0}) {
  Model m;
  m.weights = std::move(weights);
  m.parts.push_back(std::move(p));
  return m;
}

double score_one(const Model& m, std::vector<double> row) {
  const std::size_t cols = row.size();
  const auto ll = score_samples(m, Dataset::from_vector(std::move(row), 1, cols), "cpu", 1, "fp64");
  EXPECT_EQ(ll.size(), 1u);
  return ll.at(0);
}

TEST(EngineHand, GaussianDiagLogDensity) {
  Part p = make_part(Family::gaussian_diag, 0, 2);
  p.mean = {1.0, -2.0};
  p.var = {4.0, 0.25};
  // x = (3, −2): −½ log(2π·4) − 4/8 − ½ log(2π·¼) − 0 = −log 2π − ½.
  EXPECT_NEAR(score_one(one_part(p), {3.0, -2.0}), -kLog2Pi - 0.5, kLogDensityTol);
}

TEST(EngineHand, GaussianFullLogDensity) {
  Part p = make_part(Family::gaussian_full, 0, 2);
  p.mean = {0.0, 0.0};
  p.cov = {2.0, 1.0, 1.0, 2.0};
  // cov⁻¹ = ⅓[[2,−1],[−1,2]], xᵀcov⁻¹x = ⅔ at x = (1,1), det = 3.
  EXPECT_NEAR(score_one(one_part(p), {1.0, 1.0}), -1.0 / 3.0 - kLog2Pi - 0.5 * std::log(3.0), kLogDensityTol);
  // A shifted mean: x − mean = (1, 1) again.
  p.mean = {10.0, -5.0};
  EXPECT_NEAR(score_one(one_part(p), {11.0, -4.0}), -1.0 / 3.0 - kLog2Pi - 0.5 * std::log(3.0), kLogDensityTol);
}

TEST(EngineHand, CategoricalLogDensity) {
  Part p = make_part(Family::categorical, 0, 2, 3);
  p.prob = {0.25,  0.5,   0.25,   // column 0
            0.125, 0.125, 0.75};  // column 1
  EXPECT_NEAR(score_one(one_part(p), {1.0, 2.0}), std::log(0.5) + std::log(0.75), kLogDensityTol);
  EXPECT_NEAR(score_one(one_part(p), {0.0, 0.0}), std::log(0.25) + std::log(0.125), kLogDensityTol);
}

TEST(EngineHand, PoissonLogDensity) {
  Part p = make_part(Family::poisson, 0, 2);
  p.rate = {3.0, 0.5};
  // x log λ − λ − log x!, summed over the two columns.
  const double expected = (2.0 * std::log(3.0) - 3.0 - std::log(2.0)) + (5.0 * std::log(0.5) - 0.5 - std::log(120.0));
  EXPECT_NEAR(score_one(one_part(p), {2.0, 5.0}), expected, kLogDensityTol);
  // x = 0: −λ only.
  EXPECT_NEAR(score_one(one_part(p), {0.0, 0.0}), -3.5, kLogDensityTol);
}

TEST(EngineHand, ExponentialLogDensity) {
  Part p = make_part(Family::exponential, 0, 1);
  p.rate = {2.0};
  EXPECT_NEAR(score_one(one_part(p), {0.5}), std::log(2.0) - 1.0, kLogDensityTol);
  EXPECT_NEAR(score_one(one_part(p), {0.0}), std::log(2.0), kLogDensityTol);
}

TEST(EngineHand, BernoulliLogDensity) {
  Part p = make_part(Family::bernoulli, 0, 1);
  p.prob = {0.25};
  EXPECT_NEAR(score_one(one_part(p), {1.0}), std::log(0.25), kLogDensityTol);
  EXPECT_NEAR(score_one(one_part(p), {0.0}), std::log(0.75), kLogDensityTol);
}

TEST(EngineHand, BernoulliEdgeProbabilitiesGiveNoNaN) {
  // p = 0 and p = 1: the possible outcome has log-density exactly 0, never NaN (0·−inf).
  Part p = make_part(Family::bernoulli, 0, 2);
  p.prob = {0.0, 1.0};
  const double ll = score_one(one_part(p), {0.0, 1.0});
  EXPECT_FALSE(std::isnan(ll));
  EXPECT_EQ(ll, 0.0);
  // In a mixture where the other component allows the outcome, the edge component only
  // contributes zero mass: log(½·0 + ½·(½·½)).
  Part q = make_part(Family::bernoulli, 0, 2);
  q.prob = {0.0, 1.0, 0.5, 0.5};
  Model m = one_part(q, {0.5, 0.5});
  const double ll2 = score_one(m, {1.0, 0.0});
  EXPECT_NEAR(ll2, std::log(0.125), kLogDensityTol);
  const auto resp = predict_proba(m, Dataset::from_vector(std::vector<double>{1.0, 0.0}, 1, 2), "cpu", 1, "fp64");
  ASSERT_EQ(resp.size(), 2u);
  EXPECT_EQ(resp[0], 0.0);
  EXPECT_EQ(resp[1], 1.0);
}

TEST(EngineHand, MixtureOfPartsIsLogOfWeightedSum) {
  // K = 2 over a mixed record: gaussian_diag (col 0), categorical (col 1), poisson (col 2),
  // exponential (col 3), bernoulli (col 4).
  Model m;
  m.weights = {0.25, 0.75};
  Part g = make_part(Family::gaussian_diag, 0, 1);
  g.mean = {0.0, 2.0};
  g.var = {1.0, 4.0};
  Part c = make_part(Family::categorical, 1, 2, 2);
  c.prob = {0.5, 0.5, 0.25, 0.75};
  Part po = make_part(Family::poisson, 2, 3);
  po.rate = {1.0, 4.0};
  Part e = make_part(Family::exponential, 3, 4);
  e.rate = {1.0, 0.5};
  Part b = make_part(Family::bernoulli, 4, 5);
  b.prob = {0.5, 0.875};
  m.parts = {g, c, po, e, b};
  const double x0 = 1.0, x1 = 1.0, x2 = 3.0, x3 = 2.0, x4 = 1.0;
  auto component = [&](double mean, double var, double pc, double rate, double er, double bp) {
    return -0.5 * std::log(2.0 * std::numbers::pi * var) - (x0 - mean) * (x0 - mean) / (2.0 * var) + std::log(pc) +
           (x2 * std::log(rate) - rate - std::log(6.0)) + (std::log(er) - er * x3) + std::log(bp);
  };
  const double l0 = std::log(0.25) + component(0.0, 1.0, 0.5, 1.0, 1.0, 0.5);
  const double l1 = std::log(0.75) + component(2.0, 4.0, 0.75, 4.0, 0.5, 0.875);
  const double expected = std::log(std::exp(l0) + std::exp(l1));
  EXPECT_NEAR(score_one(m, {x0, x1, x2, x3, x4}), expected, kLogDensityTol);
  // Responsibilities are the normalised terms.
  const auto resp =
      predict_proba(m, Dataset::from_vector(std::vector<double>{x0, x1, x2, x3, x4}, 1, 5), "cpu", 1, "fp64");
  EXPECT_NEAR(resp[0], std::exp(l0 - expected), kLogDensityTol);
  EXPECT_NEAR(resp[1], std::exp(l1 - expected), kLogDensityTol);
}

/// One EM iteration from `init` (K = 1): the exact M-step of `data`.
Model m_step_of(const Model& init, std::vector<double> values, std::size_t rows, std::size_t cols,
                double reg_covar = 0.0, double pseudo_count = 0.0) {
  FitOptions o;
  o.init = InitMethod::model;
  o.init_model = init;
  o.max_iter = 1;
  o.precision = "fp64";
  o.reg_covar = reg_covar;
  o.pseudo_count = pseudo_count;
  o.threads = 1;
  return fit(Dataset::from_vector(std::move(values), rows, cols), o).model;
}

TEST(EngineHand, GaussianDiagMStep) {
  Part p = make_part(Family::gaussian_diag, 0, 2);
  p.mean = {3.0, -1.0};  // a non-zero shift: moments are accumulated about it
  p.var = {1.0, 1.0};
  // Columns: {1,3,5,7} → mean 4, population variance 5; {2,2,10,10} → mean 6, variance 16.
  constexpr double kReg = 0.5;
  const Model m = m_step_of(one_part(p), {1, 2, 3, 2, 5, 10, 7, 10}, 4, 2, kReg);
  const Part& q = m.parts[0];
  EXPECT_NEAR(q.mean[0], 4.0, kMStepTol);
  EXPECT_NEAR(q.mean[1], 6.0, kMStepTol);
  EXPECT_NEAR(q.var[0], 5.0 + kReg, kMStepTol);
  EXPECT_NEAR(q.var[1], 16.0 + kReg, kMStepTol);
  EXPECT_EQ(m.weights, std::vector<double>{1.0});
}

TEST(EngineHand, GaussianFullMStep) {
  Part p = make_part(Family::gaussian_full, 0, 2);
  p.mean = {1.0, 0.0};
  p.cov = {1.0, 0.0, 0.0, 1.0};
  // Rows (0,0), (2,0), (2,2), (4,2): mean (2,1); deviations (−2,−1), (0,−1), (0,1), (2,1):
  // population covariance [[2,1],[1,1]].
  constexpr double kReg = 0.25;
  const Model m = m_step_of(one_part(p), {0, 0, 2, 0, 2, 2, 4, 2}, 4, 2, kReg);
  const Part& q = m.parts[0];
  EXPECT_NEAR(q.mean[0], 2.0, kMStepTol);
  EXPECT_NEAR(q.mean[1], 1.0, kMStepTol);
  EXPECT_NEAR(q.cov[0], 2.0 + kReg, kMStepTol);
  EXPECT_NEAR(q.cov[1], 1.0, kMStepTol);
  EXPECT_NEAR(q.cov[2], 1.0, kMStepTol);
  EXPECT_NEAR(q.cov[3], 1.0 + kReg, kMStepTol);
}

TEST(EngineHand, CategoricalMStep) {
  Part p = make_part(Family::categorical, 0, 1, 3);
  p.prob = {1.0 / 3, 1.0 / 3, 1.0 / 3};
  const std::vector<double> codes = {0, 1, 1, 2, 2, 2, 2, 0};  // counts 2, 2, 4 of 8
  const Model m0 = m_step_of(one_part(p), codes, 8, 1, 0.0, 0.0);
  EXPECT_NEAR(m0.parts[0].prob[0], 0.25, kMStepTol);
  EXPECT_NEAR(m0.parts[0].prob[1], 0.25, kMStepTol);
  EXPECT_NEAR(m0.parts[0].prob[2], 0.5, kMStepTol);
  // Pseudo-count a: (count + a) / (N + V a) = (2.5, 2.5, 4.5) / 9.5.
  constexpr double kPseudo = 0.5;
  const Model m1 = m_step_of(one_part(p), codes, 8, 1, 0.0, kPseudo);
  EXPECT_NEAR(m1.parts[0].prob[0], 2.5 / 9.5, kMStepTol);
  EXPECT_NEAR(m1.parts[0].prob[1], 2.5 / 9.5, kMStepTol);
  EXPECT_NEAR(m1.parts[0].prob[2], 4.5 / 9.5, kMStepTol);
}

TEST(EngineHand, CategoricalMStepTwoColumns) {
  Part p = make_part(Family::categorical, 0, 2, 2);
  p.prob = {0.5, 0.5, 0.5, 0.5};
  // Column 0 codes {0,0,0,1}, column 1 codes {1,1,0,1}.
  const Model m = m_step_of(one_part(p), {0, 1, 0, 1, 0, 0, 1, 1}, 4, 2, 0.0, 0.0);
  EXPECT_NEAR(m.parts[0].prob[0], 0.75, kMStepTol);
  EXPECT_NEAR(m.parts[0].prob[1], 0.25, kMStepTol);
  EXPECT_NEAR(m.parts[0].prob[2], 0.25, kMStepTol);
  EXPECT_NEAR(m.parts[0].prob[3], 0.75, kMStepTol);
}

TEST(EngineHand, PoissonMStep) {
  Part p = make_part(Family::poisson, 0, 1);
  p.rate = {1.0};
  const Model m = m_step_of(one_part(p), {0, 1, 2, 5}, 4, 1);
  EXPECT_NEAR(m.parts[0].rate[0], 2.0, kMStepTol);
}

TEST(EngineHand, ExponentialMStep) {
  Part p = make_part(Family::exponential, 0, 1);
  p.rate = {1.0};
  // Mean 0.5 ⇒ rate 2.
  const Model m = m_step_of(one_part(p), {0.25, 0.25, 0.5, 1.0}, 4, 1);
  EXPECT_NEAR(m.parts[0].rate[0], 2.0, kMStepTol);
}

TEST(EngineHand, BernoulliMStep) {
  Part p = make_part(Family::bernoulli, 0, 1);
  p.prob = {0.5};
  const std::vector<double> x = {1, 0, 1, 1};
  EXPECT_NEAR(m_step_of(one_part(p), x, 4, 1, 0.0, 0.0).parts[0].prob[0], 0.75, kMStepTol);
  // Pseudo-count a: (3 + a) / (4 + 2a) = 3.5 / 5.
  constexpr double kPseudo = 0.5;
  EXPECT_NEAR(m_step_of(one_part(p), x, 4, 1, 0.0, kPseudo).parts[0].prob[0], 0.7, kMStepTol);
}

TEST(EngineHand, MixedRecordMStepAndWeights) {
  // K = 2 where component 1 gives every row zero probability (categorical code 1 impossible
  // for component 1, and every row has code 1): all responsibility goes to component 0.
  Model m;
  m.weights = {0.5, 0.5};
  Part g = make_part(Family::gaussian_diag, 0, 1);
  g.mean = {0.0, 0.0};
  g.var = {1.0, 1.0};
  Part c = make_part(Family::categorical, 1, 2, 2);
  c.prob = {0.5, 0.5, 1.0, 0.0};
  m.parts = {g, c};
  const Model r = m_step_of(m, {1, 1, 3, 1, 5, 1, 7, 1}, 4, 2, 0.0, 0.0);
  EXPECT_NEAR(r.weights[0], 1.0, kMStepTol);
  EXPECT_NEAR(r.weights[1], 0.0, kMStepTol);
  EXPECT_NEAR(r.parts[0].mean[0], 4.0, kMStepTol);
  EXPECT_NEAR(r.parts[0].var[0], 5.0, kMStepTol);
  EXPECT_NEAR(r.parts[1].prob[1], 1.0, kMStepTol);
}

}  // namespace
}  // namespace mixle
