// .npy: round trips through write_matrix, hand-written v1/v2/v3 headers, row ranges, rejections.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <iterator>
#include <limits>
#include <vector>

#include "data_test_util.hpp"

namespace mixle {
namespace {

using test::make_npy;
using test::TempDir;

std::vector<double> iota_values(std::size_t n, double scale) {
  std::vector<double> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = (static_cast<double>(i) - 7.0) * scale;
  return v;
}

TEST(DataNpy, RoundTripF32) {
  TempDir dir;
  const std::string path = dir.file("a.npy");
  std::vector<float> v = {1.5f, -2.25f, 3e-8f, std::numeric_limits<float>::infinity(), 0.1f, 1e30f};
  write_matrix(path, v.data(), 3, 2);
  const std::string bytes = test::read_bytes(path);
  const std::size_t header = bytes.size() - v.size() * sizeof(float);
  EXPECT_EQ(header % 64, 0u) << "data must start on a 64-byte boundary";
  EXPECT_EQ(bytes[header - 1], '\n');
  EXPECT_NE(bytes.find("'descr': '<f4'"), std::string::npos);
  EXPECT_NE(bytes.find("'shape': (3, 2)"), std::string::npos);

  const DataInfo info = probe_data(path);
  EXPECT_EQ(info.format, DataFormat::npy);
  EXPECT_EQ(info.dtype, DType::f32);
  EXPECT_EQ(info.rows, 3u);
  EXPECT_EQ(info.cols, 2u);
  const Dataset d = read_data(path);
  ASSERT_EQ(d.rows(), 3u);
  ASSERT_EQ(d.cols(), 2u);
  ASSERT_EQ(d.dtype(), DType::f32);
  EXPECT_EQ(d.source(), path);
  for (std::size_t i = 0; i < v.size(); ++i) EXPECT_EQ(d.as<float>()[i], v[i]) << i;
}

TEST(DataNpy, RoundTripF64) {
  TempDir dir;
  const std::string path = dir.file("b.npy");
  std::vector<double> v = iota_values(40, 0.1);
  v[3] = std::nan("");
  write_matrix(path, v.data(), 10, 4);
  const Dataset d = read_data(path);
  ASSERT_EQ(d.dtype(), DType::f64);
  ASSERT_EQ(d.rows(), 10u);
  ASSERT_EQ(d.cols(), 4u);
  EXPECT_TRUE(std::isnan(d.at(0, 3)));
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (i != 3) {
      EXPECT_EQ(d.as<double>()[i], v[i]) << i;
    }
  }
}

TEST(DataNpy, RoundTripI8ReadsAsExactF64) {
  TempDir dir;
  const std::string path = dir.file("labels.npy");
  const std::vector<std::int64_t> v = {0, 3, -1, (std::int64_t{1} << 53), 7, 2};
  write_matrix(path, v.data(), 6, 1);
  EXPECT_NE(test::read_bytes(path).find("'descr': '<i8'"), std::string::npos);
  const Dataset d = read_data(path);
  ASSERT_EQ(d.dtype(), DType::f64);
  ASSERT_EQ(d.rows(), 6u);
  for (std::size_t i = 0; i < v.size(); ++i) EXPECT_EQ(d.at(i, 0), static_cast<double>(v[i]));

  const std::vector<std::int64_t> big = {1, (std::int64_t{1} << 53) + 1};
  write_matrix(path, big.data(), 2, 1);
  test::expect_invalid_input([&] { read_data(path); }, {path, "2^53"});
}

TEST(DataNpy, HandWrittenV2V3AndOneDimensional) {
  TempDir dir;
  const std::vector<double> v = {1, 2, 3, 4, 5, 6};
  const std::string v2 = dir.file("v2.npy");
  test::write_bytes(
      v2, make_npy(2, "{'descr': '<f8', 'fortran_order': False, 'shape': (2, 3), }", test::bytes_of(v.data(), 6)));
  Dataset d = read_data(v2);
  ASSERT_EQ(d.rows(), 2u);
  ASSERT_EQ(d.cols(), 3u);
  EXPECT_EQ(d.at(1, 2), 6.0);

  // v3: UTF-8 header, otherwise v2; double quotes and a 1-D shape (read as N x 1).
  const std::vector<float> f = {0.5f, 1.5f, 2.5f};
  const std::string v3 = dir.file("v3.npy");
  test::write_bytes(
      v3, make_npy(3, "{\"descr\": \"<f4\", \"fortran_order\": False, \"shape\": (3,)}", test::bytes_of(f.data(), 3)));
  d = read_data(v3);
  ASSERT_EQ(d.rows(), 3u);
  ASSERT_EQ(d.cols(), 1u);
  ASSERT_EQ(d.dtype(), DType::f32);
  EXPECT_EQ(d.at(2, 0), 2.5);

  // '=' (native byte order, what some writers put for a little-endian host's array) reads as '<'.
  static_assert(std::endian::native == std::endian::little);
  const std::string native = dir.file("native.npy");
  test::write_bytes(
      native, make_npy(1, "{'descr': '=f8', 'fortran_order': False, 'shape': (3, 2), }", test::bytes_of(v.data(), 6)));
  d = read_data(native);
  ASSERT_EQ(d.dtype(), DType::f64);
  ASSERT_EQ(d.rows(), 3u);
  EXPECT_EQ(d.at(2, 1), 6.0);
}

// The header is a Python dict literal: other writers order its keys as they like and may leave
// out the trailing comma, so each key may come last, its value directly before the '}'.
TEST(DataNpy, KeysInAnyOrderWithoutATrailingComma) {
  TempDir dir;
  const std::vector<double> v = {1, 2, 3, 4, 5, 6};
  const std::vector<std::string> dicts = {
      "{'descr': '<f8', 'shape': (3, 2), 'fortran_order': False}",
      "{'shape': (3, 2), 'fortran_order': False, 'descr': '<f8'}",
      "{'fortran_order': False, 'descr': '<f8', 'shape': (3, 2)}",
  };
  for (std::size_t i = 0; i < dicts.size(); ++i) {
    SCOPED_TRACE(dicts[i]);
    const std::string path = dir.file("order" + std::to_string(i) + ".npy");
    test::write_bytes(path, make_npy(1, dicts[i], test::bytes_of(v.data(), v.size())));
    const Dataset d = read_data(path);
    ASSERT_EQ(d.rows(), 3u);
    ASSERT_EQ(d.cols(), 2u);
    EXPECT_EQ(d.at(2, 1), 6.0);
  }
}

// numpy writes int32 for np.array([...], dtype=np.int32) and on platforms whose default int
// is 32-bit: read as exact float64, negatives and the extremes included.
TEST(DataNpy, Int32ReadsAsExactF64) {
  TempDir dir;
  const std::vector<std::int32_t> v = {
      0, -1, 7, std::numeric_limits<std::int32_t>::min(), std::numeric_limits<std::int32_t>::max(), 12345};
  const std::string path = dir.file("i4.npy");
  test::write_bytes(path, make_npy(1, "{'descr': '<i4', 'fortran_order': False, 'shape': (3, 2), }",
                                   test::bytes_of(v.data(), v.size())));
  const Dataset d = read_data(path);
  ASSERT_EQ(d.dtype(), DType::f64);
  ASSERT_EQ(d.rows(), 3u);
  ASSERT_EQ(d.cols(), 2u);
  for (std::size_t i = 0; i < v.size(); ++i) EXPECT_EQ(d.at(i / 2, i % 2), static_cast<double>(v[i])) << i;
}

// numpy switches to a version-2 header (4-byte length) when the header passes 65535 bytes; the
// length must be read whole, not its low 16 bits.
TEST(DataNpy, Version2HeaderLongerThan64KiB) {
  TempDir dir;
  const std::vector<double> v = {1.5, -2.5, 3.25, 4.0};
  std::string dict = "{'descr': '<f8', 'fortran_order': False, 'shape': (2, 2), }";
  dict.append(70000, ' ');
  const std::string path = dir.file("long_header.npy");
  test::write_bytes(path, make_npy(2, dict, test::bytes_of(v.data(), v.size())));
  const Dataset d = read_data(path);
  ASSERT_EQ(d.rows(), 2u);
  ASSERT_EQ(d.cols(), 2u);
  for (std::size_t i = 0; i < v.size(); ++i) EXPECT_EQ(d.at(i / 2, i % 2), v[i]) << i;
}

TEST(DataNpy, RowRangeReturnsExactlyThoseRows) {
  TempDir dir;
  const std::string path = dir.file("r.npy");
  const std::vector<double> v = iota_values(30, 1.0);
  write_matrix(path, v.data(), 10, 3);
  ReadOptions o;
  o.row_begin = 3;
  o.row_end = 7;
  const Dataset d = read_data(path, o);
  ASSERT_EQ(d.rows(), 4u);
  EXPECT_EQ(d.first_row(), 3u);
  for (std::size_t r = 0; r < 4; ++r) {
    for (std::size_t c = 0; c < 3; ++c) EXPECT_EQ(d.at(r, c), v[(r + 3) * 3 + c]);
  }
  o.row_begin = 9;
  o.row_end.reset();  // to the end
  const Dataset tail = read_data(path, o);
  ASSERT_EQ(tail.rows(), 1u);
  EXPECT_EQ(tail.at(0, 2), v[29]);

  o.row_begin = 5;
  o.row_end = 11;
  test::expect_invalid_input([&] { read_data(path, o); }, {path, "out of bounds", "10"});
  o.row_end = 5;
  test::expect_invalid_input([&] { read_data(path, o); }, {path, "empty"});
}

TEST(DataNpy, MisalignedDataIsCopiedNotMisread) {
  TempDir dir;
  const std::string path = dir.file("odd.npy");
  const std::vector<double> v = iota_values(8, 0.5);
  // align = 1: the data starts wherever the header ends, here not on an 8-byte boundary.
  std::string bytes =
      make_npy(1, "{'descr': '<f8', 'fortran_order': False, 'shape': (4, 2), } ", test::bytes_of(v.data(), 8), 1);
  ASSERT_NE((bytes.size() - 64) % 8, 0u);
  test::write_bytes(path, bytes);
  ReadOptions o;
  o.row_begin = 1;
  const Dataset d = read_data(path, o);
  ASSERT_EQ(d.rows(), 3u);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(d.data()) % alignof(double), 0u);
  for (std::size_t r = 0; r < 3; ++r)
    for (std::size_t c = 0; c < 2; ++c) EXPECT_EQ(d.at(r, c), v[(r + 1) * 2 + c]) << r << ", " << c;
  // float32 the same way: copied into floats of its own, every value read.
  const std::string single = dir.file("odd32.npy");
  const std::vector<float> f = {1.5f, -2.25f, 3.0f, 4.5f, -5.0f, 6.75f};
  std::string fbytes =
      make_npy(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (3, 2), } ", test::bytes_of(f.data(), 6), 1);
  ASSERT_NE((fbytes.size() - 6 * sizeof(float)) % sizeof(float), 0u);
  test::write_bytes(single, fbytes);
  const Dataset g = read_data(single, o);
  ASSERT_EQ(g.rows(), 2u);
  ASSERT_EQ(g.dtype(), DType::f32);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(g.data()) % alignof(float), 0u);
  for (std::size_t r = 0; r < 2; ++r)
    for (std::size_t c = 0; c < 2; ++c) EXPECT_EQ(g.at(r, c), f[(r + 1) * 2 + c]) << r << ", " << c;
}

