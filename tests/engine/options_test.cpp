// Option validation: bad options are refused up front with InvalidInput naming the option, and
// the CPU kernels treat precisions alike in fit and score.
#include "engine_test_util.hpp"

#include <mixle/error.hpp>
#include <mixle/fit.hpp>

#include <gtest/gtest.h>

#include <functional>
#include <vector>

namespace mixle {
namespace {

Dataset small_data() {
  std::vector<double> v;
  for (int i = 0; i < 64; ++i) v.push_back(static_cast<double>(i % 8));
  return Dataset::from_vector(std::move(v), 64, 1);
}

/// One component, N(0, 1) over column 0.
Model standard_normal() {
  Model m;
  m.weights = {1.0};
  Part p = test::make_part(Family::gaussian_diag, 0, 1);
  p.mean = {0.0};
  p.var = {1.0};
  m.parts = {p};
  return m;
}

void expect_invalid_naming(const FitOptions& o, const std::string& word) {
  int calls = 0;
  FitOptions with_progress = o;
  with_progress.progress = [&](const FitProgress&) { ++calls; };
  try {
    fit(small_data(), with_progress);
    FAIL() << "no InvalidInput for " << word;
  } catch (const InvalidInput& e) {
    EXPECT_NE(std::string(e.what()).find(word), std::string::npos) << e.what();
  }
  EXPECT_EQ(calls, 0) << "EM iterations ran before " << word << " was refused";
}

TEST(EngineOptions, BadOptionsRefusedBeforeAnyIteration) {
  FitOptions o;
  o.components = 2;
  FitOptions a = o;
  a.max_iter = 0;
  expect_invalid_naming(a, "max_iter");
  FitOptions b = o;
  b.tol = -1.0;
  expect_invalid_naming(b, "tol");
  FitOptions c = o;
  c.reg_covar = -1.0;
  expect_invalid_naming(c, "reg_covar");
  FitOptions d = o;
  d.precision = "fp16";
  expect_invalid_naming(d, "fp16");
  FitOptions e = o;
  e.n_init = 0;
  expect_invalid_naming(e, "n_init");
  // Also when the fit starts from a model (one start whatever n_init says): 0 is still no count.
  Model start;
  start.weights = {0.5, 0.5};
  Part normal;
  normal.family = Family::gaussian_diag;
  normal.col_begin = 0;
  normal.col_end = 1;
  normal.mean = {1.0, 6.0};
  normal.var = {1.0, 1.0};
  start.parts = {normal};
  e.init = InitMethod::model;
  e.init_model = start;
  expect_invalid_naming(e, "n_init");
  FitOptions f = o;
  f.init = InitMethod::select;
  f.init_p = 1.5;
  expect_invalid_naming(f, "init-p");
  FitOptions g = o;
  g.precision = "tf32";  // a CUDA tensor-core mode
  expect_invalid_naming(g, "tf32");
  FitOptions h = o;
  h.pseudo_count = -0.5;
  expect_invalid_naming(h, "pseudo_count");
  FitOptions i = o;
  i.rate_floor = 0.0;
  expect_invalid_naming(i, "rate_floor");
  FitOptions j = o;
  j.threads = -1;
  expect_invalid_naming(j, "threads = -1");
}

TEST(EngineOptions, Tf32RefusedByCpuScoreAsByCpuFit) {
  const Model m = standard_normal();
  EXPECT_THROW(score_samples(m, small_data(), "cpu", 1, "tf32"), InvalidInput);
  EXPECT_THROW(predict_proba(m, small_data(), "cpu", 1, "tf32"), InvalidInput);
  EXPECT_THROW(score_samples(m, small_data(), "cpu", 1, "fp16"), InvalidInput);
}

TEST(EngineOptions, ScoringRefusesANegativeThreadCount) {
  const Model m = standard_normal();
  for (const auto& score :
       std::vector<std::function<void(int)>>{[&](int t) { score_samples(m, small_data(), "cpu", t); },
                                             [&](int t) { predict_proba(m, small_data(), "cpu", t); },
                                             [&](int t) { predict(m, small_data(), "cpu", t); }}) {
    try {
      score(-1);
      ADD_FAILURE() << "threads = -1 accepted";
    } catch (const InvalidInput& e) {
      EXPECT_NE(std::string(e.what()).find("threads = -1 must be ≥ 0"), std::string::npos) << e.what();
    }
    EXPECT_NO_THROW(score(0));  // all cores
    EXPECT_NO_THROW(score(2));
  }
}

}  // namespace
}  // namespace mixle
