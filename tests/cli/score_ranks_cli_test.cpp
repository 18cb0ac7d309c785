// `mixle score` under a launcher: two ranks each score their share of the rows and rank 0
// concatenates the parts — the output file is byte for byte the one-process one, for every
// per-row output and format, no part file is left behind, and the summaries are printed once
// with the one-process value; a bad row on the second rank stops both and leaves no output.
#include "common/run_cli.hpp"

#include <mixle/data.hpp>
#include <mixle/fit.hpp>
#include <mixle/model.hpp>

#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

namespace mixle {
namespace {

using test::TempDir;

const char* kModel = R"({"format":"mixle-model","version":1,"weights":[0.5,0.3,0.2],"parts":[
    {"family":"gaussian_diag","columns":[0,2],"mean":[[0,0],[4,4],[-3,5]],"var":[[1,1],[1,2],[0.5,1]]},
    {"family":"poisson","columns":[2,3],"rate":[[2],[7],[4]]}]})";

/// Files in `dir` whose names contain ".part-".
int parts_left(const TempDir& dir) {
  int n = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir.file("")))
    if (e.path().filename().string().find(".part-") != std::string::npos) ++n;
  return n;
}

/// `mixle launch --nproc 2 -- mixle ARGS`, chunks of 1000 rows.
test::CliRun on_two_ranks(const TempDir& dir, const std::string& args) {
  return test::run_cli(dir, "launch --nproc 2 -- " + std::string(MIXLE_CLI_PATH) + " " + args,
                       "MIXLE_SCORE_CHUNK_ROWS=1000");
}

TEST(CliScoreRanks, TwoRanksWriteWhatOneProcessWrites) {
  TempDir dir("cli-score-ranks");
  test::write_bytes(dir.file("model.json"), kModel);
  const Dataset rows = sample(model_from_json(kModel), 10007, 3);
  const std::vector<double> v = rows.values();
  write_matrix(dir.file("rows.npy"), v.data(), rows.rows(), rows.cols());
  const std::string score = "score --model " + dir.file("model.json") + " --data " + dir.file("rows.npy");
  for (const std::string what_ext : {"loglik .npy", "resp .csv", "labels .npy", "labels .csv"}) {
    const std::string what = what_ext.substr(0, what_ext.find(' ')), ext = what_ext.substr(what_ext.find(' ') + 1);
    const test::CliRun one = test::run_cli(dir, score + " --what " + what + " --out " + dir.file("one" + ext));
    ASSERT_EQ(one.code, 0) << one.err;
    const test::CliRun two = on_two_ranks(dir, score + " --what " + what + " --out " + dir.file("two" + ext));
    ASSERT_EQ(two.code, 0) << two.err;
    EXPECT_NE(two.err.find("scored 10007 rows on 2 ranks"), std::string::npos) << two.err;
    EXPECT_EQ(test::read_text(dir.file("one" + ext)), test::read_text(dir.file("two" + ext))) << what_ext;
    EXPECT_EQ(parts_left(dir), 0) << what_ext;
  }
  for (const std::string what : {"loglik-mean", "bic"}) {
    const test::CliRun one = test::run_cli(dir, score + " --what " + what);
    const test::CliRun two = on_two_ranks(dir, score + " --what " + what);
    ASSERT_EQ(two.code, 0) << two.err;
    const auto value = [&](const std::string& out) {
      EXPECT_EQ(out.find(what + ":"), out.rfind(what + ":")) << "printed more than once:\n" << out;
      return std::stod(out.substr(out.find(what + ":") + what.size() + 1));
    };
    EXPECT_NEAR(value(two.out), value(one.out), 1e-9 * std::abs(value(one.out))) << what;
    EXPECT_NE(two.out.find("(10007 rows,"), std::string::npos) << two.out;
  }
}

