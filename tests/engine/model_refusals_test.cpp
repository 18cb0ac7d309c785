// Models, layouts and model files refused before any fit: each message names the part, the
// item or the file and what is wrong (the refusals scripts/coverage found no test reaching).
#include "engine_test_util.hpp"

#include "engine/initialise.hpp"
#include "engine/local_handle.hpp"

#include <mixle/error.hpp>
#include <mixle/fit.hpp>
#include <mixle/model.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <limits>
#include <sstream>

namespace mixle {
namespace {

TEST(ModelStructure, ColumnsEndWhereTheLastPartEndsWhateverTheOrder) {
  EXPECT_EQ(Model{}.columns(), 0u);  // no parts read no columns
  Model m = test::truth_model("mixed");
  std::size_t end = 0;
  for (const Part& p : m.parts) end = std::max(end, p.col_end);
  EXPECT_EQ(m.columns(), end);
  std::reverse(m.parts.begin(), m.parts.end());
  EXPECT_EQ(m.columns(), end);
  m.parts.resize(1);  // the last part of the file alone
  EXPECT_EQ(m.columns(), m.parts[0].col_end);
}

TEST(ModelRefusals, WeightsColumnsAndOverlappingParts) {
  Model m = test::truth_model("mixed");
  ASSERT_NO_THROW(validate_model(m));
  Model heavy = m;
  heavy.weights = {1.5, -0.5};
  test::expect_invalid_input([&] { validate_model(heavy); }, {"weights[0] = 1.5", "must be in [0, 1]"});
  Model negative = m;
  negative.weights = {1.0, -0.0 - 1e-3};
  test::expect_invalid_input([&] { validate_model(negative); }, {"weights[1]", "must be in [0, 1]"});
  Model empty = m;
  empty.parts[1].col_end = empty.parts[1].col_begin;
  test::expect_invalid_input([&] { validate_model(empty); }, {"parts[1] (categorical)", "\"columns\" [2, 2) is empty"});
  Model overlap = m;
  overlap.parts[2].col_begin = 1;  // poisson [1, 4) overlaps the gaussian part's [0, 2)
  test::expect_invalid_input([&] { validate_model(overlap); }, {"parts[2] (poisson)", "overlap another part's [0, 2)"});
  // Every entry point checks the model it is given before using it: sampling too.
  test::expect_invalid_input([&] { sample(heavy, 10, 1); }, {"weights[0] = 1.5"});
  test::expect_invalid_input([&] { sample(overlap, 10, 1); }, {"overlap another part's [0, 2)"});
}

// Parameter values are checked for every component and every entry: a bad value in a later
// component, or in the first entry of a matrix, is named by its own index.
TEST(ModelRefusals, EveryComponentsValuesAreChecked) {
  // Categorical, K = 2, two columns of 2 codes: component 1's second column is [1.5, −0.5] —
  // it sums to 1, so only the per-value rule can catch it.
  Model cat = model_from_json(R"({"format":"mixle-model","version":1,"weights":[0.5,0.5],"parts":[
      {"family":"categorical","columns":[0,2],"categories":2,"prob":[[[0.5,0.5],[0.5,0.5]],[[0.5,0.5],[0.5,0.5]]]}]})");
  cat.parts[0].prob[6] = 1.5;
  cat.parts[0].prob[7] = -0.5;
  test::expect_invalid_input([&] { validate_model(cat); }, {"prob[1][2] = 1.5", "must be in [0, 1]"});
  // gaussian_full: an infinite first entry of a covariance.
  Model full = test::truth_model("full");
  full.parts[0].cov[4] = std::numeric_limits<double>::infinity();  // component 1, entry (0, 0)
  test::expect_invalid_input([&] { validate_model(full); }, {"cov[1][0] = inf", "must be finite"});
}

// Every entry of every parameter array is checked, and a bad one is named by its own component
// and index with its own value: each family's model (K = 2, D = 3) spoiled one entry at a time.
struct Spoiled {
  std::string part;                  // the part's JSON, columns [0, 3)
  std::vector<double> Part::*field;  // the array spoiled
  const char* name;                  // its name in messages
  std::size_t per_component;         // entries per component
  double bad;                        // the value written
  const char* rule;                  // the message's rule
  bool symmetric = false;            // a D×D covariance: (i, j) and (j, i) spoiled together
  bool one_index = false;            // one value per component: "name[k]", no second index
};

