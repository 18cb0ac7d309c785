// `mixle score` in chunks: per-row outputs written chunk by chunk (MIXLE_SCORE_CHUNK_ROWS makes
// several chunks of a small file) are byte-identical to one chunk's, for .npy and CSV, and the
// one-number summaries are the same; a bad row in a later chunk fails the command and leaves
// neither the output nor a temporary file.
#include "common/bad_files.hpp"
#include "host/cli/score_chunks.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <sys/wait.h>

namespace mixle {
namespace {

using test::TempDir;

int run(const std::string& env, const std::string& args, const std::string& log) {
  const std::string cmd = env + " " + std::string(MIXLE_CLI_PATH) + " " + args + " >" + log + " 2>&1";
  const int status = std::system(cmd.c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

TEST(CliScore, ChunksWriteWhatOneChunkWrites) {
  TempDir dir("cli-score");
  test::write_bytes(dir.file("m.json"), R"({"format": "mixle-model", "version": 1, "weights": [0.3, 0.7],
    "parts": [{"family": "gaussian_diag", "columns": [0, 2], "mean": [[0, 0], [3, 1]], "var": [[1, 1], [2, 1]]}]})");
  ASSERT_EQ(
      run("", "generate -m " + dir.file("m.json") + " -n 1000 --seed 3 -o " + dir.file("d.npy"), dir.file("gen.log")),
      0);
  const std::string base = "score -m " + dir.file("m.json") + " --data " + dir.file("d.npy");
  for (const char* what : {"loglik", "resp", "labels"})
    for (const char* ext : {".npy", ".csv"}) {
      SCOPED_TRACE(std::string(what) + ext);
      const std::string one = dir.file(std::string("one") + ext), many = dir.file(std::string("many") + ext);
      ASSERT_EQ(run("", base + " --what " + what + " -o " + one, dir.file("one.log")), 0)
          << test::read_text(dir.file("one.log"));
      ASSERT_EQ(run("MIXLE_SCORE_CHUNK_ROWS=77", base + " --what " + what + " -o " + many, dir.file("many.log")), 0)
          << test::read_text(dir.file("many.log"));
      const std::string a = test::read_text(one), b = test::read_text(many);
      EXPECT_GT(a.size(), 1000u);
      EXPECT_EQ(a, b) << "chunked output differs";
    }
  for (const char* what : {"loglik-mean", "bic"}) {
    ASSERT_EQ(run("", base + " --what " + what, dir.file("s1.log")), 0);
    ASSERT_EQ(run("MIXLE_SCORE_CHUNK_ROWS=128", base + " --what " + what, dir.file("s2.log")), 0);
    EXPECT_EQ(test::read_text(dir.file("s1.log")), test::read_text(dir.file("s2.log"))) << what;
  }
}

// 64 MiB of float64 responsibilities per chunk, in whole 128-row blocks, at least 4096 rows; the
// chunks cover the rows once, in order.
TEST(CliScore, ChunkSizes) {
  ::unsetenv("MIXLE_SCORE_CHUNK_ROWS");
  EXPECT_EQ(host::score_chunk_rows(1), std::size_t{8} << 20);
  EXPECT_EQ(host::score_chunk_rows(256), 32768u);
  EXPECT_EQ(host::score_chunk_rows(3), 2796160u);  // 2,796,202 rounded down to a multiple of 128
  EXPECT_EQ(host::score_chunk_rows(100000), 4096u);
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
  const int code = run("MIXLE_SCORE_CHUNK_ROWS=100",
                       "score -m " + dir.file("m.json") + " --data " + dir.file("d.csv") + " -o " + dir.file("out.npy"),
                       dir.file("bad.log"));
  EXPECT_EQ(code, 1) << test::read_text(dir.file("bad.log"));
  EXPECT_NE(test::read_text(dir.file("bad.log")).find("row 250"), std::string::npos)
      << test::read_text(dir.file("bad.log"));
  for (const auto& e : std::filesystem::directory_iterator(dir.path()))
    EXPECT_EQ(e.path().filename().string().find("out.npy"), std::string::npos) << e.path();
}

}  // namespace
}  // namespace mixle
