// Dataset::release: the pages of mapped rows leave the process's resident memory (RssFile in
// /proc/self/status, Linux only) and read the same values afterwards; memory a dataset owns or
// views is never touched (MADV_DONTNEED would zero it).
#include <gtest/gtest.h>

#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "data_test_util.hpp"

namespace mixle {
namespace {

using test::TempDir;

/// The file-backed part of this process's resident memory, in KiB; -1 when not reported.
long rss_file_kib() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line))
    if (line.rfind("RssFile:", 0) == 0) return std::stol(line.substr(8));
  return -1;
}

double sum_of(const Dataset& d) {
  double s = 0.0;
  for (std::size_t r = 0; r < d.rows(); ++r)
    for (std::size_t c = 0; c < d.cols(); ++c) s += d.at(r, c);
  return s;
}

TEST(DatasetRelease, MappedRowsLeaveResidentMemoryAndReadTheSameAfterwards) {
  if (rss_file_kib() < 0) GTEST_SKIP() << "no RssFile in /proc/self/status on this system";
  TempDir dir;
  constexpr std::size_t kRows = std::size_t{1} << 20, kCols = 8;  // 64 MiB of f64
  std::vector<double> v(kRows * kCols);
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<double>(i % 1000);
  write_matrix(dir.file("big.npy"), v.data(), kRows, kCols);
  const double expected = sum_of(Dataset::view(v.data(), kRows, kCols));
  v = {};

  const Dataset d = read_data(dir.file("big.npy"));
  ASSERT_TRUE(d.mapped());
  EXPECT_TRUE(d.slice(10, 20).mapped());
  const long before = rss_file_kib();
  EXPECT_EQ(sum_of(d), expected);
  const long touched = rss_file_kib();
  EXPECT_GE(touched - before, 48 * 1024) << "reading 64 MiB of mapped rows should make them resident";

  d.release(0, kRows / 2);  // the first half only
  const long half = rss_file_kib();
  EXPECT_LE(touched - half, 36 * 1024) << "released more than the rows asked for";
  EXPECT_GE(touched - half, 28 * 1024) << "half of the rows' pages should have left";
  d.slice(kRows / 2, kRows).release(0, kRows / 2);  // a slice releases its own rows
  EXPECT_LE(rss_file_kib() - before, 4 * 1024);

  EXPECT_EQ(sum_of(d), expected) << "released rows must read the file's values again";
  d.release(kRows, kRows + 1);  // out of bounds: nothing happens
  d.release(5, 5);
}

TEST(DatasetRelease, OwnedViewedAndCopiedRowsAreLeftAlone) {
  constexpr std::size_t kRows = std::size_t{1} << 16, kCols = 8;  // 4 MiB: whole pages
  std::vector<double> v(kRows * kCols);
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = 1.0 + static_cast<double>(i % 7);
  const double expected = sum_of(Dataset::view(v.data(), kRows, kCols));
  const Dataset owned = Dataset::from_vector(v, kRows, kCols);
  const Dataset viewed = Dataset::view(v.data(), kRows, kCols);
  TempDir dir;
  std::vector<std::int64_t> codes(kRows * kCols, 3);
  write_matrix(dir.file("codes.npy"), codes.data(), kRows, kCols);
  const Dataset copied = read_data(dir.file("codes.npy"));  // integers are converted, not mapped
  for (const Dataset* d : {&owned, &viewed, &copied}) {
    EXPECT_FALSE(d->mapped());
    d->release(0, d->rows());
  }
  EXPECT_EQ(sum_of(owned), expected);
  EXPECT_EQ(sum_of(viewed), expected);
  EXPECT_EQ(sum_of(copied), 3.0 * static_cast<double>(kRows * kCols));
}

}  // namespace
}  // namespace mixle
