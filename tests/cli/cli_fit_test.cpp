// The CLI's fit/score/generate contract: bad input exits 1 with a message naming the problem
// and writes no output; usage errors exit 2; same seed ⇒ byte-identical model files; and a
// generate → fit → score round trip.
#include "common/run_cli.hpp"

#include <mixle/data.hpp>
#include <mixle/distributed.hpp>
#include <mixle/fit.hpp>
#include <mixle/model.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <regex>
#include <string>
#include <utility>
#include <vector>
#include <sstream>

namespace mixle {
namespace {

using test::TempDir;

using test::CliRun;

/// test::run_cli with stderr lower-cased, so a message matches whatever its capitals.
CliRun run_lowered(const TempDir& dir, const std::string& args) {
  CliRun r = test::run_cli(dir, args);
  std::transform(r.err.begin(), r.err.end(), r.err.begin(), [](unsigned char c) { return std::tolower(c); });
  return r;
}

/// Runs `mixle fit <args> --out OUT` and expects exit 1, every word in the message and no OUT.
void expect_fit_error(const TempDir& dir, const std::string& args, const std::vector<std::string>& words) {
  const std::string out = dir.file("out.json");
  std::filesystem::remove(out);
  const CliRun r = run_lowered(dir, "fit " + args + " --out " + out);
  EXPECT_EQ(r.code, 1) << args << "\n" << r.err;
  for (const auto& w : words)
    EXPECT_NE(r.err.find(w), std::string::npos) << args << ": \"" << r.err << "\" lacks " << w;
  EXPECT_FALSE(std::filesystem::exists(out)) << args << ": wrote " << out;
  // No stray temporary files either.
  for (const auto& e : std::filesystem::directory_iterator(dir.path()))
    EXPECT_EQ(e.path().filename().string().find("out.json"), std::string::npos) << e.path();
}

TEST(CliBadInput, NpyFiles) {
  TempDir dir("cli-npy");
  const auto good = test::gaussian_values(10);
  test::write_bytes(dir.file("trunc.npy"), test::npy_bytes(good, 10, 2, "<f8", false, 12));
  test::write_bytes(dir.file("be.npy"), test::npy_bytes(good, 10, 2, ">f8"));
  test::write_bytes(dir.file("fortran.npy"), test::npy_bytes(good, 10, 2, "<f8", true));
  test::write_bytes(dir.file("header.npy"), test::npy_bytes(good, 10, 2).substr(0, 40));
  expect_fit_error(dir, "--data " + dir.file("trunc.npy") + " -k 2", {"trunc.npy"});
  expect_fit_error(dir, "--data " + dir.file("header.npy") + " -k 2", {"header.npy"});
  expect_fit_error(dir, "--data " + dir.file("be.npy") + " -k 2", {"be.npy", "endian"});
  expect_fit_error(dir, "--data " + dir.file("fortran.npy") + " -k 2", {"fortran"});
}

TEST(CliBadInput, CsvNonNumber) {
  TempDir dir("cli-csv");
  test::write_bytes(dir.file("bad.csv"), "x,y\n1,2\n3,4\n5,abc\n");
  expect_fit_error(dir, "--data " + dir.file("bad.csv") + " -k 2", {"bad.csv:4", "column 2", "abc"});
}

TEST(CliBadInput, ValuesBreakingFamilyRules) {
  TempDir dir("cli-values");
  test::write_bytes(dir.file("nan.csv"), "1,2\n3,nan\n5,6\n7,8\n");
  expect_fit_error(dir, "--data " + dir.file("nan.csv") + " -k 2", {"nan.csv", "column 1", "nan"});
  expect_fit_error(dir, "--data " + dir.file("nan.csv") + " -k 2 --family gaussian_full", {"column 1"});
  test::write_bytes(dir.file("code.csv"), "0\n1\n2.5\n1\n");
  expect_fit_error(dir, "--data " + dir.file("code.csv") + " -k 2 --family categorical", {"2.5", "categorical"});
  test::write_bytes(dir.file("big.csv"), "0\n1\n3\n1\n");
  expect_fit_error(dir, "--data " + dir.file("big.csv") + " -k 2 --layout categorical:0-1:3", {"row 2", "categorical"});
  test::write_bytes(dir.file("neg.csv"), "0\n1\n-2\n1\n");
  expect_fit_error(dir, "--data " + dir.file("neg.csv") + " -k 2 --family poisson", {"-2", "poisson"});
}

TEST(CliBadInput, InitModelFiles) {
  TempDir dir("cli-model");
  const auto good = test::gaussian_values(20);
  test::write_bytes(dir.file("data.npy"), test::npy_bytes(good, 20, 2));
  test::write_bytes(dir.file("weights.json"), test::diag_model_json("[0.5, 0.6]"));
  test::write_bytes(dir.file("cov.json"), test::full_model_json("[[1, 2], [2, 1]]"));
  expect_fit_error(dir, "--data " + dir.file("data.npy") + " --init " + dir.file("weights.json"),
                   {"weights.json", "weights", "sum"});
  expect_fit_error(dir, "--data " + dir.file("data.npy") + " --init " + dir.file("cov.json"),
                   {"cov.json", "positive definite"});
  // A good model file fits (so the failures above are the files' fault).
  test::write_bytes(dir.file("good.json"), test::diag_model_json());
  const CliRun ok = run_lowered(dir, "fit --data " + dir.file("data.npy") + " --init " + dir.file("good.json") +
                                         " --out " + dir.file("fitted.json"));
  EXPECT_EQ(ok.code, 0) << ok.err;
  EXPECT_TRUE(std::filesystem::exists(dir.file("fitted.json")));
}

TEST(CliBadInput, ComponentCounts) {
  TempDir dir("cli-k");
  test::write_bytes(dir.file("data.npy"), test::npy_bytes(test::gaussian_values(5), 5, 2));
  expect_fit_error(dir, "--data " + dir.file("data.npy") + " -k 6", {"6", "rows"});
  // K below 1 is a bad option value (exit 2: CliOptionChecks), not a fault of the data.
}

TEST(CliBadInput, UsageErrorsExit2) {
  TempDir dir("cli-usage");
  test::write_bytes(dir.file("data.npy"), test::npy_bytes(test::gaussian_values(5), 5, 2));
  EXPECT_EQ(run_lowered(dir, "fit -k 2 --out " + dir.file("o.json")).code, 2);  // missing --data
  EXPECT_EQ(run_lowered(dir, "fit --data " + dir.file("data.npy") + " --out " + dir.file("o.json")).code, 2);  // no K
  EXPECT_EQ(run_lowered(dir, "fit --data " + dir.file("data.npy") + " -k two").code, 2);
  EXPECT_EQ(run_lowered(dir, "score --data " + dir.file("data.npy")).code, 2);  // missing --model/--out
  EXPECT_FALSE(std::filesystem::exists(dir.file("o.json")));
}

const char* kTruthJson = R"({"format": "mixle-model", "version": 1, "weights": [0.3, 0.3, 0.4],
  "parts": [{"family": "gaussian_diag", "columns": [0, 2],
             "mean": [[0, 0], [8, 0], [0, 8]], "var": [[1, 1], [1, 2], [2, 1]]},
            {"family": "poisson", "columns": [2, 3], "rate": [[1], [5], [12]]}]})";

