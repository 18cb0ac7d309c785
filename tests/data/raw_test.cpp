// Raw little-endian f32/f64: shape from --cols / raw_cols, size checks, row ranges.
#include <gtest/gtest.h>

#include <vector>

#include "data_test_util.hpp"

namespace mixle {
namespace {

using test::TempDir;

TEST(DataRaw, ReadsF32AndF64WithRowRanges) {
  TempDir dir;
  std::vector<float> f(12);
  for (std::size_t i = 0; i < f.size(); ++i) f[i] = 0.25f * static_cast<float>(i) - 1.0f;
  const std::string fp = dir.file("x.f32");
  test::write_bytes(fp, test::bytes_of(f.data(), f.size()));
  ReadOptions o;
  o.raw_cols = 3;
  const DataInfo info = probe_data(fp, o);
  EXPECT_EQ(info.format, DataFormat::raw);
  EXPECT_EQ(info.rows, 4u);
  EXPECT_EQ(info.cols, 3u);
  Dataset d = read_data(fp, o);
  ASSERT_EQ(d.dtype(), DType::f32);
  ASSERT_EQ(d.rows(), 4u);
  for (std::size_t i = 0; i < f.size(); ++i) EXPECT_EQ(d.as<float>()[i], f[i]);
  o.row_begin = 1;
  o.row_end = 3;
  d = read_data(fp, o);
  ASSERT_EQ(d.rows(), 2u);
  EXPECT_EQ(d.first_row(), 1u);
  for (std::size_t i = 0; i < 6; ++i) EXPECT_EQ(d.as<float>()[i], f[3 + i]);

  const std::vector<double> g = {1, 2, 3, 4, 5, 6};
  const std::string gp = dir.file("y.bin");
  test::write_bytes(gp, test::bytes_of(g.data(), g.size()));
  ReadOptions og;
  og.raw_cols = 2;
  og.raw_rows = 3;
  og.raw_dtype = DType::f64;
  og.row_begin = 2;
  d = read_data(gp, og);
  ASSERT_EQ(d.dtype(), DType::f64);
  ASSERT_EQ(d.rows(), 1u);
  EXPECT_EQ(d.at(0, 0), 5.0);
  EXPECT_EQ(d.at(0, 1), 6.0);
}

TEST(DataRaw, RoundTripThroughWriteMatrix) {
  TempDir dir;
  const std::vector<double> v = {0.5, -1.5, 2.5, 1e300};
  const std::string path = dir.file("w.raw");
  write_matrix(path, v.data(), 2, 2);
  EXPECT_EQ(test::read_bytes(path), test::bytes_of(v.data(), 4));
  ReadOptions o;
  o.raw_cols = 2;
  o.raw_dtype = DType::f64;
  const Dataset d = read_data(path, o);
  EXPECT_EQ(d.at(1, 1), 1e300);
}

TEST(DataRaw, Rejections) {
  TempDir dir;
  const std::vector<float> f(10, 1.0f);
  const std::string path = dir.file("x.bin");
  test::write_bytes(path, test::bytes_of(f.data(), f.size()));
  test::expect_invalid_input([&] { read_data(path); }, {path, "--shape N,C", "--cols"});
  ReadOptions o;
  o.raw_cols = 3;
  test::expect_invalid_input([&] { read_data(path, o); }, {path, "40 bytes", "not a multiple", "12"});
  o.raw_cols = 2;
  o.raw_rows = 4;
  test::expect_invalid_input([&] { probe_data(path, o); }, {path, "4 x 2", "32 bytes"});
  o.raw_rows.reset();
  o.raw_cols = 0;
  test::expect_invalid_input([&] { read_data(path, o); }, {path, "at least 1"});
  o.raw_cols = 2;
  o.row_begin = 4;
  o.row_end = 6;
  test::expect_invalid_input([&] { read_data(path, o); }, {path, "out of bounds", "5 data rows"});
  const std::string empty = dir.file("empty.bin");
  test::write_bytes(empty, "");
  o.row_begin = 0;
  o.row_end.reset();
  test::expect_invalid_input([&] { read_data(empty, o); }, {empty, "no data rows"});
}

}  // namespace
}  // namespace mixle
