// `--missing marginalise` on two ranks under `mixle launch` (real processes on 127.0.0.1):
// incomplete rows in both ranks' halves give the one-process model (which
// tests/engine/marginalise_test.cpp ties to its oracles) and one note naming every rank's rows.
#include "common/require.hpp"
#include "host/fit_process_util.hpp"

#include <mixle/data.hpp>
#include <mixle/fit.hpp>
#include <mixle/model.hpp>

#include <gtest/gtest.h>

#include <limits>

namespace mixle::test {
namespace {

using namespace std::chrono_literals;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Two ranks under `mixle launch`, incomplete rows in both halves: the model of the library's
// one-process fit (mixle::fit, which tests/engine/marginalise_test.cpp ties to its oracles — a
// one-process `mixle fit` runs the distributed path too, so it cannot be the reference) and one
// note naming every rank's rows in file order.
TEST(Marginalise, TwoRanksFoldTheirOwnIncompleteRowsAndAgreeWithOneProcess) {
  MIXLE_SKIP_UNLESS_BUILT_WITH(MIXLE_HAVE_GLOO, "gloo");
  TempDir dir;
  const Dataset all = read_data(make_mixed_records(dir, 4000).string());
  std::vector<double> holed = all.values();
  for (const std::size_t r : {5, 1999, 2000, 3998}) holed[r * 5 + r % 5] = kNaN;
  write_matrix((dir.path / "holed.npy").string(), holed.data(), 4000, 5);
  auto args = [&](const std::string& out) {
    return std::vector<std::string>{MIXLE_CLI_PATH,
                                    "fit",
                                    "--data",
                                    (dir.path / "holed.npy").string(),
                                    "-k",
                                    "3",
                                    "--layout",
                                    "gaussian_diag:0-3,categorical:3-4,poisson:4-5",
                                    "--seed",
                                    "4",
                                    "--precision",
                                    "fp64",
                                    "--max-iter",
                                    "20",
                                    "--tol",
                                    "0",
                                    "--threads",
                                    "1",
                                    "--missing",
                                    "marginalise",
                                    "--quiet",
                                    "--out",
                                    (dir.path / out).string()};
  };
  FitOptions o;
  o.components = 3;
  o.layout = "gaussian_diag:0-3,categorical:3-4,poisson:4-5";
  o.seed = 4;
  o.precision = "fp64";
  o.max_iter = 20;
  o.tol = 0.0;
  o.threads = 1;
  o.missing = "marginalise";
  const FitResult library = fit(read_data((dir.path / "holed.npy").string()), o);
  ASSERT_EQ(library.marginalised_rows, 4u);
  save_model(library.model, (dir.path / "library.json").string());
  Process one = run_process(args("one.json"), {}, dir.path / "one.log", 120s);
  ASSERT_EQ(one.exit_code(), 0) << one.output();
  EXPECT_LT(max_relative_difference(dir.path / "library.json", dir.path / "one.json"), 1e-9);
  std::vector<std::string> argv{MIXLE_CLI_PATH, "launch", "--nproc", "2", "--"};
  for (const auto& a : args("two.json")) argv.push_back(a);
  Process two = run_process(argv, {}, dir.path / "two.log", 180s);
  ASSERT_EQ(two.exit_code(), 0) << two.output();
  EXPECT_LT(max_relative_difference(dir.path / "library.json", dir.path / "two.json"), 1e-9);
  EXPECT_NE(two.output().find("4 row(s) have a missing value (NaN) in a modelled column (rows 5, 1999, 2000, 3998, "
                              "counted from 0); their missing values were left out (marginalised)"),
            std::string::npos)
      << two.output();
}

}  // namespace
}  // namespace mixle::test