// Rank 0 prints the summary: each rank's standard output to its own file, through a shell that
// names the file by its RANK.
TEST(CliScoreRanks, RankZeroPrintsTheSummary) {
  TempDir dir("cli-score-ranks-rank0");
  test::write_bytes(dir.file("model.json"), kModel);
  const Dataset rows = sample(model_from_json(kModel), 3000, 4);
  const std::vector<double> v = rows.values();
  write_matrix(dir.file("rows.npy"), v.data(), rows.rows(), rows.cols());
  const std::string score = std::string(MIXLE_CLI_PATH) + " score --model " + dir.file("model.json") + " --data " +
                            dir.file("rows.npy") + " --what bic";
  const test::CliRun two =
      test::run_cli(dir, "launch --nproc 2 -- sh -c 'exec " + score + " > " + dir.file("out.") + "$RANK'",
                    "MIXLE_SCORE_CHUNK_ROWS=1000");
  ASSERT_EQ(two.code, 0) << two.err;
  EXPECT_NE(test::read_text(dir.file("out.0")).find("bic:"), std::string::npos) << test::read_text(dir.file("out.0"));
  EXPECT_EQ(test::read_text(dir.file("out.1")), "");
}

TEST(CliScoreRanks, ARankWithoutRowsAddsNothing) {
  TempDir dir("cli-score-ranks-empty");
  test::write_bytes(dir.file("model.json"), kModel);
  const Dataset rows = sample(model_from_json(kModel), 200, 5);  // 128-row blocks: one rank has none
  const std::vector<double> v = rows.values();
  write_matrix(dir.file("rows.npy"), v.data(), rows.rows(), rows.cols());
  const std::string score =
      "score --model " + dir.file("model.json") + " --data " + dir.file("rows.npy") + " --what resp --out ";
  ASSERT_EQ(test::run_cli(dir, score + dir.file("one.npy")).code, 0);
  const test::CliRun three =
      test::run_cli(dir, "launch --nproc 3 -- " + std::string(MIXLE_CLI_PATH) + " " + score + dir.file("three.npy"));
  ASSERT_EQ(three.code, 0) << three.err;
  EXPECT_EQ(test::read_text(dir.file("one.npy")), test::read_text(dir.file("three.npy")));
  EXPECT_EQ(parts_left(dir), 0);
  // Nor to a summary: the rank without rows adds 0 to the log-likelihood sum.
  const std::string mean =
      "score --model " + dir.file("model.json") + " --data " + dir.file("rows.npy") + " --what loglik-mean";
  const test::CliRun one = test::run_cli(dir, mean);
  ASSERT_EQ(one.code, 0) << one.err;
  const test::CliRun on_three = test::run_cli(dir, "launch --nproc 3 -- " + std::string(MIXLE_CLI_PATH) + " " + mean);
  ASSERT_EQ(on_three.code, 0) << on_three.err;
  const auto value = [](const std::string& out) {
    return std::stod(out.substr(out.find("loglik-mean:") + std::string("loglik-mean:").size()));
  };
  EXPECT_NEAR(value(on_three.out), value(one.out), 1e-9 * std::abs(value(one.out))) << on_three.out;
}

TEST(CliScoreRanks, ABadRowOnTheSecondRankLeavesNoOutput) {
  TempDir dir("cli-score-ranks-bad");
  test::write_bytes(dir.file("model.json"), kModel);
  std::vector<double> v = sample(model_from_json(kModel), 10007, 4).values();
  v[9000 * 3 + 2] = -1.0;  // a negative count, in the second rank's rows
  write_matrix(dir.file("rows.npy"), v.data(), 10007, 3);
  const test::CliRun two = on_two_ranks(dir, "score --model " + dir.file("model.json") + " --data " +
                                                 dir.file("rows.npy") + " --what loglik --out " + dir.file("ll.npy"));
  EXPECT_NE(two.code, 0);
  EXPECT_NE(two.err.find("row 9000"), std::string::npos) << two.err;
  EXPECT_FALSE(std::filesystem::exists(dir.file("ll.npy")));
  EXPECT_EQ(parts_left(dir), 0);
}

}  // namespace
}  // namespace mixle