TEST(ModelRefusals, EveryParameterEntryIsCheckedAndNamedByItsOwnIndex) {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  const std::string mean = R"("mean":[[0,1,2],[3,4,5]])";
  const std::string cov = R"([[[2,0.1,0],[0.1,2,0],[0,0,2]],[[3,0,0.2],[0,3,0],[0.2,0,3]]])";
  const std::string tied = R"([[[2,0.1,0],[0.1,2,0],[0,0,2]],[[2,0.1,0],[0.1,2,0],[0,0,2]]])";
  const std::string rates = R"([[1,2,3],[4,5,6]])";
  const std::vector<Spoiled> cases{
      {R"("family":"gaussian_diag",)" + mean + R"(,"var":[[1,2,3],[4,5,6]])", &Part::mean, "mean", 3, kInf,
       "must be finite"},
      {R"("family":"gaussian_diag",)" + mean + R"(,"var":[[1,2,3],[4,5,6]])", &Part::var, "var", 3, -2.0,
       "must be finite and > 0"},
      {R"("family":"gaussian_spherical",)" + mean + R"(,"var":[1,2])", &Part::mean, "mean", 3, kInf, "must be finite"},
      {R"("family":"gaussian_spherical",)" + mean + R"(,"var":[1,2])", &Part::var, "var", 1, -2.0,
       "must be finite and > 0", false, true},
      {R"("family":"gaussian_full",)" + mean + R"(,"cov":)" + cov, &Part::mean, "mean", 3, kInf, "must be finite"},
      {R"("family":"gaussian_full",)" + mean + R"(,"cov":)" + cov, &Part::cov, "cov", 9, kInf, "must be finite", true},
      {R"("family":"gaussian_tied",)" + mean + R"(,"cov":)" + tied, &Part::cov, "cov", 9, kInf, "must be finite", true},
      {R"("family":"poisson","rate":)" + rates, &Part::rate, "rate", 3, -2.0, "must be finite and > 0"},
      {R"("family":"exponential","rate":)" + rates, &Part::rate, "rate", 3, 0.0, "must be finite and > 0"},
      {R"("family":"gamma","shape":[[2,5,1],[6,2,3]],"rate":)" + rates, &Part::shape, "shape", 3, -2.0,
       "must be finite and > 0"},
      {R"("family":"gamma","shape":[[2,5,1],[6,2,3]],"rate":)" + rates, &Part::rate, "rate", 3, -2.0,
       "must be finite and > 0"},
      {R"("family":"bernoulli","prob":[[0.1,0.5,0.9],[0.2,0.3,0.4]])", &Part::prob, "prob", 3, 1.5,
       "must be in [0, 1]"},
      {R"("family":"categorical","categories":2,"prob":[[[0.5,0.5],[0.2,0.8],[1,0]],[[0.3,0.7],[0.6,0.4],[0,1]]])",
       &Part::prob, "prob", 6, 1.5, "must be in [0, 1]"},
  };
  for (const Spoiled& c : cases) {
    const Model good = model_from_json(R"({"format":"mixle-model","version":1,"weights":[0.5,0.5],"parts":[{)" +
                                       c.part + R"(,"columns":[0,3]}]})");
    SCOPED_TRACE(family_name(good.parts[0].family) + std::string(" ") + c.name);
    ASSERT_NO_THROW(validate_model(good));
    const std::size_t n = (good.parts[0].*c.field).size();
    ASSERT_EQ(n, 2 * c.per_component);
    // A parameter that must be > 0 is also refused at exactly 0.
    std::vector<double> spoilers{c.bad};
    if (c.rule == std::string("must be finite and > 0")) spoilers.push_back(0.0);
    for (const double spoiler : spoilers)
      for (std::size_t at = 0; at < n; ++at) {
        Model bad = good;
        std::vector<double>& values = bad.parts[0].*c.field;
        const std::size_t k = at / c.per_component;
        std::size_t i = at % c.per_component;
        values[at] = spoiler;
        if (c.symmetric) {  // the mirror entry too; the first of the two is the one named
          const std::size_t mirror = i % 3 * 3 + i / 3;
          values[k * c.per_component + mirror] = spoiler;
          i = std::min(i, mirror);
        }
        std::ostringstream shown;
        shown << spoiler;
        const std::string named = std::string(c.name) + "[" + std::to_string(k) + "]" +
                                  (c.one_index ? "" : "[" + std::to_string(i) + "]") + " = " + shown.str();
        test::expect_invalid_input([&] { validate_model(bad); }, {"parts[0]", named + " is invalid: " + c.rule});
      }
  }
  // gaussian_tied: a second component's matrix that differs from the first's in one diagonal
  // entry (still a valid covariance) is named by that entry.
  const Model tied_model = model_from_json(R"({"format":"mixle-model","version":1,"weights":[0.5,0.5],"parts":[{
      "family":"gaussian_tied","columns":[0,3],)" +
                                           mean + R"(,"cov":)" + tied + "}]}");
  for (std::size_t d = 0; d < 3; ++d) {
    Model bad = tied_model;
    bad.parts[0].cov[9 + d * 4] = 2.5;
    test::expect_invalid_input([&] { validate_model(bad); },
                               {"cov[1] differs from cov[0] (entry " + std::to_string(d * 4) + ": 2.5 against 2)"});
  }
}

