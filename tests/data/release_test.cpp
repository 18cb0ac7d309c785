// Dataset::release: the pages of mapped rows leave the process's resident memory (RssFile in
// /proc/self/status, Linux only) and read the same values afterwards; memory a dataset owns or
// views is never touched (MADV_DONTNEED would zero it).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "common/peak_memory.hpp"
#include "data_test_util.hpp"

namespace mixle {
namespace {

using test::TempDir;

double sum_of(const Dataset& d) {
  double s = 0.0;
  for (std::size_t r = 0; r < d.rows(); ++r)
    for (std::size_t c = 0; c < d.cols(); ++c) s += d.at(r, c);
  return s;
}

TEST(DatasetRelease, MappedRowsLeaveResidentMemoryAndReadTheSameAfterwards) {
  if (test::status_kib("RssFile") < 0) GTEST_SKIP() << "no RssFile in /proc/self/status on this system";
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
  const long before = test::status_kib("RssFile");
  EXPECT_EQ(sum_of(d), expected);
  const long touched = test::status_kib("RssFile");
  EXPECT_GE(touched - before, 48 * 1024) << "reading 64 MiB of mapped rows should make them resident";

  d.release(0, kRows / 2);  // the first half only
  const long half = test::status_kib("RssFile");
  EXPECT_LE(touched - half, 36 * 1024) << "released more than the rows asked for";
  EXPECT_GE(touched - half, 28 * 1024) << "half of the rows' pages should have left";
  d.slice(kRows / 2, kRows).release(0, kRows / 2);  // a slice releases its own rows
  EXPECT_LE(test::status_kib("RssFile") - before, 4 * 1024);

  EXPECT_EQ(sum_of(d), expected) << "released rows must read the file's values again";
  d.release(kRows, kRows + 1);  // out of bounds: nothing happens
  d.release(5, 5);
}

/// Whether each of `pages` pages from `address` (page-aligned) is in this process's page table
/// (/proc/self/pagemap, bit 63); empty when that file cannot be read.
std::vector<bool> present_pages(const void* address, std::size_t pages) {
  const auto page = static_cast<std::uintptr_t>(::sysconf(_SC_PAGESIZE));
  const int fd = ::open("/proc/self/pagemap", O_RDONLY);
  if (fd < 0) return {};
  std::vector<std::uint64_t> entries(pages);
  const auto offset = static_cast<off_t>(reinterpret_cast<std::uintptr_t>(address) / page * 8);
  const ssize_t got = ::pread(fd, entries.data(), pages * 8, offset);
  ::close(fd);
  if (got != static_cast<ssize_t>(pages * 8)) return {};
  std::vector<bool> present(pages);
  for (std::size_t i = 0; i < pages; ++i) present[i] = ((entries[i] >> 63) & 1) != 0;
  return present;
}

TEST(DatasetRelease, OnlyTheWholePagesInsideTheRowsAreReleased) {
  const auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  TempDir dir;
  constexpr std::size_t kPages = 64;
  const std::size_t values = kPages * page / 8;
  std::vector<double> v(values, 2.0);
  test::write_bytes(dir.file("pages.f64"), test::bytes_of(v.data(), v.size()));
  // A raw file is mapped from its first byte, so row 0 starts a page. Rows of one page each, and
  // rows of half a page.
  ReadOptions o;
  o.format = DataFormat::raw;
  o.raw_dtype = DType::f64;
  o.raw_cols = page / 8;
  const Dataset whole_pages = read_data(dir.file("pages.f64"), o);
  o.raw_cols = page / 16;
  const Dataset half_pages = read_data(dir.file("pages.f64"), o);
  for (const Dataset* d : {&whole_pages, &half_pages}) {
    ASSERT_TRUE(d->mapped());
    ASSERT_EQ(reinterpret_cast<std::uintptr_t>(d->data()) % page, 0u);
    EXPECT_EQ(sum_of(*d), 2.0 * static_cast<double>(values));  // every page mapped in
  }
  if (present_pages(whole_pages.data(), kPages).empty()) GTEST_SKIP() << "no /proc/self/pagemap here";
  whole_pages.release(10, 20);  // pages 10 … 19, exactly
  std::vector<bool> present = present_pages(whole_pages.data(), kPages);
  for (std::size_t p = 0; p < kPages; ++p) EXPECT_EQ(present[p], p < 10 || p >= 20) << "page " << p;
  half_pages.release(61, 81);  // its own mapping's bytes from page 30.5 to 40.5: pages 31 … 39 whole
  present = present_pages(half_pages.data(), kPages);
  for (std::size_t p = 0; p < kPages; ++p) EXPECT_EQ(present[p], p < 31 || p >= 40) << "page " << p;
  half_pages.release(0, 1);  // half of page 0: no page whole
  EXPECT_TRUE(present_pages(half_pages.data(), 1)[0]);
  EXPECT_EQ(sum_of(whole_pages), 2.0 * static_cast<double>(values));
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