TEST(CliDeterminism, FitOutFilesByteIdentical) {
  TempDir dir("cli-det");
  test::write_bytes(dir.file("truth.json"), kTruthJson);
  ASSERT_EQ(
      run_lowered(dir, "generate -m " + dir.file("truth.json") + " -n 21000 --seed 3 -o " + dir.file("data.npy")).code,
      0);
  const std::string fit = "fit --data " + dir.file("data.npy") +
                          " --layout gaussian_diag:0-2,poisson:2-3 -k 3 --seed 9 --max-iter 10 --tol 0 -q";
  ASSERT_EQ(run_lowered(dir, fit + " --threads 2 --out " + dir.file("a.json")).code, 0);
  ASSERT_EQ(run_lowered(dir, fit + " --threads 2 --out " + dir.file("b.json")).code, 0);
  ASSERT_EQ(run_lowered(dir, fit + " --threads 1 --out " + dir.file("c.json")).code, 0);
  const std::string a = test::read_text(dir.file("a.json"));
  ASSERT_FALSE(a.empty());
  EXPECT_EQ(a, test::read_text(dir.file("b.json")));
  EXPECT_EQ(a, test::read_text(dir.file("c.json")));
}

// The summary shows at most four leading values of a part (then " …"): five means show four
// and the ellipsis, four show all four and none.
TEST(CliRoundTrip, SummaryShowsFourLeadingValues) {
  TempDir dir("cli-summary");
  test::write_bytes(dir.file("truth.json"), R"({"format":"mixle-model","version":1,"weights":[1],"parts":[
    {"family":"gaussian_diag","columns":[0,5],"mean":[[1,2,3,4,5]],"var":[[1,1,1,1,1]]}]})");
  ASSERT_EQ(
      run_lowered(dir, "generate -m " + dir.file("truth.json") + " -n 200 --seed 1 -o " + dir.file("data.npy")).code,
      0);
  for (const int D : {5, 4}) {
    const std::string out = dir.file("m" + std::to_string(D) + ".json");
    const CliRun f = run_lowered(dir, "fit --data " + dir.file("data.npy") + " --layout gaussian_diag:0-" +
                                          std::to_string(D) + " -k 1 --seed 2 --out " + out);
    ASSERT_EQ(f.code, 0) << f.err;
    const Model m = load_model(out);
    char shown[160];
    std::snprintf(shown, sizeof shown, "gaussian_diag[%.4g %.4g %.4g %.4g%s]\n", m.parts[0].mean[0], m.parts[0].mean[1],
                  m.parts[0].mean[2], m.parts[0].mean[3], D > 4 ? " …" : "");
    EXPECT_NE(f.out.find(shown), std::string::npos) << "no \"" << shown << "\" in\n" << f.out;
  }
}

