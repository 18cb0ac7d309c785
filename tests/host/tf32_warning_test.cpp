// A TF32 fit's warning (host/fit_driver.cpp): fit_handle adds what the expansion cost the kept
// model, for tf32 only. The CPU kernels refuse tf32, so each restart here is a hook that returns
// its initial model, as a device's EM returns its fit; `CudaCli.Tf32FitReportsWhatTheExpansionCost`
// runs the real thing on a device (or the simulator).
#include "engine/compute.hpp"
#include "engine/local_handle.hpp"
#include "engine/tf32_expansion.hpp"
#include "host/fit_driver.hpp"

#include <mixle/data.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

namespace mixle::test {
namespace {

FitResult fit_returning_the_initial_model(const Model& model, const std::string& precision) {
  std::vector<float> rows;
  for (int r = 0; r < 20; ++r) rows.insert(rows.end(), {static_cast<float>(r % 7), static_cast<float>(r % 3)});
  engine::LocalEncodedData handle(Dataset::from_vector(std::move(rows), 20, 2), engine::make_cpu_compute(1));
  FitOptions o;
  o.init = InitMethod::model;
  o.init_model = model;
  o.precision = precision;
  o.max_iter = 1;
  host::FitHooks hooks;
  hooks.run_restart = [](Model initial, const engine::EmOptions&, double& rows_out, double& loglik) {
    engine::EmResult r;
    r.model = std::move(initial);
    r.iterations = 1;
    r.converged = true;
    rows_out = 20.0;
    loglik = -40.0;
    return r;
  };
  return host::fit_handle(handle, o, hooks);
}

TEST(FitHandleTf32, WarnsWhatTheExpansionCostTheKeptModel) {
  Model m;
  m.weights = {0.5, 0.5};
  m.parts.push_back(
      Part{.family = Family::gaussian_diag, .col_begin = 0, .col_end = 2, .mean = {1, 1, 5, 2}, .var = {1, 1, 2, 1}});
  const std::string note = host::tf32_note(engine::tf32_expansion(m));
  EXPECT_NE(note.find("precision tf32:"), std::string::npos) << note;
  const FitResult tf32 = fit_returning_the_initial_model(m, "tf32");
  EXPECT_EQ(std::count(tf32.warnings.begin(), tf32.warnings.end(), note), 1) << "expected: " << note;
  for (const std::string precision : {"fp32", "fp64"}) {
    const FitResult other = fit_returning_the_initial_model(m, precision);
    for (const std::string& w : other.warnings) EXPECT_EQ(w.find("tf32"), std::string::npos) << precision << ": " << w;
  }
  // TF32 expands only gaussian_diag log-densities: a model without one has nothing to report.
  Model counts;
  counts.weights = {0.5, 0.5};
  counts.parts.push_back(Part{.family = Family::poisson, .col_begin = 0, .col_end = 2, .rate = {1, 2, 3, 4}});
  for (const std::string& w : fit_returning_the_initial_model(counts, "tf32").warnings)
    EXPECT_EQ(w.find("tf32"), std::string::npos) << w;
}

TEST(FitHandleTf32, NamesTheDistanceAndTheBoundInTheWarning) {
  engine::Tf32Expansion cost;
  cost.applies = true;
  cost.r = 3.14159;
  cost.r_sqrt_d = 6.28318;
  cost.row_bound = 0.123456;
  const std::string note = host::tf32_note(cost);  // three significant digits
  EXPECT_NE(note.find("up to 3.14 of its standard deviations"), std::string::npos) << note;
  EXPECT_NE(note.find("R*sqrt(D) = 6.28)"), std::string::npos) << note;
  EXPECT_NE(note.find("off by up to 0.123 nats"), std::string::npos) << note;
}

}  // namespace
}  // namespace mixle::test
