// ensure_csv_cache: a CSV is converted to a .npy once, with a record of what it came from; the
// cache is reused while the CSV, its element type and the cache's shape are those recorded, and
// converted again otherwise; a bad CSV leaves neither cache nor record.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <sys/stat.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "data_test_util.hpp"
#include "host/data/csv_cache.hpp"

namespace mixle {
namespace {

using host::ensure_csv_cache;
using test::TempDir;

void write_text(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
}

TEST(CsvCache, ConvertsOnceAndReusesWhileTheCsvIsUnchanged) {
  TempDir dir;
  const std::string csv = dir.file("rows.csv"), npy = dir.file("rows.npy");
  write_text(csv, "a,b\n1,2.5\n3,4\n5,6\n");
  host::CsvCache c = ensure_csv_cache(csv, npy, {});
  EXPECT_TRUE(c.converted);
  EXPECT_EQ(c.path, npy);
  EXPECT_EQ(c.rows, 3u);
  EXPECT_EQ(c.cols, 2u);
  const Dataset cached = read_data(npy);
  EXPECT_TRUE(cached.mapped());
  EXPECT_EQ(cached.dtype(), DType::f64);
  EXPECT_EQ(cached.values(), read_data(csv).values());
  EXPECT_TRUE(std::filesystem::exists(npy + ".source"));
  const auto written = std::filesystem::last_write_time(npy);

  c = ensure_csv_cache(csv, npy, {});
  EXPECT_FALSE(c.converted);
  EXPECT_EQ(c.rows, 3u);
  EXPECT_EQ(std::filesystem::last_write_time(npy), written) << "an up-to-date cache is not written again";

  // The same size, another modification time and content: converted again.
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  write_text(csv, "a,b\n1,2.5\n3,4\n5,7\n");
  c = ensure_csv_cache(csv, npy, {});
  EXPECT_TRUE(c.converted);
  EXPECT_EQ(read_data(npy).at(2, 1), 7.0);
}

TEST(CsvCache, AnythingThatDiffersFromTheRecordConvertsAgain) {
  TempDir dir;
  const std::string csv = dir.file("rows.csv"), npy = dir.file("rows.npy");
  write_text(csv, "1,2\n3,4\n");
  ASSERT_TRUE(ensure_csv_cache(csv, npy, {}).converted);
  ASSERT_FALSE(ensure_csv_cache(csv, npy, {}).converted);

  ReadOptions f32;
  f32.csv_dtype = DType::f32;  // another element type
  EXPECT_TRUE(ensure_csv_cache(csv, npy, f32).converted);
  EXPECT_EQ(read_data(npy).dtype(), DType::f32);
  EXPECT_FALSE(ensure_csv_cache(csv, npy, f32).converted);

  std::filesystem::remove(npy);  // the cache gone, its record left
  EXPECT_TRUE(ensure_csv_cache(csv, npy, {}).converted);

  const std::vector<double> other{1, 2, 3};  // the cache replaced by other rows
  write_matrix(npy, other.data(), 3, 1);
  EXPECT_TRUE(ensure_csv_cache(csv, npy, {}).converted);
  EXPECT_EQ(read_data(npy).cols(), 2u);

  write_text(npy + ".source", "{ not json");  // an unreadable record
  EXPECT_TRUE(ensure_csv_cache(csv, npy, {}).converted);

  const std::string moved = dir.file("moved.csv");  // another CSV with the same bytes
  std::filesystem::copy_file(csv, moved);
  EXPECT_TRUE(ensure_csv_cache(moved, npy, {}).converted);
}

// The record beside the cache (docs/streaming.md): format and version, the CSV's absolute path,
// size, modification time and element type, the cache's shape. A record of another version —
// written by another mixle — is not this one's, so the CSV is converted again.
TEST(CsvCache, TheRecordNamesTheCsvItsTypeAndTheCachesShape) {
  TempDir dir;
  const std::string csv = dir.file("rows.csv"), npy = dir.file("rows.npy");
  write_text(csv, "1,2,3\n4,5,6\n");
  ReadOptions f32;
  f32.csv_dtype = DType::f32;
  ASSERT_TRUE(ensure_csv_cache(csv, npy, f32).converted);
  std::ifstream in(npy + ".source");
  const nlohmann::json record = nlohmann::json::parse(in);
  struct stat st {};
  ASSERT_EQ(::stat(csv.c_str(), &st), 0);
  EXPECT_EQ(record.at("format"), "mixle-csv-cache");
  EXPECT_EQ(record.at("version"), 1);
  EXPECT_EQ(record.at("csv"), std::filesystem::absolute(csv).lexically_normal().string());
  EXPECT_EQ(record.at("size"), std::filesystem::file_size(csv));
  EXPECT_EQ(record.at("mtime_ns"), std::int64_t{st.st_mtim.tv_sec} * 1000000000 + st.st_mtim.tv_nsec);
  EXPECT_EQ(record.at("dtype"), "f32");
  EXPECT_EQ(record.at("rows"), 2);
  EXPECT_EQ(record.at("cols"), 3);
  EXPECT_EQ(record.size(), 8u) << record.dump();

  nlohmann::json other = record;
  other["version"] = 2;
  write_text(npy + ".source", other.dump());
  EXPECT_TRUE(ensure_csv_cache(csv, npy, f32).converted);
  EXPECT_FALSE(ensure_csv_cache(csv, npy, f32).converted);
}

TEST(CsvCache, ABadCsvOrCacheNameLeavesNothing) {
  TempDir dir;
  const std::string csv = dir.file("rows.csv"), npy = dir.file("rows.npy");
  write_text(csv, "1,2\n3,x\n");
  test::expect_invalid_input([&] { ensure_csv_cache(csv, npy, {}); }, {"rows.csv:2: column 2"});
  EXPECT_FALSE(std::filesystem::exists(npy));
  EXPECT_FALSE(std::filesystem::exists(npy + ".source"));
  write_text(csv, "1,2\n");
  EXPECT_THROW(ensure_csv_cache(csv, dir.file("rows.bin"), {}), UsageError);
  test::expect_invalid_input([&] { ensure_csv_cache(dir.file("missing.csv"), npy, {}); }, {"missing.csv"});
}

}  // namespace
}  // namespace mixle