TEST(CliRoundTrip, GenerateFitScore) {
  TempDir dir("cli-roundtrip");
  test::write_bytes(dir.file("truth.json"), kTruthJson);
  const std::size_t N = 3000, K = 3;
  ASSERT_EQ(run_lowered(dir, "generate -m " + dir.file("truth.json") + " -n 3000 --seed 1 -o " + dir.file("data.npy") +
                                 " --labels " + dir.file("labels.csv"))
                .code,
            0);
  const Dataset data = read_data(dir.file("data.npy"));
  ASSERT_EQ(data.rows(), N);
  ASSERT_EQ(data.cols(), 3u);
  const CliRun f =
      run_lowered(dir, "fit --data " + dir.file("data.npy") +
                           " --layout gaussian_diag:0-2,poisson:2-3 -k 3 --seed 2 --out " + dir.file("model.json"));
  ASSERT_EQ(f.code, 0) << f.err;
  const Model model = load_model(dir.file("model.json"));
  EXPECT_EQ(model.components(), K);
  // The summary shows every component: its weight, then each part's leading parameters.
  for (std::size_t k = 0; k < K; ++k) {
    char line[256];
    std::snprintf(line, sizeof line, "  component %zu  weight %.4f  gaussian_diag[%.4g %.4g]  poisson[%.4g]\n", k,
                  model.weights[k], model.parts[0].mean[k * 2], model.parts[0].mean[k * 2 + 1], model.parts[1].rate[k]);
    EXPECT_NE(f.out.find(line), std::string::npos) << "no \"" << line << "\" in\n" << f.out;
  }

  ASSERT_EQ(run_lowered(dir, "score --data " + dir.file("data.npy") + " -m " + dir.file("model.json") + " -o " +
                                 dir.file("ll.npy"))
                .code,
            0);
  const Dataset ll = read_data(dir.file("ll.npy"));
  EXPECT_EQ(ll.rows(), N);
  EXPECT_EQ(ll.cols(), 1u);
  for (std::size_t r = 0; r < N; ++r) EXPECT_TRUE(std::isfinite(ll.at(r, 0)) && ll.at(r, 0) < 0.0);

  ASSERT_EQ(run_lowered(dir, "score --data " + dir.file("data.npy") + " -m " + dir.file("model.json") +
                                 " --what resp -o " + dir.file("resp.npy"))
                .code,
            0);
  const Dataset resp = read_data(dir.file("resp.npy"));
  EXPECT_EQ(resp.rows(), N);
  EXPECT_EQ(resp.cols(), K);
  constexpr double kSumTol = 1e-12;  // fp64 normalisation of 3 terms
  for (std::size_t r = 0; r < N; ++r) EXPECT_NEAR(resp.at(r, 0) + resp.at(r, 1) + resp.at(r, 2), 1.0, kSumTol);

  ASSERT_EQ(run_lowered(dir, "score --data " + dir.file("data.npy") + " -m " + dir.file("model.json") +
                                 " --what labels -o " + dir.file("pred.csv"))
                .code,
            0);
  const std::string text = test::read_text(dir.file("pred.csv"));
  const auto lines = static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n'));
  EXPECT_TRUE(lines == N || lines == N + 1) << lines;  // with or without a header line
  // Well separated: predicted labels agree with the generating labels up to a permutation.
  const Dataset pred = read_data(dir.file("pred.csv"));
  const Dataset truth = read_data(dir.file("labels.csv"));
  ASSERT_EQ(pred.rows(), N);
  ASSERT_EQ(truth.rows(), N);
  std::vector<std::size_t> confusion(K * K, 0);
  for (std::size_t r = 0; r < N; ++r) {
    const double t = truth.at(r, 0), p = pred.at(r, 0);
    ASSERT_TRUE(t >= 0 && t < K && p >= 0 && p < K) << "row " << r;
    ++confusion[static_cast<std::size_t>(t) * K + static_cast<std::size_t>(p)];
  }
  std::vector<std::size_t> perm = {0, 1, 2};
  std::size_t best = 0;
  do {
    std::size_t agree = 0;
    for (std::size_t k = 0; k < K; ++k) agree += confusion[k * K + perm[k]];
    best = std::max(best, agree);
  } while (std::next_permutation(perm.begin(), perm.end()));
  // Means 8 apart with standard deviations ≤ √2, plus distinct Poisson rates: the Bayes error
  // is well under 0.5%; allow 2% of rows.
  constexpr double kMinAgreement = 0.98;
  EXPECT_GE(static_cast<double>(best) / static_cast<double>(N), kMinAgreement);
}

