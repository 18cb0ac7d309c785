// Bad input through every C++ entry point: each case is one bad file (data, weights or initial
// model) or option, run through the command line (`mixle fit`: exit status 1, the message on
// stderr, no model written) and through the library (read_data / load_model, then fit: a typed
// mixle error carrying the same message). The Python package runs the array-level cases of this
// list in python/tests/test_bad_input.py; docs/testing.md lists them all.
#include "common/bad_files.hpp"
#include "common/run_cli.hpp"

#include <mixle/data.hpp>
#include <mixle/error.hpp>
#include <mixle/fit.hpp>
#include <mixle/model.hpp>

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <limits>

namespace mixle::test {
namespace {

constexpr std::size_t kRows = 40, kCols = 4;
const std::string kLayout = "gaussian_diag:0-2,categorical:2-3:3,poisson:3-4";

/// Well-formed rows for kLayout: two normal columns, a code in {0, 1, 2}, a count.
std::vector<double> good_rows() {
  std::vector<double> v(kRows * kCols);
  for (std::size_t r = 0; r < kRows; ++r) {
    v[r * kCols + 0] = std::sin(static_cast<double>(r));
    v[r * kCols + 1] = std::cos(static_cast<double>(r)) * 2.0;
    v[r * kCols + 2] = static_cast<double>(r % 3);
    v[r * kCols + 3] = static_cast<double>(r % 5);
  }
  return v;
}

/// good_rows() with `value` at (row, column).
std::vector<double> with_value(std::size_t row, std::size_t column, double value) {
  std::vector<double> v = good_rows();
  v[row * kCols + column] = value;
  return v;
}

std::string csv_of(const std::vector<double>& v) {
  std::string text;
  for (std::size_t r = 0; r < kRows; ++r)
    for (std::size_t c = 0; c < kCols; ++c) text += std::to_string(v[r * kCols + c]) + (c + 1 < kCols ? "," : "\n");
  return text;
}

struct Case {
  std::string name;
  std::string data_file, data_bytes;           // written into the test folder
  std::string extra_file, extra_bytes, extra;  // a second file and the options that name it
  std::string options;                         // further options ("" = -k 2 --layout kLayout)
  std::string message;                         // what both entry points must say
};

std::vector<Case> cases() {
  const auto npy = [](const std::vector<double>& v) { return npy_bytes(v, kRows, kCols); };
  const std::string good = npy(good_rows());
  // Line 3 (row 2) with a word in its second field; with three fields instead of four.
  std::string text_cell = csv_of(with_value(2, 1, 12345.5));
  text_cell.replace(text_cell.find("12345.500000"), 12, "x");
  std::string ragged = csv_of(with_value(2, 3, 12345.5));
  ragged.erase(ragged.find(",12345.500000"), 13);
  const std::string model = R"({"format":"mixle-model","version":1,"weights":[0.5,0.5],"parts":[
    {"family":"gaussian_diag","columns":[0,2],"mean":[[0,0],[1,1]],"var":[[1,1],[1,VAR]]},
    {"family":"categorical","columns":[2,3],"categories":3,"prob":[[0.4,0.3,0.3],[0.3,0.3,0.4]]},
    {"family":"poisson","columns":[3,4],"rate":[[1],[4]]}]})";
  auto model_with = [&](const std::string& var) {
    std::string m = model;
    m.replace(m.find("VAR"), 3, var);
    return m;
  };
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  std::vector<double> w(kRows, 1.0);
  w[11] = -1.0;
  const std::string bad_weights = npy_bytes(w, kRows, 1);
  w[11] = nan;
  const std::string nan_weights = npy_bytes(w, kRows, 1);
  return {
      {"nan value", "d.npy", npy(with_value(5, 1, nan)), "", "", "", "", "d.npy: row 5, column 1: value nan"},
      {"infinite value", "d.npy", npy(with_value(6, 0, inf)), "", "", "", "", "d.npy: row 6, column 0: value inf"},
      {"fractional code", "d.npy", npy(with_value(7, 2, 2.5)), "", "", "", "",
       "d.npy: row 7, column 2: value 2.5 is not valid for categorical"},
      {"negative code", "d.npy", npy(with_value(8, 2, -1)), "", "", "", "",
       "d.npy: row 8, column 2: value -1 is not valid for categorical"},
      {"code past the categories", "d.npy", npy(with_value(9, 2, 3)), "", "", "", "",
       "d.npy: row 9, column 2: value 3 is not valid for categorical"},
      {"negative count", "d.npy", npy(with_value(10, 3, -2)), "", "", "", "",
       "d.npy: row 10, column 3: value -2 is not valid for poisson"},
      {"big-endian .npy", "d.npy", npy_bytes(good_rows(), kRows, kCols, ">f8"), "", "", "", "",
       "d.npy: big-endian dtype '>f8' is not supported"},
      {"complex .npy", "d.npy", npy_bytes(good_rows(), kRows, kCols / 2, "<c16"), "", "", "", "",
       "d.npy: unsupported dtype '<c16'"},
      {"Fortran-order .npy", "d.npy", npy_bytes(good_rows(), kRows, kCols, "<f8", true), "", "", "", "",
       "d.npy: fortran_order True"},
      {"truncated .npy", "d.npy", npy_bytes(good_rows(), kRows, kCols, "<f8", false, 20), "", "", "", "",
       "d.npy: truncated .npy file"},
      {"not a .npy file", "d.npy", "hello, world\n", "", "", "", "", "d.npy is not a .npy file"},
      {"text in a CSV cell", "d.csv", text_cell, "", "", "", "", "d.csv:3: column 2:"},
      {"ragged CSV row", "d.csv", ragged, "", "", "", "", "d.csv:3: row has 3 fields"},
      {"empty CSV", "d.csv", "", "", "", "", "", "d.csv: no data rows"},
      {"negative weight", "d.npy", good, "w.npy", bad_weights, "--weights", "",
       "w.npy: row 11 (counted from 0, as data rows are) has weight -1"},
      {"NaN weight", "d.npy", good, "w.npy", nan_weights, "--weights", "",
       "row 11 (counted from 0, as data rows are) has weight nan"},
      {"weights of another length", "d.npy", good, "w.npy", npy_bytes(std::vector<double>(7, 1.0), 7, 1), "--weights",
       "", "w.npy: 7 × 1 values for the 40 rows of"},
      {"negative variance in the initial model", "d.npy", good, "m.json", model_with("-2"), "--init", "-k 2",
       "m.json: parts[0] (gaussian_diag): var[1][1] = -2 is invalid: must be finite and > 0"},
      {"initial model that is not JSON", "d.npy", good, "m.json", "{\"format\": ", "--init", "-k 2",
       "m.json: not valid JSON:"},
      {"unknown family in the layout", "d.npy", good, "", "", "", "-k 2 --layout gaussian:0-4",
       "unknown family \"gaussian\""},
      {"layout past the data's columns", "d.npy", good, "", "", "", "-k 2 --layout gaussian_diag:0-6",
       "layout item \"gaussian_diag:0-6\": column 5 is past the data's 4 columns"},
      {"more components than rows", "d.npy", good, "", "", "", "-k 41 --layout " + kLayout,
       "components = 41 exceeds the 40 data rows"},
  };
}