TEST(DataNpy, RejectsFortranOrder) {
  TempDir dir;
  const std::string path = dir.file("fortran.npy");
  test::write_bytes(path,
                    make_npy(1, "{'descr': '<f8', 'fortran_order': True, 'shape': (2, 2), }", std::string(32, '\0')));
  test::expect_invalid_input([&] { read_data(path); }, {path, "fortran_order True", "np.ascontiguousarray"});
  test::expect_invalid_input([&] { probe_data(path); }, {path, "fortran_order"});
}

TEST(DataNpy, RejectsBigEndianAndOtherDtypes) {
  TempDir dir;
  const std::string big = dir.file("big.npy");
  test::write_bytes(big,
                    make_npy(1, "{'descr': '>f4', 'fortran_order': False, 'shape': (2, 2), }", std::string(16, '\0')));
  test::expect_invalid_input([&] { read_data(big); }, {big, "big-endian", "'>f4'", "'<f4'"});
  const std::string half = dir.file("half.npy");
  test::write_bytes(half,
                    make_npy(1, "{'descr': '<f2', 'fortran_order': False, 'shape': (2, 2), }", std::string(8, '\0')));
  test::expect_invalid_input([&] { read_data(half); }, {half, "unsupported dtype '<f2'", "'<f4'", "'<f8'"});
  const std::string rec = dir.file("rec.npy");
  test::write_bytes(
      rec, make_npy(1, "{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (2,), }", std::string(8, '\0')));
  // The structured descr is quoted whole and alone, not with the header after it.
  test::expect_invalid_input([&] { read_data(rec); }, {rec, "unsupported dtype '[('a', '<f4')]'"});
  // An empty string is read as one: the dtype '' is what is refused, not the header.
  const std::string blank = dir.file("blank.npy");
  test::write_bytes(blank,
                    make_npy(1, "{'descr': '', 'fortran_order': False, 'shape': (2, 2), }", std::string(16, '\0')));
  test::expect_invalid_input([&] { read_data(blank); }, {blank, "unsupported dtype ''", "'<f8'"});
}

