// ReadOptions::weights_path: a weights file (.npy 1-D or N × 1, one-column CSV, raw float64) is
// read for the data's row range and attached to the rows; a wrong count, shape or value is
// refused naming the weights file and the row.
#include <gtest/gtest.h>

#include <filesystem>
#include <vector>

#include "data_test_util.hpp"

namespace mixle {
namespace {

using test::TempDir;

std::string write_data(const TempDir& dir) {
  const std::vector<double> v = {1, 10, 2, 20, 3, 30, 4, 40, 5, 50};
  const std::string path = dir.file("data.npy");
  write_matrix(path, v.data(), 5, 2);
  return path;
}

void expect_weights(const Dataset& d, const std::vector<double>& expected) {
  ASSERT_TRUE(d.weighted());
  ASSERT_EQ(d.rows(), expected.size());
  for (std::size_t r = 0; r < expected.size(); ++r) EXPECT_EQ(d.weights()[r], expected[r]) << "row " << r;
}

TEST(WeightsFile, NpyCsvAndRawWeightsAttachToTheirRows) {
  TempDir dir;
  const std::string data = write_data(dir);
  const std::vector<double> w = {0.5, 1, 2, 0, 3};
  // 1-D .npy, as numpy saves a weight vector.
  const std::string npy = dir.file("w.npy");
  test::write_bytes(npy, std::string("\x93NUMPY\x01\x00\x76\x00", 10) +
                             "{'descr': '<f8', 'fortran_order': False, 'shape': (5,), }" + std::string(60, ' ') + "\n" +
                             std::string(reinterpret_cast<const char*>(w.data()), w.size() * sizeof(double)));
  ReadOptions o;
  o.weights_path = npy;
  expect_weights(read_data(data, o), w);
  // One-column CSV with a header, and raw float64 beside raw data.
  test::write_bytes(dir.file("w.csv"), "weight\n0.5\n1\n2\n0\n3\n");
  o.weights_path = dir.file("w.csv");
  expect_weights(read_data(data, o), w);
  test::write_bytes(dir.file("w.bin"), std::string(reinterpret_cast<const char*>(w.data()), w.size() * 8));
  const std::vector<float> raw = {1, 10, 2, 20, 3, 30, 4, 40, 5, 50};
  test::write_bytes(dir.file("data.f32"), std::string(reinterpret_cast<const char*>(raw.data()), raw.size() * 4));
  ReadOptions r;
  r.raw_cols = 2;
  r.weights_path = dir.file("w.bin");
  expect_weights(read_data(dir.file("data.f32"), r), w);
  // A weights file whose name says no format is raw float64 beside data read as raw by request
  // (--format raw), and refused beside data of a named format.
  std::filesystem::copy_file(dir.file("w.bin"), dir.file("w.weights"));
  std::filesystem::copy_file(dir.file("data.f32"), dir.file("data.values"));
  ReadOptions asked = r;
  asked.format = DataFormat::raw;
  asked.raw_dtype = DType::f32;
  asked.weights_path = dir.file("w.weights");
  expect_weights(read_data(dir.file("data.values"), asked), w);
  o.weights_path = dir.file("w.weights");
  EXPECT_THROW(read_data(data, o), InvalidInput);
  o.weights_path = npy;
  // A row range reads the same rows of the weights.
  o.weights_path = npy;
  o.row_begin = 2;
  o.row_end = 4;
  const Dataset part = read_data(data, o);
  expect_weights(part, {2, 0});
  EXPECT_EQ(part.at(0, 0), 3.0);
}

TEST(WeightsFile, WrongCountShapeOrValueIsNamed) {
  TempDir dir;
  const std::string data = write_data(dir);
  ReadOptions o;
  o.weights_path = dir.file("short.csv");
  test::write_bytes(o.weights_path, "1\n2\n3\n");
  test::expect_invalid_input([&] { (void)read_data(data, o); }, {"short.csv", "3 × 1 values", "the 5 rows"});
  o.weights_path = dir.file("wide.csv");
  test::write_bytes(o.weights_path, "1,1\n2,2\n3,3\n4,4\n5,5\n");
  test::expect_invalid_input([&] { (void)read_data(data, o); }, {"wide.csv", "5 × 2", "one column"});
  o.weights_path = dir.file("negative.csv");
  test::write_bytes(o.weights_path, "w\n1\n2\n3\n-4\n5\n");
  test::expect_invalid_input([&] { (void)read_data(data, o); }, {"negative.csv", "row 3 (counted from 0", "≥ 0"});
  o.weights_path = dir.file("missing.npy");
  EXPECT_THROW((void)read_data(data, o), Error);
}

}  // namespace
}  // namespace mixle
