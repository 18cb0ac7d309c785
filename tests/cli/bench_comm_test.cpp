// `mixle bench --comm` across real ranks: a checked all-reduce per message size, nccl-tests'
// algbw/busbw, a versioned JSON document from rank 0.
#include "common/require.hpp"
#include "comms/process_util.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace mixle::test {
namespace {

using namespace std::chrono_literals;

TEST(BenchComm, TwoRanksUnderMixleLaunch) {
  MIXLE_SKIP_UNLESS_BUILT_WITH(MIXLE_HAVE_GLOO, "gloo");
  TempDir dir;
  const auto json = dir.path / "comm.json";
  Process p = run_process({MIXLE_CLI_PATH, "launch",      "--nproc",  "2",           "--",     MIXLE_CLI_PATH, "bench",
                           "--comm",       "--comm-type", "gloo",     "--min-bytes", "8",      "--max-bytes",  "32768",
                           "--iters",      "3",           "--warmup", "1",           "--json", json.string()},
                          {}, dir.path / "log.txt", 120s);
  ASSERT_EQ(p.exit_code(), 0) << p.output();
  const auto j = nlohmann::json::parse(read_file(json));
  EXPECT_EQ(j["format"], "mixle-comm-bench");
  EXPECT_EQ(j["schema_version"], 2);
  EXPECT_EQ(j["ranks"], 2);
  EXPECT_EQ(j["comm"], "gloo");
  ASSERT_EQ(j["results"].size(), 7u);  // 8, 32, …, 32768 bytes (×4 steps)
  std::size_t bytes = 8;
  for (const auto& r : j["results"]) {
    EXPECT_EQ(r["bytes"], bytes);
    EXPECT_EQ(r["correct"], true);
    EXPECT_GT(r["seconds"].get<double>(), 0.0);
    // busbw = algbw · 2(n−1)/n = algbw for n = 2.
    EXPECT_DOUBLE_EQ(r["busbw_gbs"].get<double>(), r["algbw_gbs"].get<double>());
    bytes *= 4;
  }
  EXPECT_NE(p.output().find("busbw(GB/s)"), std::string::npos) << p.output();

  // An unknown communicator type is a usage error naming the registered ones.
  Process bad =
      run_process({MIXLE_CLI_PATH, "bench", "--comm", "--comm-type", "carrier-pigeon"}, {}, dir.path / "bad.txt", 60s);
  EXPECT_EQ(bad.exit_code(), 2) << bad.output();
  EXPECT_NE(bad.output().find("unknown communicator 'carrier-pigeon'; accepted: single, gloo"), std::string::npos)
      << bad.output();
}

// One process, the default smallest message (8 bytes, one float64 per rank): a world of one
// moves nothing between ranks, so its bus bandwidth is 0.
TEST(BenchComm, OneRankStartsAtEightBytes) {
  TempDir dir;
  const auto json = dir.path / "comm.json";
  Process p = run_process({MIXLE_CLI_PATH, "bench", "--comm", "--max-bytes", "512", "--iters", "1", "--warmup", "0",
                           "--json", json.string()},
                          {}, dir.path / "log.txt", 60s);
  ASSERT_EQ(p.exit_code(), 0) << p.output();
  const auto j = nlohmann::json::parse(read_file(json));
  EXPECT_EQ(j["ranks"], 1);
  ASSERT_EQ(j["results"].size(), 4u);  // 8, 32, 128, 512 bytes
  std::size_t bytes = 8;
  for (const auto& r : j["results"]) {
    EXPECT_EQ(r["bytes"], bytes);
    EXPECT_EQ(r["correct"], true);
    EXPECT_EQ(r["busbw_gbs"].get<double>(), 0.0);
    bytes *= 4;
  }
}

// --min-bytes equal to --max-bytes measures that one size; above it is a usage error (exit 2).
TEST(BenchComm, OneSizeWhenTheBoundsMeetAndARefusalWhenTheyCross) {
  TempDir dir;
  const auto json = dir.path / "comm.json";
  Process one = run_process({MIXLE_CLI_PATH, "bench", "--comm", "--min-bytes", "128", "--max-bytes", "128", "--iters",
                             "1", "--warmup", "0", "--json", json.string()},
                            {}, dir.path / "one.txt", 60s);
  ASSERT_EQ(one.exit_code(), 0) << one.output();
  const auto j = nlohmann::json::parse(read_file(json));
  ASSERT_EQ(j["results"].size(), 1u);
  EXPECT_EQ(j["results"][0]["bytes"], 128);
  Process crossed =
      run_process({MIXLE_CLI_PATH, "bench", "--comm", "--min-bytes", "512", "--max-bytes", "128", "--iters", "1"}, {},
                  dir.path / "crossed.txt", 60s);
  EXPECT_EQ(crossed.exit_code(), 2) << crossed.output();
  EXPECT_NE(crossed.output().find("--min-bytes ≤ --max-bytes"), std::string::npos) << crossed.output();
}

}  // namespace
}  // namespace mixle::test
