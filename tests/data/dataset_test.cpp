// Dataset: views, owned vectors, slices, typed access.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "data_test_util.hpp"

namespace mixle {
namespace {

TEST(DataDataset, DtypeSizeAndName) {
  EXPECT_EQ(dtype_size(DType::f32), 4u);
  EXPECT_EQ(dtype_size(DType::f64), 8u);
  EXPECT_STREQ(dtype_name(DType::f32), "f32");
  EXPECT_STREQ(dtype_name(DType::f64), "f64");
}

TEST(DataDataset, ViewIsZeroCopy) {
  std::vector<float> v = {1, 2, 3, 4, 5, 6};
  const Dataset d = Dataset::view(v.data(), 3, 2);
  EXPECT_EQ(d.rows(), 3u);
  EXPECT_EQ(d.cols(), 2u);
  EXPECT_EQ(d.dtype(), DType::f32);
  EXPECT_EQ(d.data(), v.data());
  EXPECT_EQ(d.source(), "<memory>");
  v[5] = 42;  // the view sees the caller's memory
  EXPECT_EQ(d.at(2, 1), 42.0);
  EXPECT_EQ(d.as<float>(), v.data());
  EXPECT_THROW(d.as<double>(), InvalidInput);
}

// A null pointer is a view of no values only: one row of two columns, or two rows of one, is
// refused naming the shape; zero rows or zero columns are empty views.
TEST(DataDataset, ANullViewHoldsNoValues) {
  EXPECT_THROW(Dataset::view(static_cast<const float*>(nullptr), 1, 2), InvalidInput);
  EXPECT_THROW(Dataset::view(static_cast<const double*>(nullptr), 2, 1), InvalidInput);
  try {
    (void)Dataset::view(static_cast<const double*>(nullptr), 3, 5);
    FAIL() << "expected InvalidInput";
  } catch (const InvalidInput& e) {
    EXPECT_NE(std::string(e.what()).find("3 x 5"), std::string::npos) << e.what();
  }
  EXPECT_EQ(Dataset::view(static_cast<const float*>(nullptr), 0, 4).rows(), 0u);
  EXPECT_EQ(Dataset::view(static_cast<const double*>(nullptr), 6, 0).rows(), 6u);
}

TEST(DataDataset, FromVectorOwnsAndChecksSize) {
  Dataset d = Dataset::from_vector(std::vector<double>{1.5, -2, 3, 4}, 2, 2);
  EXPECT_EQ(d.dtype(), DType::f64);
  EXPECT_EQ(d.at(0, 0), 1.5);
  EXPECT_EQ(d.at(1, 1), 4.0);
  EXPECT_THROW(d.as<float>(), InvalidInput);
  test::expect_invalid_input([] { Dataset::from_vector(std::vector<float>{1, 2, 3}, 2, 2); }, {"3 values", "2 x 2"});
}

// A bad weight is named by its row (counted from 0, as data rows are) and its own value.
TEST(DataDataset, ABadWeightIsNamedByRowAndValue) {
  const Dataset d = Dataset::from_vector(std::vector<double>{0, 1, 2, 3}, 4, 1);
  test::expect_invalid_input(
      [&] {
        d.with_weights({1.0, -2.5, 3.0, 4.0}, "w.csv");
      },
      {"sample weights w.csv: row 1 (counted from 0, as data rows are) has weight -2.5"});
  test::expect_invalid_input(
      [&] {
        d.with_weights({1.0, 2.0, 3.0, -4.0}, "w.csv");
      },
      {"row 3 (counted from 0, as data rows are) has weight -4"});
  test::expect_invalid_input([&] { d.with_weights({1.0, 2.0}, "w.csv"); }, {"2 weights given for the 4 rows"});
}

TEST(DataDataset, SliceSharesStorageAndOutlivesParent) {
  Dataset s;
  {
    Dataset d = Dataset::from_vector(std::vector<double>{0, 1, 2, 3, 4, 5, 6, 7}, 4, 2);
    s = d.slice(1, 3);
    EXPECT_EQ(s.data(), d.as<double>() + 2);
  }
  ASSERT_EQ(s.rows(), 2u);
  EXPECT_EQ(s.first_row(), 1u);
  EXPECT_EQ(s.at(0, 0), 2.0);
  EXPECT_EQ(s.at(1, 1), 5.0);
  const Dataset ss = s.slice(1, 2);
  EXPECT_EQ(ss.first_row(), 2u);
  EXPECT_EQ(ss.at(0, 0), 4.0);
  EXPECT_THROW(s.slice(1, 3), InvalidInput);
  EXPECT_THROW(s.slice(2, 1), InvalidInput);
  EXPECT_TRUE(s.slice(2, 2).empty());
}

// A slice of weighted rows keeps each row's own weight, a slice of a slice too.
TEST(DataDataset, SliceKeepsItsRowsWeights) {
  const Dataset d =
      Dataset::from_vector(std::vector<double>{0, 1, 2, 3}, 4, 1).with_weights({0.5, 1.5, 2.5, 3.5}, "w.csv");
  const Dataset s = d.slice(1, 4);
  ASSERT_NE(s.weights(), nullptr);
  EXPECT_EQ(s.weights()[0], 1.5);
  EXPECT_EQ(s.weights()[2], 3.5);
  const Dataset ss = s.slice(1, 2);
  ASSERT_NE(ss.weights(), nullptr);
  EXPECT_EQ(ss.weights()[0], 2.5);
  EXPECT_EQ(Dataset::from_vector(std::vector<double>{0, 1}, 2, 1).slice(0, 1).weights(), nullptr);
  // New weights for a weighted slice are the slice's own, from its first row: given as values or
  // as a one-column Dataset.
  const Dataset reweighed = s.with_weights({7, 8, 9}, "v.csv");
  EXPECT_EQ(std::vector<double>(reweighed.weights(), reweighed.weights() + 3), (std::vector<double>{7, 8, 9}));
  const Dataset from_file = s.with_weights(Dataset::from_vector(std::vector<double>{4, 5, 6}, 3, 1));
  EXPECT_EQ(std::vector<double>(from_file.weights(), from_file.weights() + 3), (std::vector<double>{4, 5, 6}));
}

}  // namespace
}  // namespace mixle