// --init-means / --init-weights / --init-precisions (CSV or .npy) replace what k-means++ draws:
// means given in either order give that labelling; a wrong count is a clear error writing nothing.
TEST(CliInitialParameters, GivenMeansOrderTheComponents) {
  TempDir dir("cli-init-means");
  test::write_bytes(dir.file("truth.json"), R"({"format": "mixle-model", "version": 1, "weights": [0.5, 0.5],
    "parts": [{"family": "gaussian_full", "columns": [0, 2], "mean": [[0, 0], [8, 0]],
               "cov": [[[1, 0], [0, 1]], [[1, 0.5], [0.5, 1]]]}]})");
  ASSERT_EQ(
      run_lowered(dir, "generate -m " + dir.file("truth.json") + " -n 2000 --seed 1 -o " + dir.file("d.npy")).code, 0);
  test::write_bytes(dir.file("means.csv"), "8,0\n0,0\n");
  test::write_bytes(dir.file("weights.csv"), "0.5\n0.5\n");
  test::write_bytes(dir.file("precisions.csv"), "1,0\n0,1\n2,0\n0,2\n");  // (K·D)×D
  const std::string base = "fit --data " + dir.file("d.npy") + " -k 2 --family gaussian_full --precision fp64 -q";
  const CliRun r =
      run_lowered(dir, base + " --init-means " + dir.file("means.csv") + " --init-weights " + dir.file("weights.csv") +
                           " --init-precisions " + dir.file("precisions.csv") + " --out " + dir.file("m.json"));
  ASSERT_EQ(r.code, 0) << r.err;
  const Model m = load_model(dir.file("m.json"));
  EXPECT_NEAR(m.parts[0].mean[0], 8.0, 0.2) << "component 0 started at the first given mean";
  EXPECT_NEAR(m.parts[0].mean[2], 0.0, 0.2);
  test::write_bytes(dir.file("three.csv"), "1,2,3\n");
  expect_fit_error(dir, "--data " + dir.file("d.npy") + " -k 2 -q --init-means " + dir.file("three.csv"),
                   {"initial means", "3 values", "k×d = 4"});
  const CliRun range =
      run_lowered(dir, base.substr(0, base.find(" -k")) + " -k 1:3 --init-means " + dir.file("means.csv"));
  EXPECT_EQ(range.code, 2) << range.err;
  EXPECT_NE(range.err.find("not with -k a:b"), std::string::npos) << range.err;
}

