// CSV: header detection, comments, nan/inf, delimiters, row ranges, error messages, round trips.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "data_test_util.hpp"

namespace mixle {
namespace {

using test::TempDir;

TEST(DataCsv, RoundTripF64IsExactWithHeader) {
  TempDir dir;
  const std::string path = dir.file("m.csv");
  const double inf = std::numeric_limits<double>::infinity();
  const std::vector<double> v = {0.1,  1.0 / 3.0,    1e-300, -0.0,   123456789.123456789,
                                 -inf, std::nan(""), inf,    5e-324, 2.0};
  write_matrix(path, v.data(), 5, 2, DataFormat::automatic, {"alpha", "beta"});
  const std::string text = test::read_bytes(path);
  EXPECT_EQ(text.rfind("alpha,beta\n", 0), 0u) << text;
  const Dataset d = read_data(path);
  ASSERT_EQ(d.dtype(), DType::f64);
  ASSERT_EQ(d.rows(), 5u);
  ASSERT_EQ(d.cols(), 2u);
  for (std::size_t i = 0; i < v.size(); ++i) {
    const double got = d.as<double>()[i];
    if (std::isnan(v[i])) {
      EXPECT_TRUE(std::isnan(got)) << i;
    } else {
      EXPECT_EQ(got, v[i]) << i;
      EXPECT_EQ(std::signbit(got), std::signbit(v[i])) << i;
    }
  }
}

TEST(DataCsv, RoundTripF32AndI8) {
  TempDir dir;
  const std::vector<float> f = {0.1f, 16777217.0f, -1e-38f, 3.4e38f, 7.0f, 1.0f / 3.0f};
  const std::string fp = dir.file("f.csv");
  write_matrix(fp, f.data(), 2, 3);
  ReadOptions o;
  o.csv_dtype = DType::f32;
  const Dataset d = read_data(fp, o);
  ASSERT_EQ(d.dtype(), DType::f32);
  ASSERT_EQ(d.rows(), 2u);
  for (std::size_t i = 0; i < f.size(); ++i) EXPECT_EQ(d.as<float>()[i], f[i]) << i;

  const std::vector<std::int64_t> labels = {4, -2, 9007199254740992};
  const std::string lp = dir.file("labels.csv");
  write_matrix(lp, labels.data(), 3, 1, DataFormat::csv, {"label"});
  EXPECT_EQ(test::read_bytes(lp), "label\n4\n-2\n9007199254740992\n");
  const Dataset l = read_data(lp);
  ASSERT_EQ(l.rows(), 3u);
  EXPECT_EQ(l.at(2, 0), 9007199254740992.0);
}

TEST(DataCsv, HeaderCommentsBlankLinesNanInfAndWhitespace) {
  TempDir dir;
  const std::string path = dir.file("d.csv");
  test::write_bytes(path,
                    "# written by a test\n"
                    "\n"
                    "  x , y ,z\r\n"
                    "1, 2.5 ,-3e2\r\n"
                    "   # an indented comment\n"
                    "nan,NaN,inf\n"
                    "\t-inf , +4 , Infinity\n"
                    "\n");
  const DataInfo info = probe_data(path);
  EXPECT_EQ(info.format, DataFormat::csv);
  EXPECT_EQ(info.rows, 3u);
  EXPECT_EQ(info.cols, 3u);
  const Dataset d = read_data(path);
  ASSERT_EQ(d.rows(), 3u);
  ASSERT_EQ(d.cols(), 3u);
  EXPECT_EQ(d.at(0, 0), 1.0);
  EXPECT_EQ(d.at(0, 1), 2.5);
  EXPECT_EQ(d.at(0, 2), -300.0);
  EXPECT_TRUE(std::isnan(d.at(1, 0)));
  EXPECT_TRUE(std::isnan(d.at(1, 1)));
  EXPECT_EQ(d.at(1, 2), std::numeric_limits<double>::infinity());
  EXPECT_EQ(d.at(2, 0), -std::numeric_limits<double>::infinity());
  EXPECT_EQ(d.at(2, 1), 4.0);
  EXPECT_EQ(d.at(2, 2), std::numeric_limits<double>::infinity());
}

TEST(DataCsv, NoHeaderMeansFirstLineIsData) {
  TempDir dir;
  const std::string path = dir.file("n.csv");
  test::write_bytes(path, "1,2\n3,4\n");
  const Dataset d = read_data(path);
  ASSERT_EQ(d.rows(), 2u);
  EXPECT_EQ(d.at(0, 0), 1.0);
  EXPECT_EQ(d.at(1, 1), 4.0);
}

// Excel and Windows tools start UTF-8 CSV files with a byte-order mark: it is not part of the
// first name or the first number.
TEST(DataCsv, Utf8ByteOrderMarkIsSkipped) {
  TempDir dir;
  const std::string named = dir.file("bom_header.csv");
  test::write_bytes(named, "\xEF\xBB\xBFx,y\n1.5,2\n3,4\n");
  Dataset d = read_data(named);
  ASSERT_EQ(d.rows(), 2u);
  ASSERT_EQ(d.cols(), 2u);
  EXPECT_EQ(d.at(0, 0), 1.5);
  EXPECT_EQ(d.at(1, 1), 4.0);

  const std::string bare = dir.file("bom_data.csv");
  test::write_bytes(bare, "\xEF\xBB\xBF-0.25,2\n3,4\n");
  d = read_data(bare);
  ASSERT_EQ(d.rows(), 2u);
  EXPECT_EQ(d.at(0, 0), -0.25);
  EXPECT_EQ(d.at(0, 1), 2.0);
}

// The shortest CSV there is: one byte, a single value without a newline — mapped and read
// like any other (one row, one column), and probed the same.
TEST(DataCsv, AOneByteFileIsOneValue) {
  TempDir dir;
  const std::string path = dir.file("one.csv");
  test::write_bytes(path, "7");
  const Dataset d = read_data(path);
  ASSERT_EQ(d.rows(), 1u);
  ASSERT_EQ(d.cols(), 1u);
  EXPECT_EQ(d.at(0, 0), 7.0);
  const DataInfo info = probe_data(path);
  EXPECT_EQ(info.rows, 1u);
  EXPECT_EQ(info.cols, 1u);
}

TEST(DataCsv, TabAndWhitespaceDelimiters) {
  TempDir dir;
  const std::string tsv = dir.file("t.tsv");
  test::write_bytes(tsv, "a\tb\n1\t2\n3\t4\n");
  Dataset d = read_data(tsv);
  ASSERT_EQ(d.rows(), 2u);
  ASSERT_EQ(d.cols(), 2u);
  EXPECT_EQ(d.at(1, 0), 3.0);
  // np.savetxt's default: space-separated, '# ' before the header.
  const std::string txt = dir.file("s.txt");
  test::write_bytes(txt, "# a b c\n1.000000000000000000e+00 2.0  3\n4 5 6\n");
  d = read_data(txt);
  ASSERT_EQ(d.rows(), 2u);
  ASSERT_EQ(d.cols(), 3u);
  EXPECT_EQ(d.at(0, 2), 3.0);
  EXPECT_EQ(d.at(1, 0), 4.0);
}

TEST(DataCsv, NonNumberNamesLineColumnAndText) {
  TempDir dir;
  const std::string path = dir.file("data.csv");
  test::write_bytes(path, "x,y\n1,2\n3,abc\n");
  test::expect_invalid_input([&] { read_data(path); }, {path + ":3: column 2: \"abc\" is not a number"});
  test::write_bytes(path, "1,2\n# c\n3,\n");
  test::expect_invalid_input([&] { read_data(path); }, {path + ":3: column 2: \"\" is not a number"});
  test::write_bytes(path, "1,2\n1.5.2,3\n");
  test::expect_invalid_input([&] { read_data(path); }, {path + ":2: column 1: \"1.5.2\""});
  test::write_bytes(path, "1,2\n3,1e39\n");
  ReadOptions f32;
  f32.csv_dtype = DType::f32;
  test::expect_invalid_input([&] { read_data(path, f32); }, {path + ":2: column 2: \"1e39\" is out of range for f32"});
  EXPECT_EQ(read_data(path).at(1, 1), 1e39);  // fine as f64
}

TEST(DataCsv, RaggedRowNamesLineAndBothCounts) {
  TempDir dir;
  const std::string path = dir.file("ragged.csv");
  test::write_bytes(path, "1,2,3\n4,5,6\n\n7,8\n");
  test::expect_invalid_input([&] { read_data(path); }, {path + ":4:", "2 fields", "first data row (line 1) has 3"});
  test::expect_invalid_input([&] { probe_data(path); }, {path + ":4:", "2 fields", "3"});
  test::write_bytes(path, "a,b\n1,2,3\n");
  test::expect_invalid_input([&] { read_data(path); }, {path + ":2:", "3 fields", "header (line 1) has 2"});
}

TEST(DataCsv, NoDataRows) {
  TempDir dir;
  const std::string path = dir.file("e.csv");
  for (const char* text : {"", "# only a comment\n\n", "a,b\n"}) {
    test::write_bytes(path, text);
    test::expect_invalid_input([&] { read_data(path); }, {path, "no data rows"});
    test::expect_invalid_input([&] { probe_data(path); }, {path, "no data rows"});
  }
}

TEST(DataCsv, RowRangeCountsDataRowsAndSkipsOthersUnparsed) {
  TempDir dir;
  const std::string path = dir.file("r.csv");
  // Data rows 0..5; row 0 and row 5 hold text that would fail to parse.
  test::write_bytes(path,
                    "id,v\n"
                    "bad,0\n"
                    "# comment\n"
                    "1,10\n"
                    "\n"
                    "2,20\n"
                    "3,30\n"
                    "4,40\n"
                    "5,oops\n");
  ReadOptions o;
  o.row_begin = 1;
  o.row_end = 5;
  const Dataset d = read_data(path, o);
  ASSERT_EQ(d.rows(), 4u);
  ASSERT_EQ(d.cols(), 2u);
  EXPECT_EQ(d.first_row(), 1u);
  for (std::size_t r = 0; r < 4; ++r) {
    EXPECT_EQ(d.at(r, 0), static_cast<double>(r + 1));
    EXPECT_EQ(d.at(r, 1), 10.0 * static_cast<double>(r + 1));
  }
  o.row_begin = 4;
  o.row_end.reset();
  test::expect_invalid_input([&] { read_data(path, o); }, {path + ":9: column 2: \"oops\""});
  o.row_begin = 6;  // past every row, including the unparsable ones
  o.row_end = 8;
  test::expect_invalid_input([&] { read_data(path, o); }, {path, "out of bounds", "6 data rows"});
}

}  // namespace
}  // namespace mixle