TEST(DataNpy, RejectsTruncatedFiles) {
  TempDir dir;
  const std::string data = dir.file("short_data.npy");
  test::write_bytes(
      data, make_npy(1, "{'descr': '<f8', 'fortran_order': False, 'shape': (4, 2), }", std::string(8 * 8 - 1, '\0')));
  test::expect_invalid_input([&] { read_data(data); }, {data, "truncated", "64 bytes", "63"});
  const std::string full = make_npy(1, "{'descr': '<f8', 'fortran_order': False, 'shape': (4, 2), }", "");
  const std::string header = dir.file("short_header.npy");
  test::write_bytes(header, full.substr(0, 40));
  test::expect_invalid_input([&] { probe_data(header); }, {header, "truncated .npy header"});
  const std::string stub = dir.file("stub.npy");
  test::write_bytes(stub, full.substr(0, 9));
  test::expect_invalid_input([&] { read_data(stub); }, {stub, "truncated"});
}

TEST(DataNpy, RejectsBadShapesEmptyFilesAndNpz) {
  TempDir dir;
  const std::string cube = dir.file("cube.npy");
  test::write_bytes(
      cube, make_npy(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2, 2), }", std::string(32, '\0')));
  test::expect_invalid_input([&] { read_data(cube); }, {cube, "3 dimensions", "(2, 2, 2)"});
  const std::string scalar = dir.file("scalar.npy");
  test::write_bytes(scalar,
                    make_npy(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (), }", std::string(4, '\0')));
  test::expect_invalid_input([&] { read_data(scalar); }, {scalar, "0 dimensions"});
  const std::string zero = dir.file("zero.npy");
  test::write_bytes(zero, make_npy(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (0, 3), }", ""));
  test::expect_invalid_input([&] { read_data(zero); }, {zero, "no data rows"});
  const std::string empty = dir.file("empty.npy");
  test::write_bytes(empty, "");
  test::expect_invalid_input([&] { read_data(empty); }, {empty, "no data rows"});
  const std::string npz = dir.file("arrays.npz");
  // A zip's local file header as np.savez writes it: the signature, then version 20 to extract.
  test::write_bytes(npz, std::string("PK\x03\x04\x14\x00", 6) + std::string(58, '\0'));
  test::expect_invalid_input([&] { read_data(npz); }, {npz, "is a .npz archive (zip)", "np.save"});
  // The signature alone (a zip cut after its first four bytes) is still named a zip.
  test::write_bytes(npz, std::string("PK\x03\x04", 4));
  test::expect_invalid_input([&] { read_data(npz); }, {npz, "is a .npz archive (zip)"});
  const std::string junk = dir.file("junk.npy");
  test::write_bytes(junk, "hello, world\n");
  test::expect_invalid_input([&] { read_data(junk); }, {junk, "not a .npy file"});
  // The magic and its major version, cut before the minor one: too short to be a .npy, however
  // it starts (and shorter still, the magic cut in half).
  test::write_bytes(junk, std::string("\x93NUMPY\x01", 7));
  test::expect_invalid_input([&] { read_data(junk); }, {junk, "not a .npy file", "file too short"});
  test::write_bytes(junk, std::string("\x93NUM", 4));
  test::expect_invalid_input([&] { read_data(junk); }, {junk, "not a .npy file", "file too short"});
}

// write_matrix refuses a null pointer that should hold values, naming the file and the shape, and
// writes nothing there; an empty matrix needs no values, so null is a valid pointer to none of them.
TEST(DataNpy, NullValuesAreRefusedOnlyWhenThereShouldBeSome) {
  TempDir dir;
  const std::string path = dir.file("null.npy");
  test::expect_invalid_input([&] { write_matrix(path, static_cast<const double*>(nullptr), 2, 3); },
                             {path, "null values for 2 x 3"});
  EXPECT_FALSE(std::filesystem::exists(path));
  for (const std::string name : {"none.npy", "none.csv"}) {
    const std::string empty = dir.file(name);
    write_matrix(empty, static_cast<const float*>(nullptr), 0, 3);
    EXPECT_TRUE(std::filesystem::exists(empty)) << empty;
  }
  // The header of an empty .npy says its shape: no rows of three columns.
  const std::string header = test::read_bytes(dir.file("none.npy"));
  EXPECT_NE(header.find("'shape': (0, 3)"), std::string::npos) << header;
}

// A header numpy would never write is refused naming the file, what is wrong and the header.
TEST(DataNpy, RejectsMalformedHeadersNamingWhatIsWrong) {
  TempDir dir;
  const std::string data(48, '\0');
  struct Case {
    const char* dict;
    std::vector<std::string> fragments;
  };
  const std::vector<Case> cases = {
      {"{'descr': '<f8', 'fortran_order': False, 'shape': (2, 3), 'extra': 1, }", {"unexpected key 'extra'"}},
      {"{'descr': '<f8', 'shape': (2, 3), }", {"lacks one of 'descr', 'fortran_order', 'shape'"}},
      {"{'descr': '<f8', 'fortran_order': false, 'shape': (2, 3), }", {"fortran_order is neither True nor False"}},
      {"{'descr': '<f8', 'fortran_order': False, 'shape': (2; 3), }", {"expected ',' or ')' in shape"}},
      {"{'descr': '<f8', 'fortran_order': False, 'shape': (2, x), }", {"shape entries must be integers"}},
      // 2^64 + 2 would wrap to 2 rows, which these 48 bytes hold: refused, not read as 2.
      {"{'descr': '<f8', 'fortran_order': False, 'shape': (18446744073709551618, 3), }",
       {"shape entry 18446744073709551618 is larger than 18446744073709551615"}},
      {"{'descr': '<f8', 'fortran_order': False, 'shape': [2, 3], }", {"expected '(' at byte"}},
      {"{descr: '<f8'}", {"expected a quoted string at byte 1"}},
      {"{'descr' '<f8'}", {"expected ':' at byte 9"}},
      {"{'descr': '<f8', 'fortran_order': False, 'shape': (2, 3)", {"expected a quoted string"}},
  };
  for (std::size_t i = 0; i < cases.size(); ++i) {
    SCOPED_TRACE(cases[i].dict);
    const std::string path = dir.file("bad" + std::to_string(i) + ".npy");
    test::write_bytes(path, make_npy(1, cases[i].dict, data));
    std::vector<std::string> fragments = cases[i].fragments;
    fragments.insert(fragments.end(), {path, "malformed .npy header", cases[i].dict});
    test::expect_invalid_input([&] { read_data(path); }, fragments);
  }
  // Python 2's long suffix in a shape is read (old numpy wrote it).
  const std::vector<double> v = {1, 2, 3, 4, 5, 6};
  const std::string old = dir.file("python2.npy");
  test::write_bytes(
      old, make_npy(1, "{'descr': '<f8', 'fortran_order': False, 'shape': (3L, 2L), }", test::bytes_of(v.data(), 6)));
  const Dataset d = read_data(old);
  EXPECT_EQ(d.rows(), 3u);
  EXPECT_EQ(d.at(2, 1), 6.0);
  // Versions 1 to 3 exist; a fourth is named with what is accepted.
  const std::string v4 = dir.file("v4.npy");
  test::write_bytes(
      v4, make_npy(4, "{'descr': '<f8', 'fortran_order': False, 'shape': (3, 2), }", test::bytes_of(v.data(), 6)));
  test::expect_invalid_input([&] { read_data(v4); }, {v4, "unsupported .npy format version 4.0", "1.0, 2.0, 3.0"});
  // …and there never was a version 0, even with a header that would otherwise read.
  const std::string v0 = dir.file("v0.npy");
  test::write_bytes(
      v0, make_npy(0, "{'descr': '<f8', 'fortran_order': False, 'shape': (3, 2), }", test::bytes_of(v.data(), 6)));
  test::expect_invalid_input([&] { read_data(v0); }, {v0, "unsupported .npy format version 0.0", "1.0, 2.0, 3.0"});
}

// Without a known extension the magic bytes decide: .npy content is read, anything else is
// refused with the extensions that would be accepted.
TEST(DataNpy, UnknownExtensionsAreSniffedOrRefused) {
  TempDir dir;
  const std::vector<double> v = {1, 2, 3, 4};
  const std::string sniffed = dir.file("matrix.dat");
  test::write_bytes(
      sniffed, make_npy(1, "{'descr': '<f8', 'fortran_order': False, 'shape': (2, 2), }", test::bytes_of(v.data(), 4)));
  EXPECT_EQ(read_data(sniffed).at(1, 1), 4.0);
  const std::string text = dir.file("matrix.data");
  test::write_bytes(text, "1,2\n3,4\n");
  for (auto reader : {+[](const std::string& p) { read_data(p); }, +[](const std::string& p) { probe_data(p); }})
    test::expect_invalid_input([&] { reader(text); }, {text, "cannot tell the data format", ".npy", ".csv/.tsv/.txt"});
}

TEST(DataNpy, MissingFileAndDirectory) {
  TempDir dir;
  const std::string missing = dir.file("missing.npy");
  test::expect_invalid_input([&] { read_data(missing); }, {missing, "cannot open"});
  // A directory opens (O_RDONLY) before it is refused: the refusal closes what it opened.
  const auto open_files = [] {
    return std::distance(std::filesystem::directory_iterator("/proc/self/fd"), std::filesystem::directory_iterator{});
  };
  const auto before = open_files();
  for (int i = 0; i < 3; ++i)
    test::expect_invalid_input([&] { read_data(dir.path().string()); }, {dir.path().string(), "directory"});
  EXPECT_EQ(open_files(), before);
}

}  // namespace
}  // namespace mixle
