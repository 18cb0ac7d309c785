// A resumed fit is the fit that was interrupted: it continues the checkpoint's restart and then
// runs the restarts left, weighing the best restart the checkpoint carries (in-process, through
// fit_distributed as one process).
#include "comms/process_util.hpp"
#include "host/checkpoint.hpp"

#include <mixle/data.hpp>
#include <mixle/distributed.hpp>
#include <mixle/error.hpp>
#include <mixle/fit.hpp>
#include <mixle/model.hpp>

#include <gtest/gtest.h>

#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

namespace mixle::test {
namespace {

struct Interrupted : std::runtime_error {
  Interrupted() : std::runtime_error("interrupted by the test") {}
};

/// 3000 rows of a four-cluster mixture in two columns, fitted with K = 3 so that restarts end in
/// different local optima.
std::string write_data(const TempDir& dir) {
  const Model truth = model_from_json(R"({"format":"mixle-model","version":1,"weights":[0.25,0.25,0.25,0.25],
    "parts":[{"family":"gaussian_diag","columns":[0,2],
      "mean":[[0,0],[4,0],[0,4],[4,4]],"var":[[1,1],[1,1],[1,1],[1,1]]}]})");
  const Dataset data = sample(truth, 3000, 21);
  std::vector<double> values;
  for (std::size_t r = 0; r < data.rows(); ++r)
    for (std::size_t c = 0; c < data.cols(); ++c) values.push_back(data.at(r, c));
  const std::string path = (dir.path / "data.npy").string();
  write_matrix(path, values.data(), data.rows(), data.cols());
  return path;
}

FitOptions three_restarts() {
  FitOptions o;
  o.components = 3;
  o.layout = "gaussian_diag";
  o.n_init = 3;
  o.seed = 5;
  o.max_iter = 6;
  o.tol = 0.0;  // every restart runs all its iterations
  o.threads = 1;
  return o;
}

DistributedOptions checkpoints_in(const TempDir& dir, const std::string& name) {
  DistributedOptions d;
  d.checkpoint_dir = (dir.path / name).string();
  d.checkpoint_every = 1;
  return d;
}

TEST(ResumeRestarts, AResumedFitRunsTheRestartsLeftAndKeepsTheBest) {
  TempDir dir;
  const std::string data = write_data(dir);
  const FitOptions options = three_restarts();
  const DistributedFitResult whole = fit_distributed(data, {}, options, checkpoints_in(dir, "whole"));

  // The same fit, stopped after iteration 3 of restart 1 (the checkpoint is written first).
  FitOptions stopping = options;
  stopping.progress = [](const FitProgress& p) {
    if (p.restart == 1 && p.iteration == 3) throw Interrupted();
  };
  const DistributedOptions dist = checkpoints_in(dir, "stopped");
  EXPECT_THROW(fit_distributed(data, {}, stopping, dist), Interrupted);
  const auto checkpoint = host::load_checkpoint(dist.checkpoint_dir);
  ASSERT_TRUE(checkpoint);
  EXPECT_EQ(checkpoint->restart, 1);
  EXPECT_EQ(checkpoint->iteration, 3);
  ASSERT_TRUE(checkpoint->best) << "the checkpoint of restart 1 carries restart 0";
  EXPECT_EQ(checkpoint->best->best_restart, 0);
  EXPECT_EQ(checkpoint->best->iterations, 6);

  DistributedOptions resume = dist;
  resume.resume_dir = dist.checkpoint_dir;
  // Resumed and stopped again before restart 1 ends: the checkpoints written meanwhile still
  // carry restart 0 — the resumed run holds the best it read, not only the restarts it ran.
  FitOptions stopping_again = options;
  stopping_again.progress = [](const FitProgress& p) {
    if (p.restart == 1 && p.iteration == 4) throw Interrupted();
  };
  EXPECT_THROW(fit_distributed(data, {}, stopping_again, resume), Interrupted);
  const auto again = host::load_checkpoint(dist.checkpoint_dir);
  ASSERT_TRUE(again);
  EXPECT_EQ(again->iteration, 4);
  ASSERT_TRUE(again->best) << "the checkpoint written after resuming lost restart 0";
  EXPECT_EQ(again->best->best_restart, 0);
  EXPECT_EQ(model_to_json(again->best->model, -1), model_to_json(checkpoint->best->model, -1));

  const DistributedFitResult resumed = fit_distributed(data, {}, options, resume);
  EXPECT_EQ(resumed.resumed_from_iteration, 4);
  EXPECT_EQ(resumed.fit.best_restart, whole.fit.best_restart);
  EXPECT_EQ(resumed.fit.final_mean_loglik, whole.fit.final_mean_loglik);
  EXPECT_EQ(resumed.fit.mean_loglik, whole.fit.mean_loglik);
  EXPECT_EQ(model_to_json(resumed.fit.model, -1), model_to_json(whole.fit.model, -1));
  // The last checkpoint of both runs: restart 2's, carrying the better of restarts 0 and 1.
  const auto last_whole = host::load_checkpoint((dir.path / "whole").string());
  const auto last_resumed = host::load_checkpoint(dist.checkpoint_dir);
  ASSERT_TRUE(last_whole && last_resumed && last_whole->best && last_resumed->best);
  EXPECT_EQ(last_resumed->restart, 2);
  EXPECT_EQ(last_resumed->best->best_restart, last_whole->best->best_restart);
  EXPECT_EQ(model_to_json(last_resumed->best->model, -1), model_to_json(last_whole->best->model, -1));
}

// A restart resumed from its checkpoint continues the restart's history: its log-likelihoods
// start with the checkpoint's, and the convergence rule compares its first iteration with the
// checkpoint's last — stopped one iteration before it converged, the resumed fit converges at
// the same iteration as the fit never stopped, with the same history.
TEST(ResumeRestarts, AResumedRestartKeepsItsHistoryAndConvergesWhereTheWholeOneDid) {
  TempDir dir;
  const std::string data = write_data(dir);
  FitOptions options = three_restarts();
  options.n_init = 1;
  options.max_iter = 200;
  options.tol = 1e-4;
  const DistributedFitResult whole = fit_distributed(data, {}, options, checkpoints_in(dir, "whole"));
  ASSERT_TRUE(whole.fit.converged);
  const int converged_at = whole.fit.iterations;
  ASSERT_GE(converged_at, 3);
  ASSERT_EQ(whole.fit.mean_loglik.size(), static_cast<std::size_t>(converged_at));

  FitOptions stopping = options;
  stopping.progress = [converged_at](const FitProgress& p) {
    if (p.iteration == converged_at - 1) throw Interrupted();
  };
  DistributedOptions resume = checkpoints_in(dir, "stopped");
  EXPECT_THROW(fit_distributed(data, {}, stopping, resume), Interrupted);
  resume.resume_dir = resume.checkpoint_dir;
  const DistributedFitResult resumed = fit_distributed(data, {}, options, resume);
  EXPECT_EQ(resumed.resumed_from_iteration, converged_at - 1);
  EXPECT_TRUE(resumed.fit.converged);
  EXPECT_EQ(resumed.fit.iterations, converged_at);
  EXPECT_EQ(resumed.fit.mean_loglik, whole.fit.mean_loglik);
}

// A checkpoint folder with an interval below 1 would never be written to: refused before the
// group forms, and no folder is made.
TEST(ResumeRestarts, ACheckpointFolderNeedsAnIntervalOfAtLeastOneIteration) {
  TempDir dir;
  const std::string data = write_data(dir);
  for (int every : {0, -2}) {
    DistributedOptions dist = checkpoints_in(dir, "never");
    dist.checkpoint_every = every;
    try {
      fit_distributed(data, {}, three_restarts(), dist);
      ADD_FAILURE() << "checkpoint_every = " << every << " accepted";
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find("--checkpoint-every " + std::to_string(every)), std::string::npos)
          << e.what();
      EXPECT_NE(std::string(e.what()).find("≥ 1"), std::string::npos) << e.what();
    }
    EXPECT_FALSE(std::filesystem::exists(dist.checkpoint_dir));
  }
}

