// gamma and lognormal end to end with real processes: `mixle generate` draws a record of both,
// `mixle fit` fits it back in one process, and data-parallel and component-sharded fits on two
// ranks (`mixle launch`, 127.0.0.1) equal it; `mixle plan` and `mixle score` read the fitted
// file. Every wait is bounded.
#include "common/require.hpp"
#include "host/fit_process_util.hpp"

#include <gtest/gtest.h>

namespace mixle::test {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;

const std::string kCli = MIXLE_CLI_PATH;

// fp64 on both sides; the sharded path normalises rows in a different order (sharded_fit_test).
constexpr double kRtol = 1e-9;

std::vector<std::string> fit_args(const fs::path& data, const fs::path& out) {
  return {kCli,           "fit",   "--data",      data.string(), "--layout",   "gamma:0-2,lognormal:2-3",
          "--components", "2",     "--seed",      "5",           "--max-iter", "40",
          "--tol",        "1e-9",  "--precision", "fp64",        "--threads",  "1",
          "--quiet",      "--out", out.string()};
}

TEST(PositiveFamiliesFit, OneProcessDataParallelAndShardedAgree) {
  MIXLE_SKIP_UNLESS_BUILT_WITH(MIXLE_HAVE_GLOO, "gloo");
  TempDir dir;
  const fs::path data = generate_data(dir, R"({"format":"mixle-model","version":1,"weights":[0.4,0.6],"parts":[
    {"family":"gamma","columns":[0,2],"shape":[[2,3],[20,30]],"rate":[[1,1],[1,2]]},
    {"family":"lognormal","columns":[2,3],"log_mean":[[0],[2]],"log_var":[[0.1],[0.2]]}]})",
                                      6000);
  Process one = run_process(fit_args(data, dir.path / "one.json"), {}, dir.path / "one.log", 120s);
  ASSERT_EQ(one.exit_code(), 0) << one.output();
  for (const std::string shards : {"1", "2"}) {
    std::vector<std::string> argv{kCli, "launch", "--nproc", "2", "--"};
    for (const auto& a : fit_args(data, dir.path / ("g" + shards + ".json"))) argv.push_back(a);
    argv.insert(argv.end(), {"--shard-components", shards});
    Process p = run_process(argv, {}, dir.path / ("g" + shards + ".log"), 180s);
    ASSERT_EQ(p.exit_code(), 0) << p.output();
    EXPECT_LT(max_relative_difference(dir.path / "one.json", dir.path / ("g" + shards + ".json")), kRtol)
        << "--shard-components " << shards;
  }
  Process score = run_process({kCli, "score", "--model", (dir.path / "one.json").string(), "--data", data.string(),
                               "--out", (dir.path / "scores.npy").string()},
                              {}, dir.path / "score.log", 60s);
  EXPECT_EQ(score.exit_code(), 0) << score.output();
  Process resources =
      run_process({kCli, "resources", "--out", (dir.path / "res.json").string()}, {}, dir.path / "res.log", 60s);
  ASSERT_EQ(resources.exit_code(), 0) << resources.output();
  Process plan = run_process({kCli, "plan", "--rows", "6000", "--json", "--safety-factor", "1", "--model",
                              (dir.path / "one.json").string(), "--resources", (dir.path / "res.json").string()},
                             {}, dir.path / "plan.log", 60s);
  ASSERT_EQ(plan.exit_code(), 0) << plan.output();
  // 2 components × (1 weight + gamma 2·2 + lognormal 2·1) float64 values.
  EXPECT_NE(plan.output().find("\"model_bytes\": 112"), std::string::npos) << plan.output();
}

}  // namespace
}  // namespace mixle::test