// --empty reseed restarts a component that captures no rows and says so on stderr; keep (the
// default) leaves it at weight 0; anything else is a usage error naming the choices.
TEST(CliEmptyComponents, ReseedRestartsAComponentThatKeepLeavesAtWeightZero) {
  TempDir dir("cli-empty");
  test::write_bytes(dir.file("truth.json"), R"({"format": "mixle-model", "version": 1, "weights": [0.3, 0.3, 0.4],
    "parts": [{"family": "gaussian_diag", "columns": [0, 2], "mean": [[0, 0], [8, 0], [-40, 5]],
               "var": [[1, 1], [1, 1], [1, 1]]}]})");
  test::write_bytes(dir.file("start.json"), R"({"format": "mixle-model", "version": 1, "weights": [0.5, 0.5, 0],
    "parts": [{"family": "gaussian_diag", "columns": [0, 2], "mean": [[0, 0], [8, 0], [1000, 1000]],
               "var": [[1, 1], [1, 1], [1, 1]]}]})");
  ASSERT_EQ(
      run_lowered(dir, "generate -m " + dir.file("truth.json") + " -n 3000 --seed 2 -o " + dir.file("d.npy")).code, 0);
  const std::string base =
      "fit --data " + dir.file("d.npy") + " --init " + dir.file("start.json") + " --precision fp64 -q";
  const CliRun kept = run_lowered(dir, base + " --out " + dir.file("kept.json"));
  ASSERT_EQ(kept.code, 0) << kept.err;
  EXPECT_NE(kept.err.find("component 2 captured no rows at iteration 1; it keeps"), std::string::npos) << kept.err;
  EXPECT_EQ(load_model(dir.file("kept.json")).weights[2], 0.0);
  const CliRun reseeded = run_lowered(dir, base + " --empty reseed --out " + dir.file("reseeded.json"));
  ASSERT_EQ(reseeded.code, 0) << reseeded.err;
  EXPECT_NE(reseeded.err.find("component 2 captured no rows at iteration 1; reseeded from the"), std::string::npos)
      << reseeded.err;
  const Model m = load_model(dir.file("reseeded.json"));
  EXPECT_NEAR(m.weights[2], 0.4, 0.03);
  EXPECT_NEAR(m.parts[0].mean[4], -40.0, 0.2);
  const CliRun bad = run_lowered(dir, base + " --empty split");
  EXPECT_EQ(bad.code, 2) << bad.err;
  EXPECT_NE(bad.err.find("keep"), std::string::npos) << bad.err;
  EXPECT_NE(bad.err.find("reseed"), std::string::npos) << bad.err;
  // --help states both policies' choices and defaults.
  const CliRun help = run_lowered(dir, "fit --help");
  EXPECT_NE(help.out.find("--empty TEXT:{keep,reseed}=keep"), std::string::npos) << help.out;
  EXPECT_NE(help.out.find("--missing TEXT:{error,drop,marginalise}=error"), std::string::npos) << help.out;
}