TEST(ResumeRestarts, ACheckpointThatDoesNotMatchTheOptionsIsRefused) {
  TempDir dir;
  const std::string data = write_data(dir);
  FitOptions stopping = three_restarts();
  stopping.progress = [](const FitProgress& p) {
    if (p.restart == 2 && p.iteration == 1) throw Interrupted();
  };
  DistributedOptions dist = checkpoints_in(dir, "stopped");
  EXPECT_THROW(fit_distributed(data, {}, stopping, dist), Interrupted);
  dist.resume_dir = dist.checkpoint_dir;

  FitOptions fewer = three_restarts();
  fewer.n_init = 2;
  try {
    fit_distributed(data, {}, fewer, dist);
    ADD_FAILURE() << "a checkpoint of restart 2 resumed with n_init = 2";
  } catch (const InvalidInput& e) {
    EXPECT_NE(std::string(e.what()).find("belongs to restart 2"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("n_init = 2"), std::string::npos) << e.what();
  }
  // Restart 2 is the last: resuming it needs no fresh initialisation, so n_init 3 with another
  // K passes, and the fit is the checkpoint's K — but a checkpoint of restart 1 must match K and
  // the layout.
  FitOptions last_other_k = three_restarts();
  last_other_k.components = 4;
  EXPECT_EQ(fit_distributed(data, {}, last_other_k, dist).fit.model.components(), 3u);
  stopping.progress = [](const FitProgress& p) {
    if (p.restart == 1 && p.iteration == 1) throw Interrupted();
  };
  EXPECT_THROW(fit_distributed(data, {}, stopping, checkpoints_in(dir, "early")), Interrupted);
  DistributedOptions early = checkpoints_in(dir, "early");
  early.resume_dir = early.checkpoint_dir;
  FitOptions other_k = three_restarts();
  other_k.components = 4;
  try {
    fit_distributed(data, {}, other_k, early);
    ADD_FAILURE() << "a checkpoint of K = 3 resumed with K = 4 and restarts left";
  } catch (const InvalidInput& e) {
    EXPECT_NE(std::string(e.what()).find("is not the one these options fit"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace mixle::test