TEST(LayoutRefusals, ItemsNameWhatIsWrongAndShowTheForm) {
  test::expect_invalid_input([] { parse_layout("gaussian_diag:0-2,poisson", 4); },
                             {"layout item \"poisson\"", "family:begin-end[:V]"});
  test::expect_invalid_input([] { parse_layout("gaussian_diag:0:2", 4); },
                             {"\"gaussian_diag:0:2\"", "begin-end (half-open)"});
  test::expect_invalid_input([] { parse_layout("gaussian_diag:a-2", 4); }, {"\"a\" is not a non-negative integer"});
  test::expect_invalid_input([] { parse_layout("gaussian_diag:0-2x", 4); }, {"\"2x\" is not a non-negative integer"});
  test::expect_invalid_input([] { parse_layout("categorical:0-1:three", 4); },
                             {"\"three\" is not a non-negative integer"});
  const auto specs = parse_layout("gaussian_diag:0-2,categorical:2-3:5", 4);
  ASSERT_EQ(specs.size(), 2u);
  EXPECT_EQ(specs[1].categories, 5u);
  EXPECT_EQ(specs[1].col_begin, 2u);
  EXPECT_EQ(specs[1].col_end, 3u);
}

TEST(LayoutRefusals, CategoriesAreInferredOnlyFromSensibleCodes) {
  // Without :V the categories are the largest code + 1; a code past 10^7 (an id column, say)
  // cannot be a category count, and the message says how to give it.
  for (double code : {2e7, std::numeric_limits<double>::infinity()}) {
    std::vector<double> v = {0, 1, 2, code};
    FitOptions o;
    o.components = 1;
    o.layout = "categorical:0-1";
    test::expect_invalid_input(
        [&] { fit(Dataset::from_vector(v, 4, 1), o); },
        {"categorical columns [0, 1)", "cannot infer the number of categories", "categorical:begin-end:V"});
  }
  std::vector<double> v = {0, 1, 2, 1};
  FitOptions o;
  o.components = 1;
  o.layout = "categorical:0-1";
  o.max_iter = 1;
  EXPECT_EQ(fit(Dataset::from_vector(v, 4, 1), o).model.parts[0].categories, 3u);
  // A column whose every code is 0 has one category: the largest code, 0, is a sensible one.
  EXPECT_EQ(fit(Dataset::from_vector(std::vector<double>{0, 0, 0, 0}, 4, 1), o).model.parts[0].categories, 1u);
}

// The largest code that may be inferred is 10^7 itself (10^7 + 1 categories); one past is refused.
TEST(LayoutRefusals, TheLargestInferredCodeIsTenMillion) {
  auto categories = [](double code) {
    const Dataset d = Dataset::from_vector(std::vector<double>{0, code}, 2, 1);
    auto data = engine::LocalEncodedData::create(d, {});
    const PartSpec spec{.family = Family::categorical, .col_begin = 0, .col_end = 1};
    return engine::model_shape(*data, {spec}, 1).parts[0].categories;
  };
  EXPECT_EQ(categories(1e7), 10000001u);
  test::expect_invalid_input([&] { (void)categories(1e7 + 1); }, {"cannot infer the number of categories"});
}

