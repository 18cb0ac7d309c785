// The EM driver's contract: a fit from a model first evaluates that model; stopping on
// |Δ mean log-likelihood| < tol or max_iter; progress once per iteration; restarts keep the best.
#include "engine_test_util.hpp"
#include "engine/em.hpp"
#include "host/fit_driver.hpp"

#include <mixle/fit.hpp>

#include <gtest/gtest.h>

#include <cmath>
#include <numeric>
#include <set>
#include <vector>

namespace mixle {
namespace {

using test::make_part;

Model two_blobs() {
  Model m;
  m.weights = {0.4, 0.6};
  Part g = make_part(Family::gaussian_diag, 0, 2);
  g.mean = {0, 0, 4, 1};
  g.var = {1, 1, 2, 0.5};
  m.parts = {g};
  return m;
}

TEST(EngineEm, FirstIterationEvaluatesTheInitialModel) {
  const Model truth = two_blobs();
  const Dataset data = sample(truth, 3000, 4);
  Model init = truth;
  init.parts[0].mean[0] = 1.0;
  FitOptions o;
  o.init = InitMethod::model;
  o.init_model = init;
  o.precision = "fp64";
  o.max_iter = 3;
  o.tol = 0.0;
  const FitResult r = fit(data, o);
  const auto ll = score_samples(init, data, "cpu", 1, "fp64");
  const double mean = std::accumulate(ll.begin(), ll.end(), 0.0) / static_cast<double>(ll.size());
  constexpr double kRelTol = 1e-12;  // the same fp64 sum in another order
  ASSERT_EQ(r.mean_loglik.size(), 3u);
  EXPECT_NEAR(r.mean_loglik[0], mean, kRelTol * std::abs(mean));
  // final_mean_loglik is that of the returned model.
  const auto llf = score_samples(r.model, data, "cpu", 1, "fp64");
  const double meanf = std::accumulate(llf.begin(), llf.end(), 0.0) / static_cast<double>(llf.size());
  EXPECT_NEAR(r.final_mean_loglik, meanf, kRelTol * std::abs(meanf));
  EXPECT_GE(r.final_mean_loglik, r.mean_loglik.back());
  EXPECT_EQ(r.rows, 3000u);
}

TEST(EngineEm, StopsOnToleranceOrMaxIter) {
  const Dataset data = sample(two_blobs(), 2000, 5);
  FitOptions o;
  o.components = 2;
  o.seed = 3;
  o.tol = 1e9;  // any change is below it: stop at the first comparison, iteration 2
  int calls = 0;
  double first_delta = 0.0;
  o.progress = [&](const FitProgress& p) {
    if (++calls == 1) first_delta = p.delta;
    EXPECT_EQ(p.iteration, calls);
    // The iteration's time, and its rate over the 2000 rows.
    EXPECT_GT(p.seconds, 0.0);
    EXPECT_NEAR(p.rows_per_second * p.seconds, 2000.0, 1e-9 * 2000.0);
  };
  FitResult r = fit(data, o);
  EXPECT_TRUE(r.converged);
  EXPECT_EQ(r.iterations, 2);
  EXPECT_EQ(calls, 2);
  EXPECT_TRUE(std::isnan(first_delta));
  o.tol = 0.0;  // never converges: runs max_iter and warns
  o.max_iter = 4;
  calls = 0;
  std::vector<double> reported;
  o.progress = [&](const FitProgress& p) { reported.push_back(p.mean_loglik); };
  r = fit(data, o);
  EXPECT_FALSE(r.converged);
  EXPECT_EQ(r.iterations, 4);
  EXPECT_EQ(r.mean_loglik.size(), 4u);
  EXPECT_EQ(reported, r.mean_loglik) << "progress reports each iteration's mean log-likelihood";
  EXPECT_FALSE(r.warnings.empty());
}

// The rule is |Δ mean log-likelihood| < tol, strictly, compared from iteration 2 on: with tol set
// to one of the changes of an unconverged run, the fit must stop exactly where that run's trace
// says — the first later-or-equal iteration whose change is strictly below tol.
TEST(EngineEm, StopsAtTheIterationTheTraceDerives) {
  const Dataset data = sample(two_blobs(), 2000, 8);
  FitOptions o;
  o.components = 2;
  o.seed = 5;
  o.precision = "fp64";
  o.tol = 0.0;
  o.max_iter = 25;
  const FitResult full = fit(data, o);
  ASSERT_EQ(full.mean_loglik.size(), 25u);
  for (const int j : {3, 6, 10}) {
    SCOPED_TRACE(j);
    const double tol = std::abs(full.mean_loglik[j - 1] - full.mean_loglik[j - 2]);  // Δ at iteration j
    ASSERT_GT(tol, 0.0);
    int expected = 0;
    for (int i = 2; i <= 25 && !expected; ++i)
      if (std::abs(full.mean_loglik[i - 1] - full.mean_loglik[i - 2]) < tol) expected = i;
    ASSERT_NE(expected, j) << "Δ at j equals tol: it must not stop there";
    o.tol = tol;
    const FitResult r = fit(data, o);
    EXPECT_EQ(r.iterations, expected ? expected : 25);
    EXPECT_EQ(r.converged, expected != 0);
    for (std::size_t i = 0; i < r.mean_loglik.size(); ++i) EXPECT_EQ(r.mean_loglik[i], full.mean_loglik[i]) << i;
  }
}

// A loop resumed at its last iteration (a checkpoint written when max_iter was reached) runs no
// step and reports the iterations and trace it resumed with; one resumed earlier counts on.
TEST(EngineEm, AResumedLoopCountsTheIterationsBeforeIt) {
  engine::EmOptions em;
  em.max_iter = 3;
  em.tol = 0.0;
  em.start_iteration = 3;
  em.prior_mean_loglik = {-3.0, -2.5, -2.25};
  int calls = 0;
  const auto step = [&](const Model& model) {
    ++calls;
    return engine::IterationStep{10.0, -20.0, engine::MStepResult{model, {}}, {}};
  };
  engine::EmResult r = engine::run_em_steps(two_blobs(), em, step);
  EXPECT_EQ(calls, 0);
  EXPECT_EQ(r.iterations, 3);
  EXPECT_EQ(r.mean_loglik, em.prior_mean_loglik);
  em.start_iteration = 2;
  em.prior_mean_loglik.pop_back();
  r = engine::run_em_steps(two_blobs(), em, step);
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(r.iterations, 3);
  EXPECT_EQ(r.mean_loglik, (std::vector<double>{-3.0, -2.5, -2.0}));
}

TEST(EngineEm, RestartsKeepTheBest) {
  const Dataset data = sample(two_blobs(), 2000, 6);
  FitOptions o;
  o.components = 4;
  o.init = InitMethod::select;
  o.init_p = 0.3;
  o.seed = 20;
  o.max_iter = 5;
  o.n_init = 3;
  const FitResult best = fit(data, o);
  double top = -INFINITY;
  int arg = -1;
  for (int s = 0; s < 3; ++s) {
    FitOptions q = o;
    q.n_init = 1;
    q.seed = host::restart_seed(o.seed, s);
    const FitResult r = fit(data, q);
    if (r.final_mean_loglik > top) top = r.final_mean_loglik, arg = s;
  }
  EXPECT_EQ(best.best_restart, arg);
  EXPECT_EQ(best.final_mean_loglik, top);  // the same fit, bit for bit
}

// One component: every restart's first M-step gives every row responsibility 1, so whatever its
// start each restart ends at the same model, bit for bit — equal log-likelihoods, the first kept.
TEST(EngineEm, RestartsThatTieKeepTheFirst) {
  const Dataset data = sample(two_blobs(), 500, 6);
  FitOptions o;
  o.components = 1;
  o.max_iter = 3;
  o.n_init = 3;
  const FitResult r = fit(data, o);
  FitOptions last = o;
  last.n_init = 1;
  last.seed = host::restart_seed(o.seed, 2);
  EXPECT_EQ(fit(data, last).final_mean_loglik, r.final_mean_loglik) << "the restarts do not tie";
  EXPECT_EQ(r.best_restart, 0);
}

// Restart 0 keeps the fit's seed; the others hash (seed, r), so fits with neighbouring seeds
// share no start (seed + r made --seed 0 and --seed 1 share all but one of five).
TEST(EngineEm, NeighbouringSeedsShareNoRestart) {
  std::set<std::uint64_t> starts;
  for (std::uint64_t seed : {0u, 1u, 2u})
    for (int r = 0; r < 5; ++r) starts.insert(host::restart_seed(seed, r));
  EXPECT_EQ(starts.size(), 15u);
  EXPECT_EQ(host::restart_seed(7, 0), 7u);
  EXPECT_EQ(host::restart_seed(7, 3), host::restart_seed(7, 3));  // a function of (seed, r) only
}

}  // namespace
}  // namespace mixle