// -k A:B fits every K and keeps the one the criterion picks: on three clusters eight standard
// deviations apart, BIC and AIC both pick 3; the table has a row per K whose BIC is
// −2·N·(mean log-likelihood) + p·ln N, and `mixle score --what bic` gives the selected
// model's from the data again. A range with a model file, a backwards range, --select without
// a range, a criterion other than bic or aic and per-row scores without --out are usage errors.
TEST(CliModelSelection, RangeOfComponentsPicksTheTrueK) {
  TempDir dir("cli-select");
  test::write_bytes(dir.file("truth.json"), R"({"format": "mixle-model", "version": 1, "weights": [0.3, 0.3, 0.4],
    "parts": [{"family": "gaussian_diag", "columns": [0, 2], "mean": [[0, 0], [8, 0], [0, 8]],
               "var": [[1, 1], [1, 1], [1, 1]]}]})");
  ASSERT_EQ(
      run_lowered(dir, "generate -m " + dir.file("truth.json") + " -n 3000 --seed 1 -o " + dir.file("d.npy")).code, 0);
  const std::string base = "fit --data " + dir.file("d.npy") + " --seed 2 --precision fp64 -q";
  const std::string fit = base + " -k 1:5";
  for (const char* by : {"bic", "aic"}) {
    SCOPED_TRACE(by);
    const CliRun r = run_lowered(dir, fit + " --select " + by + " --out " + dir.file(std::string(by) + ".json"));
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_NE(r.out.find(std::string("model selection by ") + by), std::string::npos) << r.out;
    std::istringstream lines(r.out);
    std::string line;
    int rows = 0, selected = 0;
    while (std::getline(lines, line)) {
      std::istringstream row(line);
      std::size_t k = 0, parameters = 0;
      double mean = 0, bic = 0, aic = 0;
      if (!(row >> k >> mean >> parameters >> bic >> aic)) continue;
      ++rows;
      EXPECT_EQ(parameters, 5 * k - 1) << line;  // per component: 2 means, 2 variances, 1 weight
      EXPECT_NEAR(bic, -2.0 * 3000 * mean + static_cast<double>(parameters) * std::log(3000.0), 0.05) << line;
      EXPECT_NEAR(aic, -2.0 * 3000 * mean + 2.0 * static_cast<double>(parameters), 0.05) << line;
      if (line.find("selected") != std::string::npos) selected = static_cast<int>(k);
    }
    EXPECT_EQ(rows, 5) << r.out;
    EXPECT_EQ(selected, 3) << r.out;
    EXPECT_NE(r.out.find("fitted 3 components"), std::string::npos) << r.out;
  }
  const CliRun score =
      run_lowered(dir, "score --data " + dir.file("d.npy") + " -m " + dir.file("bic.json") + " --what bic");
  ASSERT_EQ(score.code, 0) << score.err;
  const CliRun fitted = run_lowered(dir, fit + " --out " + dir.file("again.json"));
  const auto at = fitted.out.find("← selected");
  ASSERT_NE(at, std::string::npos) << fitted.out;
  std::istringstream selected_row(fitted.out.substr(fitted.out.rfind('\n', at) + 1));
  std::size_t k = 0, parameters = 0;
  double mean = 0, bic = 0;
  selected_row >> k >> mean >> parameters >> bic;
  ASSERT_EQ(score.out.rfind("bic: ", 0), 0u) << score.out;
  EXPECT_NEAR(std::stod(score.out.substr(5)), bic, 1e-6 * std::abs(bic)) << score.out << fitted.out;
  const CliRun mean_score =
      run_lowered(dir, "score --data " + dir.file("d.npy") + " -m " + dir.file("bic.json") + " --what loglik-mean");
  ASSERT_EQ(mean_score.out.rfind("loglik-mean: ", 0), 0u) << mean_score.out;
  EXPECT_NEAR(std::stod(mean_score.out.substr(13)), mean, 2e-6) << mean_score.out;  // the table prints 6 decimals
  for (const std::string& args :
       {base + " -k 5:2", base + " -k 3 --select bic", base + " -k 2:3 --select hqc",
        "fit --data " + dir.file("d.npy") + " --init " + dir.file("truth.json") + " -k 1:3",
        "score --data " + dir.file("d.npy") + " -m " + dir.file("bic.json") + " --what resp"}) {
    const CliRun bad = run_lowered(dir, args);
    EXPECT_EQ(bad.code, 2) << args << "\n" << bad.err;
    EXPECT_NE(bad.err.find("usage error: "), std::string::npos) << args << "\n" << bad.err;
  }
}

