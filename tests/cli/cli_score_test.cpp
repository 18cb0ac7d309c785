// `mixle score` in chunks: per-row outputs written chunk by chunk (MIXLE_SCORE_CHUNK_ROWS makes
// several chunks of a small file) are byte-identical to one chunk's, for .npy and CSV, and the
// one-number summaries are the same; a bad row in a later chunk fails the command and leaves
// neither the output nor a temporary file.
#include "common/run_cli.hpp"
#include "host/cli/score_chunks.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <sys/wait.h>

namespace mixle {
namespace {

using test::TempDir;

TEST(CliScore, ChunksWriteWhatOneChunkWrites) {
  TempDir dir("cli-score");
  test::write_bytes(dir.file("m.json"), R"({"format": "mixle-model", "version": 1, "weights": [0.3, 0.7],
    "parts": [{"family": "gaussian_diag", "columns": [0, 2], "mean": [[0, 0], [3, 1]], "var": [[1, 1], [2, 1]]}]})");
  ASSERT_EQ(test::run_cli(dir, "generate -m " + dir.file("m.json") + " -n 1000 --seed 3 -o " + dir.file("d.npy")).code,
            0);
  const std::string base = "score -m " + dir.file("m.json") + " --data " + dir.file("d.npy");
  for (const char* what : {"loglik", "resp", "labels"})
    for (const char* ext : {".npy", ".csv"}) {
      SCOPED_TRACE(std::string(what) + ext);
      const std::string one = dir.file(std::string("one") + ext), many = dir.file(std::string("many") + ext);
      const test::CliRun r1 = test::run_cli(dir, base + " --what " + what + " -o " + one);
      ASSERT_EQ(r1.code, 0) << r1.err;
      const test::CliRun r2 = test::run_cli(dir, base + " --what " + what + " -o " + many, "MIXLE_SCORE_CHUNK_ROWS=77");
      ASSERT_EQ(r2.code, 0) << r2.err;
      const std::string a = test::read_text(one), b = test::read_text(many);
      EXPECT_GT(a.size(), 1000u);
      EXPECT_EQ(a, b) << "chunked output differs";
    }
  for (const char* what : {"loglik-mean", "bic"}) {
    const test::CliRun one = test::run_cli(dir, base + " --what " + what);
    const test::CliRun many = test::run_cli(dir, base + " --what " + what, "MIXLE_SCORE_CHUNK_ROWS=128");
    ASSERT_EQ(one.code, 0) << one.err;
    ASSERT_EQ(many.code, 0) << many.err;
    EXPECT_FALSE(one.out.empty());
    EXPECT_EQ(one.out, many.out) << what;
  }
}

// 64 MiB of float64 responsibilities and rows per chunk, in whole 128-row blocks, at least 4096
// rows; the chunks cover the rows once, in order.
TEST(CliScore, ChunkSizes) {
  ::unsetenv("MIXLE_SCORE_CHUNK_ROWS");
  EXPECT_EQ(host::score_chunk_rows(1, 8), std::size_t{4} << 20);  // 16 bytes a row
  EXPECT_EQ(host::score_chunk_rows(256, 256), 29056u);            // 29,127 rounded down to a multiple of 128
  EXPECT_EQ(host::score_chunk_rows(3, 16), 1677696u);             // 1,677,721 rounded down
  EXPECT_EQ(host::score_chunk_rows(1, 512), 129024u);             // the row's bytes dominate
  EXPECT_EQ(host::score_chunk_rows(100000, 8), 4096u);
  std::string seen;
  host::for_each_chunk(
      10, 4, [&](std::size_t b, std::size_t e) { seen += std::to_string(b) + "-" + std::to_string(e) + " "; });
  EXPECT_EQ(seen, "0-4 4-8 8-10 ");
  seen.clear();
  host::for_each_chunk(
      8, 4, [&](std::size_t b, std::size_t e) { seen += std::to_string(b) + "-" + std::to_string(e) + " "; });
  EXPECT_EQ(seen, "0-4 4-8 ");
}

TEST(CliScore, ABadRowInALaterChunkLeavesNoFile) {
  TempDir dir("cli-score-bad");
  test::write_bytes(dir.file("m.json"), R"({"format": "mixle-model", "version": 1, "weights": [1],
    "parts": [{"family": "poisson", "columns": [0, 1], "rate": [[2]]}]})");
  std::string csv = "x\n";
  for (int r = 0; r < 300; ++r) csv += r == 250 ? "-1\n" : "3\n";  // row 250 (from 0), in the third chunk: not a count
  test::write_bytes(dir.file("d.csv"), csv);
  const test::CliRun r = test::run_cli(
      dir, "score -m " + dir.file("m.json") + " --data " + dir.file("d.csv") + " -o " + dir.file("out.npy"),
      "MIXLE_SCORE_CHUNK_ROWS=100");
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_NE(r.err.find("row 250"), std::string::npos) << r.err;
  for (const auto& e : std::filesystem::directory_iterator(dir.path()))
    EXPECT_EQ(e.path().filename().string().find("out.npy"), std::string::npos) << e.path();
}

}  // namespace
}  // namespace mixle
