// Interoperability with real numpy output (skipped, visibly, when no Python with numpy was found;
// a failure instead under MIXLE_REQUIRE_TOOLS=1, as in scripts/test).
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "common/require.hpp"
#include "data_test_util.hpp"

namespace mixle {
namespace {

using test::TempDir;

// Writes files with numpy into argv[1], and checks mixle's own .npy output in argv[1]/ours.npy.
// Values follow a[i, j] = 0.5 * i - 0.25 * j, exact in float32 and float64.
constexpr const char* kScript = R"PY(
import sys, numpy as np
d = sys.argv[1]
a = (0.5 * np.arange(5)[:, None] - 0.25 * np.arange(3)[None, :])
np.save(d + '/c32.npy', a.astype(np.float32))
np.save(d + '/v1d.npy', a[:, 0].copy())
np.save(d + '/fortran.npy', np.asfortranarray(a))
np.save(d + '/big.npy', a.astype('>f4'))
np.savetxt(d + '/t.csv', a, delimiter=',', header='a,b,c')
a.astype('<f8').tofile(d + '/t.bin')
if len(sys.argv) > 2:
    m = np.load(d + '/ours.npy')
    assert m.dtype == np.float64 and m.shape == (5, 3), (m.dtype, m.shape)
    assert (m == a).all()
)PY";

double expected(std::size_t i, std::size_t j) { return 0.5 * double(i) - 0.25 * double(j); }

TEST(DataNumpy, ReadsAndWritesRealNumpyFiles) {
  // The interpreter CMake found with numpy (tests/CMakeLists.txt).
  const std::string python = MIXLE_TEST_PYTHON;
  if (python.empty()) {
    if (test::tools_required())
      FAIL() << "no Python with numpy was found at configure time, and MIXLE_REQUIRE_TOOLS=1 "
                "(Debian: apt-get install python3-numpy, then configure again)";
    GTEST_SKIP() << "no Python with numpy was found at configure time (Debian: apt-get install python3-numpy)";
  }
  TempDir dir;
  test::write_bytes(dir.file("make.py"), kScript);
  const std::string run = python + " " + dir.file("make.py") + " " + dir.path().string();
  ASSERT_EQ(std::system(run.c_str()), 0) << run;

  Dataset d = read_data(dir.file("c32.npy"));
  ASSERT_EQ(d.dtype(), DType::f32);
  ASSERT_EQ(d.rows(), 5u);
  ASSERT_EQ(d.cols(), 3u);
  for (std::size_t i = 0; i < 5; ++i) {
    for (std::size_t j = 0; j < 3; ++j) EXPECT_EQ(d.at(i, j), expected(i, j));
  }
  d = read_data(dir.file("v1d.npy"));
  ASSERT_EQ(d.cols(), 1u);
  EXPECT_EQ(d.at(4, 0), 2.0);
  d = read_data(dir.file("t.csv"));  // '# a,b,c' header is a comment line
  ASSERT_EQ(d.rows(), 5u);
  EXPECT_EQ(d.at(3, 2), expected(3, 2));
  ReadOptions raw;
  raw.raw_cols = 3;
  raw.raw_dtype = DType::f64;
  raw.row_begin = 2;
  d = read_data(dir.file("t.bin"), raw);
  ASSERT_EQ(d.rows(), 3u);
  EXPECT_EQ(d.at(0, 1), expected(2, 1));
  test::expect_invalid_input([&] { read_data(dir.file("fortran.npy")); }, {"fortran_order True"});
  test::expect_invalid_input([&] { read_data(dir.file("big.npy")); }, {"big-endian"});

  std::vector<double> ours(15);
  for (std::size_t i = 0; i < 15; ++i) ours[i] = expected(i / 3, i % 3);
  write_matrix(dir.file("ours.npy"), ours.data(), 5, 3);
  ASSERT_EQ(std::system((run + " check").c_str()), 0) << "numpy rejected mixle's .npy";
}

}  // namespace
}  // namespace mixle