// BIC charges ln N per parameter, AIC 2: a small fourth cluster (12 rows beside three of about
// 1,000) pays AIC's price for four more parameters and one weight, not BIC's — so AIC picks 4
// and BIC 3, each the lowest of its own column.
TEST(CliModelSelection, AicAndBicWeighParametersDifferently) {
  TempDir dir("cli-select-criteria");
  const Model three = model_from_json(R"({"format": "mixle-model", "version": 1, "weights": [0.34, 0.33, 0.33],
    "parts": [{"family": "gaussian_diag", "columns": [0, 2], "mean": [[0, 0], [8, 0], [0, 8]],
               "var": [[1, 1], [1, 1], [1, 1]]}]})");
  const Model small = model_from_json(R"({"format": "mixle-model", "version": 1, "weights": [1],
    "parts": [{"family": "gaussian_diag", "columns": [0, 2], "mean": [[4, 4]], "var": [[1, 1]]}]})");
  const Dataset a = sample(three, 3000, 1), b = sample(small, 12, 2);
  std::vector<double> values(a.as<double>(), a.as<double>() + 6000);
  values.insert(values.end(), b.as<double>(), b.as<double>() + 2 * 12);
  write_matrix(dir.file("d.npy"), values.data(), 3000 + 12, 2);
  auto selected = [&](const char* by) {
    const CliRun r =
        run_lowered(dir, "fit --data " + dir.file("d.npy") + " -k 2:5 --seed 2 --precision fp64 -q --select " + by);
    EXPECT_EQ(r.code, 0) << r.err;
    const auto at = r.out.find("← selected");
    if (at == std::string::npos) return std::size_t{0};
    std::istringstream row(r.out.substr(r.out.rfind('\n', at) + 1));
    std::size_t k = 0;
    row >> k;
    return k;
  };
  EXPECT_EQ(selected("bic"), 3u);
  EXPECT_EQ(selected("aic"), 4u);
}

TEST(CliBadInput, ScoreAndGenerateWriteNothingOnError) {
  TempDir dir("cli-score-bad");
  test::write_bytes(dir.file("weights.json"), test::diag_model_json("[0.5, 0.6]"));
  test::write_bytes(dir.file("data.npy"), test::npy_bytes(test::gaussian_values(5), 5, 2));
  const CliRun s = run_lowered(
      dir, "score --data " + dir.file("data.npy") + " -m " + dir.file("weights.json") + " -o " + dir.file("s.npy"));
  EXPECT_EQ(s.code, 1);
  EXPECT_NE(s.err.find("weights"), std::string::npos) << s.err;
  EXPECT_FALSE(std::filesystem::exists(dir.file("s.npy")));
  const CliRun g = run_lowered(dir, "generate -m " + dir.file("weights.json") + " -n 5 -o " + dir.file("g.npy"));
  EXPECT_EQ(g.code, 1);
  EXPECT_FALSE(std::filesystem::exists(dir.file("g.npy")));
}

// An error inside the process group (a one-rank distributed fit) is printed by the rank before
// its communicator's teardown, labelled as main would label it, and only once; the exit code
// is still 2 for a usage error and 1 for bad input.
TEST(CliDistributedFit, AnErrorInsideTheProcessGroupIsPrintedOnce) {
  TempDir dir("cli-group-error");
  test::write_bytes(dir.file("d.npy"), test::npy_bytes(test::gaussian_values(10), 10, 2));
  test::write_bytes(dir.file("trunc.npy"), test::npy_bytes(test::gaussian_values(10), 10, 2, "<f8", false, 12));
  auto count = [](const std::string& text, const std::string& what) {
    std::size_t n = 0;
    for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
    return n;
  };
  const std::string fit = "fit -k 2 --backend distributed --out " + dir.file("m.json") + " --data ";
  const CliRun usage = test::run_cli(dir, fit + dir.file("d.npy") + " --shard-components 3");
  EXPECT_EQ(usage.code, 2) << usage.err;
  EXPECT_EQ(count(usage.err, "mixle: usage error: --shard-components 3 with 1 rank(s)"), 1u) << usage.err;
  const CliRun bad = test::run_cli(dir, fit + dir.file("trunc.npy"));
  EXPECT_EQ(bad.code, 1) << bad.err;
  EXPECT_EQ(count(bad.err, "mixle: error: "), 1u) << bad.err;
  EXPECT_NE(bad.err.find("trunc.npy"), std::string::npos) << bad.err;
  EXPECT_FALSE(std::filesystem::exists(dir.file("m.json")));
}

