// `fit` with a batch size (stepwise EM) as users call it: it reaches the full-batch optimum on
// every family, is deterministic for a seed, keeps the shifted-moment numerics in float32 far
// from the origin, hands over to full-batch EM when asked, and refuses what it cannot run.
#include "engine/engine_test_util.hpp"

#include <mixle/distributed.hpp>
#include <mixle/error.hpp>
#include <mixle/fit.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

namespace mixle::test {
namespace {

/// Every family but the full-covariance ones, in one record (K = 2), then each of those.
const char* kRecord = R"({"format":"mixle-model","version":1,"weights":[0.55,0.45],"parts":[
    {"family":"gaussian_spherical","columns":[0,2],"mean":[[0,1],[3,-2]],"var":[1,2]},
    {"family":"lognormal","columns":[2,4],"log_mean":[[0,1],[1,0]],"log_var":[[0.2,0.3],[0.3,0.2]]},
    {"family":"gamma","columns":[4,6],"shape":[[2,5],[6,2]],"rate":[[1,2],[3,0.5]]},
    {"family":"exponential","columns":[6,7],"rate":[[0.5],[3]]},
    {"family":"bernoulli","columns":[7,8],"prob":[[0.2],[0.9]]},
    {"family":"categorical","columns":[8,10],"categories":2,"prob":[[[0.7,0.3],[0.4,0.6]],[[0.1,0.9],[0.8,0.2]]]},
    {"family":"poisson","columns":[10,11],"rate":[[2],[9]]},
    {"family":"gaussian_diag","columns":[11,13],"mean":[[0,0],[2,3]],"var":[[1,1],[0.5,2]]}]})";
const char* kFull = R"({"format":"mixle-model","version":1,"weights":[0.5,0.5],"parts":[
    {"family":"gaussian_full","columns":[0,2],"mean":[[0,0],[3,3]],"cov":[[[2,1],[1,2]],[[1,-0.3],[-0.3,0.5]]]}]})";
const char* kTied = R"({"format":"mixle-model","version":1,"weights":[0.4,0.6],"parts":[
    {"family":"gaussian_tied","columns":[0,2],"mean":[[0,0],[3,2]],"cov":[[[1,0.4],[0.4,1]],[[1,0.4],[0.4,1]]]}]})";

/// The truth moved away, so EM has work to do.
Model away_from(Model m) {
  m.weights.assign(m.components(), 1.0 / static_cast<double>(m.components()));
  for (Part& p : m.parts) {
    for (double& v : p.mean) v = v * 1.2 + 0.3;
    for (double& v : p.rate) v *= 1.3;
    for (double& v : p.prob)
      if (p.family == Family::bernoulli) v = 0.5 * (v + 0.5);
  }
  return m;
}

FitOptions from(const Model& start, std::size_t batch) {
  FitOptions o;
  o.init = InitMethod::model;
  o.init_model = start;
  o.precision = "fp64";
  o.tol = 1e-9;
  o.max_iter = 300;
  o.batch_size = batch;
  return o;
}

TEST(StepwiseFit, ReachesTheFullBatchOptimumOnEveryFamily) {
  for (const char* text : {kRecord, kFull, kTied}) {
    const Model truth = model_from_json(text);
    const Dataset data = sample(truth, 4000, 5);
    const Model start = away_from(truth);
    const FitResult full = fit(data, from(start, 0));
    ASSERT_TRUE(full.converged);

    FitOptions o = from(start, 250);  // 16 batches
    o.epochs = 6;
    o.shuffle = true;
    o.seed = 4;
    o.tol = 0.0;  // all six epochs
    const FitResult stepwise = fit(data, o);
    EXPECT_EQ(stepwise.iterations, 6);
    EXPECT_EQ(stepwise.mean_loglik.size(), 6u);
    EXPECT_NEAR(stepwise.final_mean_loglik, full.final_mean_loglik, 5e-3) << text;
    EXPECT_LE(stepwise.final_mean_loglik, full.final_mean_loglik + 1e-9) << "not above the optimum";
    // Not converged (tol 0): the warning names the epochs, and no full-batch iterations it did not run.
    const std::string advice = "; raise --epochs or add --full-batch-iterations";
    const auto warned = [](const FitResult& r, const std::string& want) {
      return std::find(r.warnings.begin(), r.warnings.end(), want) != r.warnings.end();
    };
    EXPECT_TRUE(warned(stepwise, "stepwise EM did not converge in 6 epoch(s) (tol 0.000000)" + advice))
        << ::testing::PrintToString(stepwise.warnings);

    o.epochs = 2;
    o.full_batch_iterations = 3;
    const FitResult three = fit(data, o);
    EXPECT_EQ(three.iterations, 5);
    EXPECT_TRUE(warned(
        three, "stepwise EM did not converge in 2 epoch(s) and 3 full-batch iteration(s) (tol 0.000000)" + advice))
        << ::testing::PrintToString(three.warnings);

    // Two epochs, then full-batch EM to convergence: the full-batch optimum itself.
    o.epochs = 2;
    o.tol = 1e-9;
    o.full_batch_iterations = 300;
    const FitResult handed = fit(data, o);
    EXPECT_TRUE(handed.converged);
    EXPECT_GT(handed.iterations, 2);
    EXPECT_EQ(handed.mean_loglik.size(), static_cast<std::size_t>(handed.iterations));
    EXPECT_NEAR(handed.final_mean_loglik, full.final_mean_loglik, 1e-7) << text;
  }
}