// A model file is for people too: two spaces per level, from the first column, and each row of
// numbers on one line.
TEST(ModelFile, IsIndentedTwoSpacesPerLevelWithEachRowOfNumbersOnOneLine) {
  const Model m = model_from_json(R"({"format":"mixle-model","version":1,"weights":[0.25,0.75],"parts":[
      {"family":"gaussian_full","columns":[0,2],"mean":[[0,1],[2,3]],"cov":[[[2,0.5],[0.5,1]],[[1,0],[0,1]]]}]})");
  const std::string text = model_to_json(m);
  std::istringstream lines(text);
  std::vector<std::string> all;
  for (std::string line; std::getline(lines, line);) all.push_back(line);
  ASSERT_GE(all.size(), 3u) << text;
  EXPECT_EQ(all.front(), "{");
  EXPECT_EQ(all.back(), "}");
  int depth = 0;
  for (const std::string& line : all) {
    const std::size_t pad = line.find_first_not_of(' ');
    ASSERT_NE(pad, std::string::npos) << text;
    const bool closes = line[pad] == '}' || line[pad] == ']';
    EXPECT_EQ(pad, 2u * static_cast<std::size_t>(depth - (closes ? 1 : 0))) << "line: " << line << "\n" << text;
    for (const char ch : line) depth += (ch == '{' || ch == '[') - (ch == '}' || ch == ']');
  }
  EXPECT_EQ(depth, 0);
  EXPECT_NE(text.find("\n  \"weights\": [0.25,0.75]"), std::string::npos) << text;
  EXPECT_NE(text.find("\n          [2.0,0.5],\n          [0.5,1.0]\n"), std::string::npos) << text;
  EXPECT_EQ(model_from_json(text).parts[0].cov, m.parts[0].cov);
  // Indent 0 is pretty too, from the first column; only a negative indent gives one line.
  EXPECT_EQ(model_to_json(m, 0), text);
  const std::string one_line = model_to_json(m, -1);
  EXPECT_EQ(one_line.find('\n'), one_line.size() - 1) << one_line;
}

// "weights" must be an array: a number, an object or an empty array is refused naming it.
TEST(ModelFileRefusals, WeightsThatAreNotANonEmptyArray) {
  const std::string part = R"({"family":"poisson","columns":[0,1],"rate":[[2]]})";
  for (const std::string weights : {"1", "{\"a\":1}", "[]"})
    test::expect_invalid_input(
        [&] {
          model_from_json(R"({"format":"mixle-model","version":1,"weights":)" + weights + R"(,"parts":[)" + part + "]}",
                          "m.json");
        },
        {"m.json: \"weights\" must be a non-empty array of K numbers"});
}

TEST(ModelFileRefusals, TheSourceIsNamedWithWhatIsWrong) {
  const std::string part = R"({"family":"poisson","columns":[0,1],"rate":[[2]]})";
  auto file = [](const std::string& format, const std::string& parts) {
    return R"({"format":)" + format + R"(,"version":1,"weights":[1],"parts":[)" + parts + "]}";
  };
  EXPECT_NO_THROW(model_from_json(file("\"mixle-model\"", part), "ok.json"));
  test::expect_invalid_input([&] { model_from_json(R"({"format":"mixle-model",)", "cut.json"); },
                             {"cut.json: not valid JSON"});
  // Found by scripts/fuzz: a number past double's range escaped as a JSON library exception.
  test::expect_invalid_input(
      [&] {
        model_from_json(R"({"format":"mixle-model","version":1,"weights":[1e400],"parts":[)" + part + "]}", "big.json");
      },
      {"big.json: not valid JSON", "overflow"});
  // The JSON reader stops at a NUL as at the end of the text: a valid model padded with zeros, or
  // followed by anything behind a NUL, must not read as valid.
  const std::string ok = file("\"mixle-model\"", part);
  test::expect_invalid_input([&] { model_from_json(ok + std::string(64, '\0'), "padded.json"); },
                             {"padded.json: a NUL byte at byte offset " + std::to_string(ok.size())});
  test::expect_invalid_input([&] { model_from_json(ok + std::string("\0garbage", 8), "tail.json"); },
                             {"tail.json: a NUL byte at byte offset " + std::to_string(ok.size())});
  test::expect_invalid_input([&] { model_from_json(file("\"mixle-checkpoint\"", part), "m.json"); },
                             {"m.json: \"format\" is \"mixle-checkpoint\"", "expected \"mixle-model\""});
  test::expect_invalid_input(
      [&] { model_from_json(file("\"mixle-model\"", R"({"family":"weibull","columns":[0,1]})"), "m.json"); },
      {"m.json: parts[0]: ", "weibull"});
  for (const char* columns : {"[0]", "[0,1,2]", "[-1,1]", "[0,1.5]", "\"0-1\""}) {
    SCOPED_TRACE(columns);
    const std::string bad = std::string(R"({"family":"poisson","columns":)") + columns + R"(,"rate":[[2]]})";
    test::expect_invalid_input([&] { model_from_json(file("\"mixle-model\"", bad), "m.json"); },
                               {"m.json: parts[0]: \"columns\" must be [start, stop] with non-negative integers"});
  }
}

}  // namespace
}  // namespace mixle