// `mixle fit --help` shows each default, and it is the library's: the M-step floors and stepwise
// controls of FitOptions and the communicator and timeout of DistributedOptions.
TEST(CliHelp, FitShowsTheLibraryDefaults) {
  TempDir dir("cli-help");
  const CliRun r = test::run_cli(dir, "fit --help");
  ASSERT_EQ(r.code, 0) << r.err;
  const FitOptions o;
  const DistributedOptions d;
  auto text = [](auto value) {
    std::ostringstream s;
    s << value;
    return s.str();
  };
  const std::vector<std::pair<std::string, std::string>> defaults = {
      {"--batch-size", text(o.batch_size)},
      {"--step-decay", text(o.step_decay)},
      {"--step-offset", text(o.step_offset)},
      {"--epochs", text(o.epochs)},
      {"--full-batch-iterations", text(o.full_batch_iterations)},
      {"--reg-covar", text(o.reg_covar)},
      {"--pseudo-count", text(o.pseudo_count)},
      {"--rate-floor", text(o.rate_floor)},
      {"--comm", d.comm},
      {"--timeout", text(std::chrono::duration<double>(d.timeout).count())}};
  for (const auto& [option, value] : defaults)
    EXPECT_TRUE(std::regex_search(r.out, std::regex(option + R"( \S*=)" + value + R"((\s|$))")))
        << option << " should show =" << value << " in:\n"
        << r.out;
}

// `mixle score --help` shows what it computes, where and how precisely when not told.
TEST(CliHelp, ScoreShowsItsDefaults) {
  TempDir dir("cli-help-score");
  const CliRun r = test::run_cli(dir, "score --help");
  ASSERT_EQ(r.code, 0) << r.err;
  for (const auto& [option, value] : std::vector<std::pair<std::string, std::string>>{
           {"--what", "loglik"}, {"--device", "cpu"}, {"--precision", "fp64"}})
    EXPECT_TRUE(std::regex_search(r.out, std::regex(option + R"( \S*=)" + value + R"((\s|$))")))
        << option << " should show =" << value << " in:\n"
        << r.out;
}

// `mixle bench --help` shows the default case bench/README.md documents (and the results there
// were measured on): gaussian_diag N=200000 D=32 K=64 V=4, fp32 on the CPU, 2 untimed and 10
// timed iterations, seed 0 — the library's BenchCase, which the options take their defaults from.
TEST(CliHelp, BenchShowsTheDocumentedDefaultCase) {
  TempDir dir("cli-help-bench");
  const CliRun r = test::run_cli(dir, "bench --help");
  ASSERT_EQ(r.code, 0) << r.err;
  for (const auto& [option, value] : std::vector<std::pair<std::string, std::string>>{{"--family", "gaussian_diag"},
                                                                                      {"--rows", "200000"},
                                                                                      {"--dims", "32"},
                                                                                      {"--components", "64"},
                                                                                      {"--categories", "4"},
                                                                                      {"--device", "cpu"},
                                                                                      {"--precision", "fp32"},
                                                                                      {"--threads", "0"},
                                                                                      {"--iters", "10"},
                                                                                      {"--warmup", "2"},
                                                                                      {"--seed", "0"}})
    EXPECT_TRUE(std::regex_search(r.out, std::regex(option + R"( \S*=)" + value + R"((\s|$))")))
        << option << " should show =" << value << " in:\n"
        << r.out;
}

}  // namespace
}  // namespace mixle
