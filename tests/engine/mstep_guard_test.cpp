// Guards of the M-step and of parameter validation that no fit reaches in the ordinary way:
// statistics with no responsibility mass at all, and a bad parameter in the first entry.
#include "engine_test_util.hpp"

#include "engine/estimator.hpp"

#include <mixle/error.hpp>
#include <mixle/model.hpp>

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace mixle {
namespace {

using test::make_part;

Model bernoulli_pair() {
  Model m;
  m.weights = {0.5, 0.5};
  Part b = make_part(Family::bernoulli, 0, 2);
  b.prob = {0.25, 0.5, 0.75, 0.5};
  m.parts = {b};
  return m;
}

TEST(EngineMStep, NoResponsibilityMassAtAllIsAnError) {
  const Model m = bernoulli_pair();
  const engine::StatLayout layout = engine::stat_layout(m);
  const std::vector<double> stats(static_cast<std::size_t>(layout.size), 0.0);
  engine::EstimatorOptions o;
  o.precision = engine::Precision::fp64;
  try {
    engine::m_step(m, stats, engine::shift_table(m, o.precision), o);
    FAIL() << "an M-step over no mass must not succeed";
  } catch (const InvalidInput& e) {
    EXPECT_NE(std::string(e.what()).find("no responsibility mass"), std::string::npos) << e.what();
  }
}

// Marginalised, a column's mass is its component's less the mass of the rows that miss it; at
// 1e-10 of the component's mass or less that difference is rounding, and the column keeps its
// parameters. Exactly at the floor: a mass of 10^10 (whose floor, 1e-10 · 10^10, rounds to 1
// exactly) less 10^10 − 1 missing is 1, held exactly.
TEST(EngineMStep, AColumnMassAtTheRoundingFloorKeepsItsParameters) {
  Model m;
  m.weights = {1.0};
  Part g = make_part(Family::gaussian_diag, 0, 1);
  g.mean = {0.0};
  g.var = {1.0};
  m.parts = {g};
  const engine::StatLayout layout = engine::stat_layout(m);
  const double mass = 1e10, missing = 1e10 - 1.0;
  ASSERT_EQ(1e-10 * mass, 1.0);
  ASSERT_EQ(mass - missing, 1.0);
  engine::EstimatorOptions o;
  o.precision = engine::Precision::fp64;
  for (const double observed_by : {1.0, 2.0}) {  // the column's mass: at the floor, then above it
    std::vector<double> stats(static_cast<std::size_t>(layout.size + engine::missing_mass_size(m)), 0.0);
    stats[kernels::kStatHeader] = mass;
    stats[static_cast<std::size_t>(layout.part_offset[0])] = 5.0 * observed_by;       // Σ r (x − 0): x = 5
    stats[static_cast<std::size_t>(layout.part_offset[0]) + 1] = 25.0 * observed_by;  // Σ r x²
    stats[static_cast<std::size_t>(layout.size)] = mass - observed_by;
    const MStepResult r = engine::m_step(m, stats, engine::shift_table(m, o.precision), o);
    EXPECT_EQ(r.model.parts[0].mean[0], observed_by > 1.0 ? 5.0 : 0.0) << "column mass " << observed_by;
  }
}

// Every entry is checked, the first and the last included.
TEST(EngineValidate, BernoulliProbabilityOutsideTheUnitIntervalAnywhere) {
  for (const std::size_t i : {std::size_t{0}, std::size_t{3}}) {
    Model m = bernoulli_pair();
    m.parts[0].prob[i] = 1.5;
    EXPECT_THROW(validate_model(m), InvalidInput) << "entry " << i;
  }
  EXPECT_NO_THROW(validate_model(bernoulli_pair()));
}

// A model file that parses but breaks a rule: the message names the file once, then the rule —
// not the validator's own "model:" prefix after it.
TEST(EngineValidate, ModelFileErrorsNameTheSourceThenTheRule) {
  const std::string text = R"({"format": "mixle-model", "version": 1, "weights": [0.5, 0.7],
    "parts": [{"family": "poisson", "columns": [0, 1], "rate": [[1], [2]]}]})";
  try {
    model_from_json(text, "weights.json");
    FAIL() << "weights summing to 1.2 must be refused";
  } catch (const InvalidInput& e) {
    const std::string what = e.what();
    EXPECT_EQ(what.rfind("weights.json:", 0), 0u) << what;
    EXPECT_EQ(what.find("model:"), std::string::npos) << what;
    EXPECT_NE(what.find("weights sum to"), std::string::npos) << what;
  }
}

}  // namespace
}  // namespace mixle