// One full-batch iteration is run (and counted) after the epochs, and what it warns reaches the
// result: a component 1000 standard deviations from every row captures none in the epochs and
// again in the full-batch iteration, whose loop warns anew, naming its own iteration.
TEST(StepwiseFit, OneFullBatchIterationRunsAndItsWarningsAreKept) {
  const Model truth = model_from_json(R"({"format":"mixle-model","version":1,"weights":[0.5,0.5],"parts":[
      {"family":"gaussian_diag","columns":[0,1],"mean":[[0],[3]],"var":[[1],[1]]}]})");
  const Dataset data = sample(truth, 1000, 6);
  Model start = truth;
  start.parts[0].mean[1] = 1000.0;
  FitOptions o = from(start, 100);
  o.epochs = 2;
  o.tol = 0.0;
  o.full_batch_iterations = 1;
  const FitResult r = fit(data, o);
  EXPECT_EQ(r.iterations, 3);
  EXPECT_EQ(r.mean_loglik.size(), 3u);
  const std::string epochs =
      "component 1 captured no rows at iteration 1; it keeps its previous parameters with weight 0";
  const std::string full =
      "component 1 captured no rows at iteration 3; it keeps its previous parameters with weight 0";
  EXPECT_EQ(std::count(r.warnings.begin(), r.warnings.end(), epochs), 1) << ::testing::PrintToString(r.warnings);
  EXPECT_EQ(std::count(r.warnings.begin(), r.warnings.end(), full), 1) << ::testing::PrintToString(r.warnings);
}

TEST(StepwiseFit, DeterministicForASeedAndTheBackend) {
  const Model truth = model_from_json(kRecord);
  const Dataset data = sample(truth, 3000, 8);
  FitOptions o = from(away_from(truth), 200);
  o.epochs = 3;
  o.shuffle = true;
  o.seed = 11;
  o.threads = 2;
  const FitResult a = fit(data, o);
  const std::string once = model_to_json(a.model);
  EXPECT_EQ(model_to_json(fit(data, o).model), once);
  o.threads = 1;
  EXPECT_EQ(model_to_json(fit(data, o).model), once) << "threads change no bit";
  o.backend = "component_parallel";
  o.num_workers = 2;
  EXPECT_EQ(model_to_json(fit(data, o).model), once) << "component threads change no bit";
  o.backend = "local";
  o.num_workers = 0;
  o.seed = 12;
  EXPECT_NE(model_to_json(fit(data, o).model), once) << "another seed, another batch order";
  o.shuffle = false;
  const std::string sequential = model_to_json(fit(data, o).model);
  o.seed = 13;
  EXPECT_EQ(model_to_json(fit(data, o).model), sequential) << "without --shuffle the seed orders nothing";
}

// Means 1e4 from the origin, σ ≈ 1: raw moments would lose every digit of the variance in
// float32; the batches' moments about the current means, moved in float64 between steps, do not.
TEST(StepwiseFit, Float32FarFromTheOriginKeepsItsVariances) {
  const Model truth = model_from_json(R"({"format":"mixle-model","version":1,"weights":[0.5,0.5],"parts":[
      {"family":"gaussian_diag","columns":[0,2],"mean":[[10000,10000],[10006,9995]],"var":[[1,0.5],[2,1]]}]})");
  const Dataset data = sample(truth, 4000, 2);
  FitOptions o = from(away_from(truth), 400);
  o.init_model->parts[0].mean = {10000.5, 9999.5, 10005, 9996};
  o.epochs = 4;
  o.tol = 0.0;
  const FitResult f64 = fit(data, o);
  o.precision = "fp32";
  const FitResult f32 = fit(data, o);
  for (std::size_t i = 0; i < 4; ++i) {
    EXPECT_NEAR(f32.model.parts[0].mean[i], f64.model.parts[0].mean[i], 2e-3);
    EXPECT_NEAR(f32.model.parts[0].var[i], f64.model.parts[0].var[i], 2e-3 * f64.model.parts[0].var[i]);
    EXPECT_NEAR(f64.model.parts[0].var[i], truth.parts[0].var[i], 0.25 * truth.parts[0].var[i]);
  }
}

