// `mixle fit --batch-size`: the command runs the library's stepwise EM (the same model, bit for
// bit), warns in epochs when it runs out of them, and refuses bad controls and the full-batch-only
// options with their usage exit codes.
#include "common/run_cli.hpp"

#include <mixle/data.hpp>
#include <mixle/fit.hpp>
#include <mixle/model.hpp>

#include <gtest/gtest.h>

namespace mixle {
namespace {

using test::TempDir;

const char* kTruth = R"({"format":"mixle-model","version":1,"weights":[0.5,0.5],"parts":[
    {"family":"gaussian_diag","columns":[0,2],"mean":[[0,0],[3,3]],"var":[[1,1],[1,2]]},
    {"family":"poisson","columns":[2,3],"rate":[[2],[7]]}]})";

TEST(CliStepwise, TheCommandFitsWhatTheLibraryFits) {
  TempDir dir("cli-stepwise");
  const Dataset data = sample(model_from_json(kTruth), 2000, 3);
  const std::vector<double> values = data.values();
  write_matrix(dir.file("data.npy"), values.data(), data.rows(), data.cols());
  const test::CliRun r = test::run_cli(
      dir, "fit --data " + dir.file("data.npy") +
               " --layout gaussian_diag:0-2,poisson:2-3 -k 2 --seed 3 --precision fp64 --batch-size 300 --epochs 3 "
               "--shuffle --step-decay 0.8 --step-offset 1 --tol 0 --quiet --out " +
               dir.file("model.json"));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("stepwise EM did not converge in 3 epoch(s)"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("--max-iter"), std::string::npos) << "full-batch EM's advice, not stepwise EM's:\n" << r.err;
  EXPECT_NE(r.out.find("in 3 iterations"), std::string::npos) << r.out;

  FitOptions o;
  o.layout = "gaussian_diag:0-2,poisson:2-3";
  o.components = 2;
  o.seed = 3;
  o.precision = "fp64";
  o.batch_size = 300;
  o.epochs = 3;
  o.shuffle = true;
  o.step_decay = 0.8;
  o.step_offset = 1;
  o.tol = 0;
  const FitResult library = fit(read_data(dir.file("data.npy")), o);
  EXPECT_EQ(model_to_json(load_model(dir.file("model.json"))), model_to_json(library.model));
}

TEST(CliStepwise, BadControlsAndFullBatchOnlyOptionsAreRefused) {
  TempDir dir("cli-stepwise-bad");
  const Dataset data = sample(model_from_json(kTruth), 200, 3);
  const std::vector<double> values = data.values();
  write_matrix(dir.file("data.npy"), values.data(), data.rows(), data.cols());
  const std::string fit = "fit --data " + dir.file("data.npy") + " -k 2 --layout gaussian_diag:0-2,poisson:2-3 ";
  test::CliRun r = test::run_cli(dir, fit + "--batch-size 50 --step-decay 0.3");
  EXPECT_EQ(r.code, 2) << r.err;  // refused as parsed (cli_option_checks_test.cpp holds each range)
  EXPECT_NE(r.err.find("--step-decay: 0.3 is not above 0.5"), std::string::npos) << r.err;
  r = test::run_cli(dir, fit + "--batch-size 50 --epochs 0");
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_NE(r.err.find("--epochs: 0 is below 1"), std::string::npos) << r.err;
  r = test::run_cli(dir, fit + "--batch-size 1 --checkpoint-dir " + dir.file("ck"));  // the smallest batch
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_NE(r.err.find("not --batch-size"), std::string::npos) << r.err;
  r = test::run_cli(dir, fit + "--batch-size -5");
  EXPECT_EQ(r.code, 2) << r.err;
  r = test::run_cli(dir, "fit --help");
  for (const char* option :
       {"--batch-size", "--step-decay", "--step-offset", "--epochs", "--shuffle", "--full-batch-iterations"})
    EXPECT_NE(r.out.find(option), std::string::npos) << option;
}

}  // namespace
}  // namespace mixle