/// The case through the library: read the files as the CLI does, fit; the error's text.
std::string library_error(const TempDir& dir, const Case& c) {
  try {
    ReadOptions read;
    if (c.extra == "--weights") read.weights_path = dir.file(c.extra_file);
    const Dataset data = read_data(dir.file(c.data_file), read);
    FitOptions o;
    o.components = 2;
    o.layout = kLayout;
    if (c.extra == "--init") {
      o.init = InitMethod::model;
      o.init_model = load_model(dir.file(c.extra_file));
    }
    const auto layout = c.options.find("--layout ");
    if (layout != std::string::npos) o.layout = c.options.substr(layout + 9);
    if (c.options.rfind("-k 41", 0) == 0) o.components = 41;
    fit(data, o);
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(BadInputMatrix, EveryCaseIsATypedErrorNamingItsPlaceInTheCliAndTheLibrary) {
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.name);
    TempDir dir("bad-input");
    write_bytes(dir.file(c.data_file), c.data_bytes);
    std::string args = "fit --data " + dir.file(c.data_file) + " --out " + dir.file("out.json") + " -q " +
                       (c.options.empty() ? "-k 2 --layout " + kLayout : c.options);
    if (!c.extra_file.empty()) {
      write_bytes(dir.file(c.extra_file), c.extra_bytes);
      args += " " + c.extra + " " + dir.file(c.extra_file);
    }
    const CliRun cli = run_cli(dir, args);
    EXPECT_EQ(cli.code, 1) << cli.err;
    EXPECT_NE(cli.err.find(c.message), std::string::npos) << cli.err;
    EXPECT_EQ(cli.err.find("Aborted"), std::string::npos) << cli.err;
    EXPECT_FALSE(std::filesystem::exists(dir.file("out.json")));
    const std::string api = library_error(dir, c);
    EXPECT_NE(api.find(c.message), std::string::npos) << api;
  }
}

}  // namespace
}  // namespace mixle::test
