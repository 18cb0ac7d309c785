// Edge cases beyond the acceptance list: float32 M-steps on exact inputs, model JSON round
// trips, and degenerate data without regularisation.
#include "engine_test_util.hpp"

#include <mixle/error.hpp>
#include <mixle/fit.hpp>

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace mixle {
namespace {

using test::make_part;

Model m_step_fp(const Model& init, std::vector<double> values, std::size_t rows, std::size_t cols,
                const std::string& precision, double reg_covar) {
  FitOptions o;
  o.init = InitMethod::model;
  o.init_model = init;
  o.max_iter = 1;
  o.precision = precision;
  o.reg_covar = reg_covar;
  o.pseudo_count = 0.0;
  return fit(Dataset::from_vector(std::move(values), rows, cols), o).model;
}

TEST(EngineHand, Float32MStepOnExactInputsIsExact) {
  // Small integers: every float32 product and sum below 2²⁴ is exact, so fp32 gives the same
  // exact M-step as fp64.
  constexpr double kReg = 0.5;
  constexpr double kMStepTol = 1e-14;  // only the add of reg_covar rounds
  Model m;
  m.weights = {1.0};
  Part g = make_part(Family::gaussian_diag, 0, 2);
  g.mean = {3.0, -1.0};
  g.var = {1.0, 1.0};
  Part f = make_part(Family::gaussian_full, 2, 4);
  f.mean = {1.0, 0.0};
  f.cov = {1.0, 0.0, 0.0, 1.0};
  m.parts = {g, f};
  const std::vector<double> x = {1, 2, 0, 0, 3, 2, 2, 0, 5, 10, 2, 2, 7, 10, 4, 2};
  const Model r = m_step_fp(m, x, 4, 4, "fp32", kReg);
  EXPECT_NEAR(r.parts[0].mean[0], 4.0, kMStepTol);
  EXPECT_NEAR(r.parts[0].mean[1], 6.0, kMStepTol);
  EXPECT_NEAR(r.parts[0].var[0], 5.0 + kReg, kMStepTol);
  EXPECT_NEAR(r.parts[0].var[1], 16.0 + kReg, kMStepTol);
  EXPECT_NEAR(r.parts[1].mean[0], 2.0, kMStepTol);
  EXPECT_NEAR(r.parts[1].mean[1], 1.0, kMStepTol);
  EXPECT_NEAR(r.parts[1].cov[0], 2.0 + kReg, kMStepTol);
  EXPECT_NEAR(r.parts[1].cov[1], 1.0, kMStepTol);
  EXPECT_NEAR(r.parts[1].cov[3], 1.0 + kReg, kMStepTol);
}

TEST(EngineHand, ModelJsonRoundTripIsExact) {
  Model m;
  m.weights = {0.1, 0.9};
  Part g = make_part(Family::gaussian_diag, 0, 1);
  g.mean = {1.0 / 3.0, -1e-300};
  g.var = {std::nextafter(1.0, 2.0), 1e300};
  Part c = make_part(Family::categorical, 1, 3, 2);
  c.prob = {0.1, 0.9, 1.0 / 3.0, 2.0 / 3.0, 0.5, 0.5, 0.0, 1.0};
  Part e = make_part(Family::exponential, 3, 4);
  e.rate = {std::numbers::pi, 5e-324};
  m.parts = {g, c, e};
  const Model r = model_from_json(model_to_json(m));
  EXPECT_EQ(r.weights, m.weights);
  EXPECT_EQ(r.parts[0].mean, g.mean);
  EXPECT_EQ(r.parts[0].var, g.var);
  EXPECT_EQ(r.parts[1].prob, c.prob);
  EXPECT_EQ(r.parts[1].categories, 2u);
  EXPECT_EQ(r.parts[2].rate, e.rate);
  EXPECT_EQ(model_to_json(r), model_to_json(m));
}

TEST(EngineDegenerate, IdenticalRowsWithoutRegularisation) {
  // reg_covar = 0 on identical rows: the variance collapses to 0. Either the fit stops with
  // InvalidInput saying to raise reg_covar (as scikit-learn does), or it ends with a valid,
  // finite model — never NaN and never a message blaming the data for NaN.
  const std::size_t N = 300;
  std::vector<double> v(N * 2);
  for (std::size_t i = 0; i < N; ++i) v[2 * i] = 1.5, v[2 * i + 1] = static_cast<double>(i % 3);
  for (const char* layout : {"gaussian_diag", "gaussian_full"})
    for (const char* precision : {"fp32", "fp64"}) {
      SCOPED_TRACE(std::string(layout) + " " + precision);
      FitOptions o;
      o.components = 2;
      o.layout = layout;
      o.reg_covar = 0.0;
      o.precision = precision;
      o.max_iter = 10;
      try {
        const FitResult r = fit(Dataset::from_vector(v, N, 2), o);
        EXPECT_TRUE(test::all_finite(r.model)) << model_to_json(r.model);
        EXPECT_NO_THROW(validate_model(r.model)) << model_to_json(r.model);
      } catch (const InvalidInput& e) {
        EXPECT_NE(std::string(e.what()).find("reg"), std::string::npos) << e.what();
      }
    }
}

}  // namespace
}  // namespace mixle