TEST(StepwiseFit, RefusesControlsOutOfRangeAndFitsItCannotRun) {
  const Model truth = model_from_json(kFull);
  const Dataset data = sample(truth, 100, 1);
  auto refused = [&](auto change, const std::vector<std::string>& words) {
    FitOptions o = from(truth, 10);
    change(o);
    expect_invalid_input([&] { fit(data, o); }, words);
  };
  refused([](FitOptions& o) { o.step_decay = 0.4; }, {"step decay", "(0.5, 1]"});
  refused([](FitOptions& o) { o.step_offset = -2; }, {"step offset"});
  refused([](FitOptions& o) { o.epochs = 0; }, {"epochs 0"});
  refused([](FitOptions& o) { o.full_batch_iterations = -1; }, {"full_batch_iterations -1"});
  refused([](FitOptions& o) { o.backend = "component_sharded"; }, {"component_sharded", "local"});
  refused([](FitOptions& o) { o.empty = "reseed"; }, {"reseed"});
  refused([](FitOptions& o) { o.missing = "marginalise"; }, {"marginalise"});
  // Checkpoints, resume and receipts describe full-batch iterations: each refused before any
  // group forms, even for the smallest batch; a bad control is named before them.
  for (auto set : {+[](DistributedOptions& d) { d.checkpoint_dir = "unused"; },
                   +[](DistributedOptions& d) { d.resume_dir = "unused"; },
                   +[](DistributedOptions& d) { d.receipts_file = "unused"; },
                   +[](DistributedOptions& d) { d.shard_components = 2; }}) {
    DistributedOptions d;
    set(d);
    try {
      fit_distributed(data, from(truth, 1), d);
      ADD_FAILURE() << "accepted";
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find("not stepwise EM"), std::string::npos) << e.what();
    }
    FitOptions bad = from(truth, 1);
    bad.step_decay = 0.3;
    expect_invalid_input([&] { fit_distributed(data, bad, d); }, {"step decay 0.3"});
  }
}

// Batches of one row through the data-parallel driver: still stepwise (epochs, not iterations).
TEST(StepwiseFit, OneRowBatchesThroughTheDistributedDriver) {
  const Model truth = model_from_json(kFull);
  const Dataset data = sample(truth, 40, 13);
  FitOptions o = from(away_from(truth), 1);
  o.epochs = 2;
  o.tol = 0;
  const DistributedFitResult there = fit_distributed(data, o, DistributedOptions{});
  EXPECT_EQ(there.fit.iterations, 2);
  EXPECT_NE(there.parallel.find("stepwise EM (batches of 1 rows)"), std::string::npos) << there.parallel;
  EXPECT_NEAR(there.fit.final_mean_loglik, fit(data, o).final_mean_loglik, 1e-12);
}

// The data-parallel driver in a world of one: the same batches, the same steps, the same model.
TEST(StepwiseFit, TheDistributedDriverTakesTheSameSteps) {
  const Model truth = model_from_json(kRecord);
  const Dataset data = sample(truth, 2000, 12);
  FitOptions o = from(away_from(truth), 300);
  o.epochs = 2;
  o.shuffle = true;
  o.tol = 0;
  const FitResult here = fit(data, o);
  const DistributedFitResult there = fit_distributed(data, o, DistributedOptions{});
  EXPECT_EQ(there.fit.iterations, 2);
  EXPECT_NE(there.parallel.find("stepwise EM (batches of 300 rows)"), std::string::npos) << there.parallel;
  ASSERT_EQ(there.fit.mean_loglik.size(), here.mean_loglik.size());
  for (std::size_t i = 0; i < here.mean_loglik.size(); ++i)
    EXPECT_NEAR(there.fit.mean_loglik[i], here.mean_loglik[i], 1e-12 * std::abs(here.mean_loglik[i]));
  EXPECT_NEAR(there.fit.final_mean_loglik, here.final_mean_loglik, 1e-12 * std::abs(here.final_mean_loglik));
}

}  // namespace
}  // namespace mixle::test
