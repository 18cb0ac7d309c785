// A row range of a large .npy or raw file maps only about those rows, not the whole file
// (checked in /proc/self/maps, Linux only).
#include <gtest/gtest.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <fstream>
#include <sstream>
#include <vector>

#include "data_test_util.hpp"
#include "host/data/mapped_file.hpp"

namespace mixle {
namespace {

using test::TempDir;

/// Size in bytes of the mapping that contains `address`, or 0 when none does.
std::size_t mapping_size_of(const void* address) {
  std::ifstream maps("/proc/self/maps");
  const auto a = reinterpret_cast<std::uintptr_t>(address);
  std::string line;
  while (std::getline(maps, line)) {
    std::istringstream in(line);
    std::uintptr_t begin = 0, end = 0;
    char dash = 0;
    in >> std::hex >> begin >> dash >> end;
    if (a >= begin && a < end) return end - begin;
  }
  return 0;
}

TEST(DataMapping, RowRangeMapsOnlyItsRows) {
  if (!std::ifstream("/proc/self/maps")) GTEST_SKIP() << "no /proc/self/maps on this system";
  TempDir dir;
  constexpr std::size_t kRows = 100000, kCols = 8;  // 6.4 MB of f64
  std::vector<double> v(kRows * kCols);
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<double>(i);
  const std::string npy = dir.file("big.npy");
  write_matrix(npy, v.data(), kRows, kCols);
  const std::string raw = dir.file("big.f64");
  test::write_bytes(raw, test::bytes_of(v.data(), v.size()));

  ReadOptions o;
  o.row_begin = 50000;
  o.row_end = 50010;  // 640 bytes: at most two pages once aligned
  o.raw_cols = kCols;
  o.raw_dtype = DType::f64;
  constexpr std::size_t kMaxMapped = 64 * 1024;  // generous for any page size up to 32 KiB
  for (const std::string& path : {npy, raw}) {
    const Dataset d = read_data(path, o);
    ASSERT_EQ(d.rows(), 10u);
    EXPECT_EQ(d.at(0, 0), static_cast<double>(50000 * kCols)) << path;
    EXPECT_EQ(d.at(9, 7), static_cast<double>(50010 * kCols - 1)) << path;
    const std::size_t mapped = mapping_size_of(d.data());
    EXPECT_GT(mapped, 0u) << path << ": rows are not in a mapping";
    EXPECT_LE(mapped, kMaxMapped) << path << ": the whole file seems mapped";
  }
}

// read_at continues after a short read. Regular files return everything asked for, so the
// test reads /proc/self/maps, which the kernel hands out at most a page per read: the rest must
// land right after what came first, never before the destination.
TEST(DataMapping, ReadAtContinuesAfterShortReads) {
  if (!std::ifstream("/proc/self/maps")) GTEST_SKIP() << "no /proc/self/maps on this system";
  constexpr std::size_t kBefore = 64 << 10, kLength = 256 << 10;
  constexpr unsigned char kUntouched = 0xAB;  // never in the file's text
  std::vector<unsigned char> buffer(kBefore + kLength, kUntouched);
  // 128 pages of alternating protection: 128 more lines (~9 KiB), so the file spans pages.
  const auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  void* region = ::mmap(nullptr, 128 * page, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(region, MAP_FAILED);
  for (std::size_t i = 1; i < 128; i += 2) ::mprotect(static_cast<char*>(region) + i * page, page, PROT_NONE);
  const host::ReadOnlyFile file("/proc/self/maps");
  const std::size_t got = file.read_at(0, buffer.data() + kBefore, kLength);
  ::munmap(region, 128 * page);
  ASSERT_GT(got, std::size_t{8192}) << "expected a maps file of several pages";
  ASSERT_LT(got, kLength);
  for (std::size_t i = 0; i < kBefore; ++i)
    ASSERT_EQ(buffer[i], kUntouched) << "written before the destination at " << i;
  for (std::size_t i = 0; i < got; ++i)
    ASSERT_NE(buffer[kBefore + i], kUntouched) << "a hole in what was read at " << i;
  EXPECT_EQ(buffer[kBefore + got - 1], '\n');  // the last line arrived whole
  for (std::size_t i = got; i < kLength; ++i) ASSERT_EQ(buffer[kBefore + i], kUntouched) << i;
}

// With standard input closed, open() hands out descriptor 0 — a valid one to read from.
TEST(DataMapping, AFileOnDescriptorZeroIsRead) {
  TempDir dir;
  const std::string path = dir.file("text.txt");
  test::write_bytes(path, "read through fd 0");
  const int saved = ::dup(0);
  ASSERT_GE(saved, 0);
  ::close(0);
  std::string error, text(17, '\0');
  bool zero_was_used = false;
  try {
    const host::ReadOnlyFile file(path);
    zero_was_used = ::fcntl(0, F_GETFD) != -1;
    text.resize(file.read_at(0, text.data(), text.size()));
  } catch (const std::exception& e) {
    error = e.what();
  }
  const bool zero_closed = ::fcntl(0, F_GETFD) == -1;  // the file closed its descriptor, 0 too
  ::dup2(saved, 0);
  ::close(saved);
  EXPECT_EQ(error, "");
  EXPECT_TRUE(zero_was_used);
  EXPECT_TRUE(zero_closed) << "descriptor 0 left open after the file was closed";
  EXPECT_EQ(text, "read through fd 0");
}

// A read that fails (here EIO: /proc/self/mem at address 0, never mapped) is an error naming the
// file — not retried forever.
TEST(DataMapping, AFailingReadIsNamed) {
  if (!std::ifstream("/proc/self/mem")) GTEST_SKIP() << "no /proc/self/mem on this system";
  const host::ReadOnlyFile file("/proc/self/mem");
  std::vector<unsigned char> buffer(16);
  try {
    (void)file.read_at(0, buffer.data(), buffer.size());
    ADD_FAILURE() << "reading address 0 of /proc/self/mem succeeded";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("cannot read /proc/self/mem"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace mixle
