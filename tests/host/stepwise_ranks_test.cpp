// Stepwise EM under `mixle launch` (real processes on 127.0.0.1): each rank folds its rows of every
// batch and the batch's statistics are all-reduced, so any world size gives the one-process
// model — with batches that straddle the ranks' boundaries and ranks that hold none of a batch.
#include "common/require.hpp"
#include "host/fit_process_util.hpp"

#include <gtest/gtest.h>

namespace mixle::test {
namespace {

using namespace std::chrono_literals;

TEST(StepwiseRanks, AnyWorldSizeFitsTheOneProcessModel) {
  MIXLE_SKIP_UNLESS_BUILT_WITH(MIXLE_HAVE_GLOO, "gloo");
  TempDir dir;
  const auto data = make_mixed_records(dir, 3000);
  auto args = [&](const std::string& out) {
    return std::vector<std::string>{MIXLE_CLI_PATH,
                                    "fit",
                                    "--data",
                                    data.string(),
                                    "-k",
                                    "3",
                                    "--layout",
                                    "gaussian_diag:0-3,categorical:3-4,poisson:4-5",
                                    "--seed",
                                    "4",
                                    "--precision",
                                    "fp64",
                                    "--batch-size",
                                    "700",
                                    "--epochs",
                                    "3",
                                    "--shuffle",
                                    "--tol",
                                    "0",
                                    "--threads",
                                    "1",
                                    "--quiet",
                                    "--out",
                                    (dir.path / out).string()};
  };
  // --shard-components 1 is data parallel (the default's choice here), so stepwise EM takes it
  // in one process and on 2 ranks; the 3 ranks leave it out.
  std::vector<std::string> alone = args("one.json");
  alone.insert(alone.end(), {"--shard-components", "1"});
  Process one = run_process(alone, {}, dir.path / "one.log", 120s);
  ASSERT_EQ(one.exit_code(), 0) << one.output();
  for (const std::string ranks : {"2", "3"}) {
    std::vector<std::string> argv{MIXLE_CLI_PATH, "launch", "--nproc", ranks, "--"};
    for (const auto& a : args("ranks" + ranks + ".json")) argv.push_back(a);
    if (ranks == "2") argv.insert(argv.end(), {"--shard-components", "1"});
    Process launched = run_process(argv, {}, dir.path / "launched.log", 180s);
    ASSERT_EQ(launched.exit_code(), 0) << launched.output();
    EXPECT_NE(launched.output().find("stepwise EM (batches of 700 rows)"), std::string::npos) << launched.output();
    EXPECT_LT(max_relative_difference(dir.path / "one.json", dir.path / ("ranks" + ranks + ".json")), 1e-9)
        << ranks << " ranks";
  }
}

TEST(StepwiseRanks, CheckpointsAndReceiptsAreForFullBatchEm) {
  MIXLE_SKIP_UNLESS_BUILT_WITH(MIXLE_HAVE_GLOO, "gloo");
  TempDir dir;
  const auto data = make_mixed_records(dir, 300);
  Process p = run_process({MIXLE_CLI_PATH, "launch", "--nproc", "2", "--", MIXLE_CLI_PATH, "fit", "--data",
                           data.string(), "-k", "2", "--layout", "gaussian_diag:0-3,categorical:3-4,poisson:4-5",
                           "--batch-size", "100", "--checkpoint-dir", (dir.path / "ck").string(), "--quiet"},
                          {}, dir.path / "p.log", 120s);
  EXPECT_NE(p.exit_code(), 0) << p.output();
  EXPECT_NE(p.output().find("for full-batch EM, not stepwise EM"), std::string::npos) << p.output();
}

}  // namespace
}  // namespace mixle::test
