// `mixle fit --weights` with real processes on 127.0.0.1: integer weights equal the rows
// repeated, in one process, on 2 data-parallel ranks (each reading its share of the weights
// file) and on 2 component shards; the summary reports the total weight; a bad weight fails
// naming the weights file and its row. Every wait is bounded.
#include "common/require.hpp"
#include "host/fit_process_util.hpp"

#include <mixle/data.hpp>

#include <gtest/gtest.h>

#include <fstream>
#include <vector>

namespace mixle::test {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;

const std::string kCli = MIXLE_CLI_PATH;

std::vector<std::string> fit_args(const fs::path& dir, const fs::path& data, const fs::path& out) {
  return {kCli,    "fit",   "--data",     data.string(), "--init",  (dir / "truth.json").string(),
          "--tol", "0",     "--max-iter", "10",          "--quiet", "--threads",
          "1",     "--out", out.string(), "--precision", "fp64"};
}

Process run(std::vector<std::string> argv, const std::vector<std::string>& extra, const fs::path& log) {
  argv.insert(argv.end(), extra.begin(), extra.end());
  return run_process(argv, {}, log, 180s);
}

Process launch(int nproc, const std::vector<std::string>& fit, const std::vector<std::string>& extra,
               const fs::path& log) {
  std::vector<std::string> argv{kCli, "launch", "--nproc", std::to_string(nproc), "--"};
  argv.insert(argv.end(), fit.begin(), fit.end());
  return run(argv, extra, log);
}

TEST(WeightedFit, WeightsEqualRepeatedRowsInOneProcessOnRanksAndOnShards) {
  MIXLE_SKIP_UNLESS_BUILT_WITH(MIXLE_HAVE_GLOO, "gloo");
  TempDir dir;
  const fs::path data = make_mixed_records(dir, 3000);
  const Dataset rows = read_data(data.string());
  const std::size_t N = rows.rows(), C = rows.cols();
  std::vector<double> w(N), repeated;
  for (std::size_t r = 0; r < N; ++r) {
    w[r] = static_cast<double>((r * 5 + 1) % 4);  // 0 … 3
    for (int copy = 0; copy < static_cast<int>(w[r]); ++copy)
      for (std::size_t c = 0; c < C; ++c) repeated.push_back(rows.at(r, c));
  }
  const fs::path weights = dir.path / "w.npy", copies = dir.path / "repeated.npy";
  write_matrix(weights.string(), w.data(), N, 1);
  write_matrix(copies.string(), repeated.data(), repeated.size() / C, C);

  Process plain = run(fit_args(dir.path, copies, dir.path / "repeated.json"), {}, dir.path / "repeated.log");
  ASSERT_EQ(plain.exit_code(), 0) << plain.output();
  const std::vector<std::string> weighted{"--weights", weights.string()};
  Process one = run(fit_args(dir.path, data, dir.path / "one.json"), weighted, dir.path / "one.log");
  ASSERT_EQ(one.exit_code(), 0) << one.output();
  EXPECT_LT(max_relative_difference(dir.path / "repeated.json", dir.path / "one.json"), 1e-9);
  EXPECT_NE(one.output().find("total sample weight: " + std::to_string(repeated.size() / C)), std::string::npos)
      << one.output();
  EXPECT_NE(one.output().find("on " + std::to_string(N) + " rows"), std::string::npos) << one.output();

  Process ranks = launch(2, fit_args(dir.path, data, dir.path / "ranks.json"), weighted, dir.path / "ranks.log");
  ASSERT_EQ(ranks.exit_code(), 0) << ranks.output();
  EXPECT_LT(max_relative_difference(dir.path / "one.json", dir.path / "ranks.json"), 1e-9);

  std::vector<std::string> sharded = weighted;
  sharded.insert(sharded.end(), {"--shard-components", "2"});
  Process shards = launch(2, fit_args(dir.path, data, dir.path / "shards.json"), sharded, dir.path / "shards.log");
  ASSERT_EQ(shards.exit_code(), 0) << shards.output();
  EXPECT_LT(max_relative_difference(dir.path / "one.json", dir.path / "shards.json"), 1e-9);
}

TEST(WeightedFit, ABadWeightFailsNamingTheFileAndRow) {
  TempDir dir;
  const fs::path data = make_mixed_records(dir, 200);
  std::string lines = "weight\n";
  for (int r = 0; r < 200; ++r) lines += r == 136 ? "-1\n" : "1\n";
  std::ofstream(dir.path / "w.csv") << lines;
  Process p = run(fit_args(dir.path, data, dir.path / "out.json"), {"--weights", (dir.path / "w.csv").string()},
                  dir.path / "bad.log");
  EXPECT_NE(p.exit_code(), 0);
  EXPECT_NE(p.output().find("w.csv: row 136 (counted from 0, as data rows are) has weight -1"), std::string::npos)
      << p.output();
  EXPECT_FALSE(fs::exists(dir.path / "out.json"));
}

}  // namespace
}  // namespace mixle::test
