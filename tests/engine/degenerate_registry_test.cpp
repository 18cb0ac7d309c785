// Degenerate data, the encoded-data backend registry, kernel rules seen through the API, and
// bad input through the API.
#include "common/bad_files.hpp"
#include "engine_test_util.hpp"

#include "engine/encoded_data.hpp"
#include "engine/families/family_ops.hpp"
#include "engine/local_handle.hpp"
#include "engine/row_hash.hpp"

#include <mixle/error.hpp>
#include <mixle/fit.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <optional>

namespace mixle {
namespace {

using test::make_part;

bool any_warning_names(const FitResult& r, const std::string& text) {
  return std::any_of(r.warnings.begin(), r.warnings.end(),
                     [&](const std::string& w) { return w.find(text) != std::string::npos; });
}

void expect_empty_components_warned(const FitResult& r) {
  std::size_t empty = 0;
  for (std::size_t k = 0; k < r.model.components(); ++k)
    if (r.model.weights[k] == 0.0) {
      ++empty;
      EXPECT_TRUE(any_warning_names(r, "component " + std::to_string(k) + " "))
          << "no warning names empty component " << k;
    }
  EXPECT_GT(empty, 0u) << "a component should have captured no rows";
}

// The row hash is SplitMix64's finaliser: the reference generator's first two outputs from
// state 0 are 0xe220a8397b1dcdaf and 0x6e789e6aa1b965f4.
TEST(RowHash, Mix64IsSplitMix64) {
  EXPECT_EQ(engine::mix64(0), 0xe220a8397b1dcdafull);
  EXPECT_EQ(engine::mix64(0x9E3779B97F4A7C15ull), 0x6e789e6aa1b965f4ull);
}

TEST(EngineDegenerate, IdenticalRowsK3GaussianDiag) {
  const std::size_t N = 500;
  std::vector<double> v;
  for (std::size_t r = 0; r < N; ++r) v.insert(v.end(), {2.5, -1.0});
  for (const char* layout : {"gaussian_diag", "gaussian_full"}) {
    SCOPED_TRACE(layout);
    FitOptions o;
    o.components = 3;
    o.layout = layout;
    o.max_iter = 20;
    const FitResult r = fit(Dataset::from_vector(v, N, 2), o);
    EXPECT_TRUE(test::all_finite(r.model)) << model_to_json(r.model);
    EXPECT_TRUE(std::isfinite(r.final_mean_loglik));
    EXPECT_FALSE(r.warnings.empty());
    expect_empty_components_warned(r);
    EXPECT_NO_THROW(validate_model(r.model));
  }
}

// All rows identical and K = 3: k-means++ finds one centre, the other two components capture no
// row at initialisation and keep the default component of their family (FamilyOps::resize) with
// weight 0 — zero mean and unit variance (identity covariance) for the Gaussians, rate 1,
// uniform categories — in the model written out, not whatever the arrays held.
TEST(EngineDegenerate, ComponentsEmptyFromTheStartKeepTheFamilysDefaultComponent) {
  const std::size_t N = 300;
  struct Case {
    const char* layout;
    std::vector<double> row;
  };
  for (const Case& c :
       {Case{"gaussian_diag", {2.5, -1.0}}, Case{"gaussian_spherical", {2.5, -1.0}}, Case{"gaussian_full", {2.5, -1.0}},
        Case{"poisson", {3.0, 4.0}}, Case{"categorical:0-2:3", {1.0, 2.0}}}) {
    SCOPED_TRACE(c.layout);
    std::vector<double> v;
    for (std::size_t r = 0; r < N; ++r) v.insert(v.end(), c.row.begin(), c.row.end());
    FitOptions o;
    o.components = 3;
    o.layout = c.layout;
    o.max_iter = 3;
    o.precision = "fp64";
    const FitResult r = fit(Dataset::from_vector(v, N, 2), o);
    const Part& p = r.model.parts[0];
    std::size_t empty = 0;
    for (std::size_t k = 0; k < 3; ++k) {
      if (r.model.weights[k] != 0.0) continue;
      ++empty;
      if (!p.mean.empty())
        EXPECT_EQ(std::vector<double>(p.mean.begin() + k * 2, p.mean.begin() + k * 2 + 2), (std::vector<double>{0, 0}));
      if (p.family == Family::gaussian_diag)
        EXPECT_EQ(std::vector<double>(p.var.begin() + k * 2, p.var.begin() + k * 2 + 2), (std::vector<double>{1, 1}));
      if (p.family == Family::gaussian_spherical) EXPECT_EQ(p.var[k], 1.0);
      if (p.family == Family::gaussian_full)
        EXPECT_EQ(std::vector<double>(p.cov.begin() + k * 4, p.cov.begin() + k * 4 + 4),
                  (std::vector<double>{1, 0, 0, 1}));
      if (p.family == Family::poisson)
        EXPECT_EQ(std::vector<double>(p.rate.begin() + k * 2, p.rate.begin() + k * 2 + 2), (std::vector<double>{1, 1}));
      if (p.family == Family::categorical)
        for (std::size_t i = 0; i < 6; ++i) EXPECT_DOUBLE_EQ(p.prob[k * 6 + i], 1.0 / 3.0);
    }
    EXPECT_EQ(empty, 2u);
  }
}

// The emptiness rule every M-step shares: a mass of exactly kEmptyMass is empty, the next double
// above it is not (the M-step, the shared covariance, the sharded weights and the marginalised
// columns all ask this one function).
TEST(EngineDegenerate, AMassOfExactlyTheEmptyBoundIsEmpty) {
  EXPECT_TRUE(engine::is_empty_mass(engine::kEmptyMass));
  EXPECT_FALSE(engine::is_empty_mass(std::nextafter(engine::kEmptyMass, 1.0)));
  EXPECT_TRUE(engine::is_empty_mass(0.0));
  EXPECT_TRUE(engine::is_empty_mass(-1.0));
  EXPECT_FALSE(engine::is_empty_mass(1.0));
}

TEST(EngineDegenerate, IdenticalRowsSelectInit) {
  const std::size_t N = 500;
  std::vector<double> v(N, 4.0);
  FitOptions o;
  o.components = 3;
  o.init = InitMethod::select;
  o.init_p = 0.5;
  o.max_iter = 20;
  const FitResult r = fit(Dataset::from_vector(v, N, 1), o);
  EXPECT_TRUE(test::all_finite(r.model)) << model_to_json(r.model);
  EXPECT_NO_THROW(validate_model(r.model));
}

// The select initialisation (init_p = 1: every row drawn) refuses a component that drew no row,
// and takes one that drew a single row. Which component a row draws is the hash of (seed, row):
// the seeds below are found from it, one that leaves a component empty and one that gives a
// component exactly one of the three rows.
TEST(EngineDegenerate, SelectRefusesAComponentWithoutRowsAndTakesOneWithOne) {
  const std::vector<double> v = {-1.0, 0.5, 2.0};
  const Dataset data = Dataset::from_vector(v, 3, 1);
  auto counts_of = [](std::uint64_t seed) {
    std::vector<int> counts(2, 0);
    for (std::uint64_t row = 0; row < 3; ++row) ++counts[engine::row_draw(seed, 2, row) % 2];
    return counts;
  };
  std::optional<std::uint64_t> empty, single;
  for (std::uint64_t seed = 1; seed < 200 && !(empty && single); ++seed) {
    const std::vector<int> c = counts_of(seed);
    if (!empty && (c[0] == 0 || c[1] == 0)) empty = seed;
    if (!single && (c[0] == 1 || c[1] == 1)) single = seed;
  }
  ASSERT_TRUE(empty && single);
  FitOptions o;
  o.components = 2;
  o.init = InitMethod::select;
  o.init_p = 1.0;
  o.max_iter = 2;
  o.precision = "fp64";
  o.seed = *single;
  const FitResult r = fit(data, o);
  EXPECT_TRUE(test::all_finite(r.model)) << model_to_json(r.model);
  o.seed = *empty;
  test::expect_invalid_input([&] { fit(data, o); },
                             {"initialisation 'select' with p = 1", "no rows (3 rows, K = 2)", "--init-p"});
}

TEST(EngineDegenerate, FarComponentCapturesNothing) {
  const std::size_t N = 1000;
  std::vector<double> v(N);
  for (std::size_t i = 0; i < N; ++i) v[i] = static_cast<double>(i % 11) / 4.0 - 1.25;
  Model init;
  init.weights = {0.5, 0.5};
  Part p = make_part(Family::gaussian_diag, 0, 1);
  p.mean = {0.0, 1e6};
  p.var = {1.0, 1.0};
  init.parts = {p};
  for (const char* precision : {"fp32", "fp64"}) {
    SCOPED_TRACE(precision);
    FitOptions o;
    o.init = InitMethod::model;
    o.init_model = init;
    o.precision = precision;
    o.max_iter = 10;
    const FitResult r = fit(Dataset::from_vector(v, N, 1), o);
    EXPECT_TRUE(test::all_finite(r.model)) << model_to_json(r.model);
    EXPECT_EQ(r.model.weights[1], 0.0);
    EXPECT_TRUE(any_warning_names(r, "component 1 ")) << "warnings do not name component 1";
    expect_empty_components_warned(r);
  }
}

// ---------------------------------------------------------------------------------------------
// Registry

std::unique_ptr<engine::EncodedData> factory_a(const Dataset& d, const engine::EncodedDataOptions& o) {
  return engine::LocalEncodedData::create(d, o);
}
int factory_b_calls = 0;
std::unique_ptr<engine::EncodedData> factory_b(const Dataset& d, const engine::EncodedDataOptions& o) {
  ++factory_b_calls;
  return engine::LocalEncodedData::create(d, o);
}

Dataset tiny() { return Dataset::from_vector(std::vector<double>{1, 2, 3, 4}, 4, 1); }

TEST(EngineRegistry, NamesAndAliasesAreCaseInsensitive) {
  engine::register_encoded_data_backend("RegTest_CaseA", &factory_a, {"RegTest_AliasA"});
  for (const char* name : {"regtest_casea", "REGTEST_CASEA", "RegTest_CaseA", "regtest_aliasa", "REGTEST_ALIASA"}) {
    engine::EncodedDataOptions o;
    o.backend = name;
    const auto h = engine::encoded_data(tiny(), o);
    ASSERT_NE(h, nullptr) << name;
    EXPECT_EQ(h->rows(), 4u);
  }
  const auto names = engine::encoded_data_backends();
  EXPECT_NE(std::find(names.begin(), names.end(), "regtest_casea"), names.end());
  // Built-in "local" and its case variants.
  engine::EncodedDataOptions o;
  o.backend = "LOCAL";
  EXPECT_EQ(engine::encoded_data(tiny(), o)->backend(), "local");
}

TEST(EngineRegistry, CollidingNameRefusedUnlessOverride) {
  // Run alone (ctest runs each test in its own process) nothing has been encoded yet: the
  // built-in backends must still be listed and must still win name collisions.
  const auto initial = engine::encoded_data_backends();
  EXPECT_NE(std::find(initial.begin(), initial.end(), "local"), initial.end());
  engine::register_encoded_data_backend("regtest_collide", &factory_a, {"regtest_collide_alias"});
  EXPECT_THROW(engine::register_encoded_data_backend("RegTest_Collide", &factory_b), InvalidInput);
  // An alias colliding with another backend's name or alias is refused too.
  EXPECT_THROW(engine::register_encoded_data_backend("regtest_other", &factory_b, {"REGTEST_COLLIDE_ALIAS"}),
               InvalidInput);
  EXPECT_THROW(engine::register_encoded_data_backend("regtest_other2", &factory_b, {"local"}), InvalidInput);
  // A refused registration leaves nothing behind.
  const auto names = engine::encoded_data_backends();
  EXPECT_EQ(std::find(names.begin(), names.end(), "regtest_other"), names.end());
  EXPECT_EQ(std::find(names.begin(), names.end(), "regtest_other2"), names.end());
  EXPECT_NO_THROW(engine::register_encoded_data_backend("regtest_collide", &factory_b, {}, /*override=*/true));
  // The override took effect: the name now makes handles with the new factory.
  const int before = factory_b_calls;
  engine::EncodedDataOptions o;
  o.backend = "RegTest_Collide";
  engine::encoded_data(tiny(), o);
  EXPECT_EQ(factory_b_calls, before + 1);
  // The built-in backend still works after all that.
  EXPECT_EQ(engine::encoded_data(tiny())->backend(), "local");
}

TEST(EngineRegistry, IdenticalReRegistrationIsNoOp) {
  engine::register_encoded_data_backend("regtest_same", &factory_a, {"regtest_same_alias"});
  const auto before = engine::encoded_data_backends();
  EXPECT_NO_THROW(engine::register_encoded_data_backend("regtest_same", &factory_a, {"regtest_same_alias"}));
  EXPECT_NO_THROW(engine::register_encoded_data_backend("REGTEST_SAME", &factory_a, {"RegTest_Same_Alias"}));
  EXPECT_EQ(before, engine::encoded_data_backends());
}

TEST(EngineRegistry, ControlsWithEncodedHandleConflict) {
  const auto handle = engine::encoded_data(tiny());
  const engine::DataSource source = handle;
  EXPECT_TRUE(engine::is_encoded_data_handle(source));
  EXPECT_FALSE(engine::is_encoded_data_handle(engine::DataSource{tiny()}));
  // Default controls: the handle itself comes back.
  EXPECT_EQ(engine::encoded_data(source).get(), handle.get());
  engine::EncodedDataOptions threads;
  threads.threads = 2;
  EXPECT_THROW(engine::encoded_data(source, threads), EncodedDataControlConflict);
  engine::EncodedDataOptions device;
  device.device = "auto";
  EXPECT_THROW(engine::encoded_data(source, device), EncodedDataControlConflict);
  engine::EncodedDataOptions backend;
  backend.backend = "in_process";
  EXPECT_THROW(engine::encoded_data(source, backend), EncodedDataControlConflict);
  engine::EncodedDataOptions workers;
  workers.num_workers = 3;
  EXPECT_THROW(engine::encoded_data(source, workers), EncodedDataControlConflict);
  engine::EncodedDataOptions comm;
  comm.comm = "gloo";
  EXPECT_THROW(engine::encoded_data(source, comm), EncodedDataControlConflict);
  // The refusal names the controls that were set, and only those (as the reference's does).
  engine::EncodedDataOptions two;
  two.threads = 2;
  two.comm = "mpi";
  try {
    engine::encoded_data(source, two);
    FAIL() << "no exception";
  } catch (const EncodedDataControlConflict& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("the encoding controls given (threads, comm)"), std::string::npos) << msg;
  }
}

// The built-ins, each registered once with its aliases: local (in_process, single), distributed
// (torchrun, mpi), component_parallel (model_parallel, mp_model) and component_sharded, whose
// shards exist only while fit runs — encoding for it is refused, saying so.
TEST(EngineRegistry, TheBuiltInsAndTheirAliases) {
  const auto names = engine::encoded_data_backends();
  for (const char* name : {"local", "distributed", "component_parallel", "component_sharded"})
    EXPECT_NE(std::find(names.begin(), names.end(), name), names.end()) << name;
  for (const char* alias : {"in_process", "single", "torchrun", "mpi", "model_parallel", "mp_model"})
    EXPECT_EQ(std::find(names.begin(), names.end(), alias), names.end()) << alias << " is an alias, not a name";
  engine::EncodedDataOptions sharded;
  sharded.backend = "Component_Sharded";
  try {
    engine::encoded_data(tiny(), sharded);
    FAIL() << "no exception";
  } catch (const InvalidInput& e) {
    EXPECT_NE(std::string(e.what()).find("holds its shards only while fit runs"), std::string::npos) << e.what();
  }
  for (const char* alias : {"model_parallel", "MP_MODEL"}) {
    engine::EncodedDataOptions o;
    o.backend = alias;
    EXPECT_EQ(engine::encoded_data(tiny(), o)->backend(), "component_parallel") << alias;
  }
}

TEST(EngineRegistry, UnknownBackendListsRegisteredNames) {
  engine::EncodedDataOptions o;
  o.backend = "no_such_backend";
  try {
    engine::encoded_data(tiny(), o);
    FAIL() << "no exception";
  } catch (const InvalidInput& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("no_such_backend"), std::string::npos) << msg;
    for (const auto& name : engine::encoded_data_backends())
      EXPECT_NE(msg.find(name), std::string::npos) << msg << " lacks " << name;
  }
  // Through the public API too.
  FitOptions fo;
  fo.components = 1;
  fo.backend = "no_such_backend";
  EXPECT_THROW(fit(tiny(), fo), InvalidInput);
}

// ---------------------------------------------------------------------------------------------
// Kernel rules through the API

Model impossible_code_model() {
  Model m;
  m.weights = {0.5, 0.5};
  Part c = make_part(Family::categorical, 0, 1, 3);
  c.prob = {0.5, 0.5, 0.0, 0.25, 0.75, 0.0};  // code 2 has probability 0 everywhere
  m.parts = {c};
  return m;
}

TEST(EngineKernelRules, ImpossibleRowNamed) {
  const Model m = impossible_code_model();
  const Dataset data = Dataset::from_vector(std::vector<double>{0, 1, 0, 1, 1, 2, 0}, 7, 1);
  for (const char* precision : {"fp32", "fp64"}) {
    SCOPED_TRACE(precision);
    try {
      score_samples(m, data, "cpu", 1, precision);
      FAIL() << "no exception";
    } catch (const ImpossibleEvidence& e) {
      EXPECT_NE(std::string(e.what()).find("rows 5"), std::string::npos) << e.what();
    }
  }
  FitOptions o;
  o.init = InitMethod::model;
  o.init_model = m;
  EXPECT_THROW(fit(data, o), ImpossibleEvidence);
}

TEST(EngineKernelRules, ResponsibilitiesSumToOneAndPredictIsArgmax) {
  Model m;
  m.weights = {0.2, 0.3, 0.5};
  Part g = make_part(Family::gaussian_diag, 0, 2);
  g.mean = {0, 0, 1, 1, 3, -1};
  g.var = {1, 2, 0.5, 1, 2, 2};
  Part po = make_part(Family::poisson, 2, 3);
  po.rate = {1, 2, 3};
  m.parts = {g, po};
  const std::size_t N = 5000;
  const Dataset data = sample(m, N, 99);
  // The sum of K responsibilities in float64 (fp64) or float32 (fp32) normalisation.
  constexpr double kSumTol64 = 1e-12, kSumTol32 = 1e-5;
  for (const char* precision : {"fp32", "fp64"}) {
    SCOPED_TRACE(precision);
    const auto resp = predict_proba(m, data, "cpu", 2, precision);
    const auto labels = predict(m, data, "cpu", 2, precision);
    ASSERT_EQ(resp.size(), N * 3);
    ASSERT_EQ(labels.size(), N);
    const double tol = std::string(precision) == "fp64" ? kSumTol64 : kSumTol32;
    for (std::size_t r = 0; r < N; ++r) {
      const double* p = resp.data() + r * 3;
      EXPECT_NEAR(p[0] + p[1] + p[2], 1.0, tol) << "row " << r;
      for (int k = 0; k < 3; ++k) EXPECT_TRUE(p[k] >= 0.0 && p[k] <= 1.0);
      const auto arg = std::max_element(p, p + 3) - p;
      EXPECT_EQ(labels[r], arg) << "row " << r;
    }
  }
}

// Components that tie — here 0 and 2 are the same component with the same weight — give a row
// the first of them, as numpy's argmax and scikit-learn's predict do: every row's label is 0 or
// 1, never 2, in both precisions.
TEST(EngineKernelRules, PredictGivesATieToTheFirstComponent) {
  Model m;
  m.weights = {0.3, 0.4, 0.3};
  Part g = make_part(Family::gaussian_diag, 0, 1);
  g.mean = {0, 6, 0};
  g.var = {1, 1, 1};
  m.parts = {g};
  const Dataset data = sample(m, 400, 5);
  for (const char* precision : {"fp32", "fp64"}) {
    SCOPED_TRACE(precision);
    const auto resp = predict_proba(m, data, "cpu", 2, precision);
    const auto labels = predict(m, data, "cpu", 2, precision);
    std::size_t zeros = 0;
    for (std::size_t r = 0; r < data.rows(); ++r) {
      ASSERT_EQ(resp[r * 3], resp[r * 3 + 2]) << "row " << r << ": the tie this test needs";
      EXPECT_NE(labels[r], 2) << "row " << r;
      zeros += labels[r] == 0;
    }
    EXPECT_GT(zeros, 100u) << "rows near the tied components";
  }
}

TEST(EngineKernelRules, ScoreMatchesPerComponentSum) {
  // score_samples = log Σ_k exp(log w_k + log p_k(x)), with each component scored alone.
  Model m;
  m.weights = {0.25, 0.75};
  Part g = make_part(Family::gaussian_full, 0, 2);
  g.mean = {0, 0, 2, 1};
  g.cov = {2, 1, 1, 2, 1, 0, 0, 4};
  m.parts = {g};
  const Dataset data = sample(m, 300, 3);
  const auto all = score_samples(m, data);
  std::vector<std::vector<double>> single(2);
  for (std::size_t k = 0; k < 2; ++k) {
    Model mk;
    mk.weights = {1.0};
    Part pk = make_part(Family::gaussian_full, 0, 2);
    pk.mean.assign(g.mean.begin() + 2 * k, g.mean.begin() + 2 * k + 2);
    pk.cov.assign(g.cov.begin() + 4 * k, g.cov.begin() + 4 * k + 4);
    mk.parts = {pk};
    single[k] = score_samples(mk, data);
  }
  constexpr double kTol = 1e-12;  // fp64 log-sum-exp of two O(10) terms
  for (std::size_t r = 0; r < 300; ++r)
    EXPECT_NEAR(all[r], std::log(0.25 * std::exp(single[0][r]) + 0.75 * std::exp(single[1][r])), kTol);
}

// ---------------------------------------------------------------------------------------------
// Bad input through the API

FitOptions diag_options(std::size_t K = 2, const std::string& layout = "gaussian_diag") {
  FitOptions o;
  o.components = K;
  o.layout = layout;
  return o;
}

void expect_invalid(const std::function<void()>& f, const std::vector<std::string>& words) {
  try {
    f();
    FAIL() << "no InvalidInput thrown";
  } catch (const InvalidInput& e) {
    std::string msg = e.what();
    std::string lower = msg;
    std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
    for (const auto& w : words) EXPECT_NE(lower.find(w), std::string::npos) << "\"" << msg << "\" lacks " << w;
  }
}

TEST(EngineBadInput, NpyFiles) {
  test::TempDir dir("api-npy");
  const auto good = test::gaussian_values(10);
  const std::string trunc = dir.file("trunc.npy"), be = dir.file("be.npy"), fo = dir.file("fortran.npy");
  test::write_bytes(trunc, test::npy_bytes(good, 10, 2, "<f8", false, 12));
  test::write_bytes(be, test::npy_bytes(good, 10, 2, ">f8"));
  test::write_bytes(fo, test::npy_bytes(good, 10, 2, "<f8", true));
  expect_invalid([&] { fit(read_data(trunc), diag_options()); }, {"trunc.npy"});
  expect_invalid([&] { fit(read_data(be), diag_options()); }, {"be.npy", "endian"});
  expect_invalid([&] { fit(read_data(fo), diag_options()); }, {"fortran"});
}

TEST(EngineBadInput, CsvNonNumberNamesRowAndColumn) {
  test::TempDir dir("api-csv");
  const std::string path = dir.file("bad.csv");
  test::write_bytes(path, "1,2\n3,4\n5,abc\n7,8\n");
  expect_invalid([&] { read_data(path); },
                 {"bad.csv:3", "column 2", "abc"});  // the documented form: file:line: column c
}

TEST(EngineBadInput, DataValuesBreakingFamilyRules) {
  const double nan = std::nan("");
  // NaN in a Gaussian column (row 2, column 1).
  expect_invalid(
      [&] {
        fit(Dataset::from_vector(std::vector<double>{1, 2, 3, 4, 5, nan, 7, 8}, 4, 2), diag_options());
      },
      {"row 2", "column 1", "nan"});
  expect_invalid(
      [&] {
        fit(Dataset::from_vector(std::vector<double>{1, 2, 3, 4, 5, nan, 7, 8}, 4, 2),
            diag_options(2, "gaussian_full"));
      },
      {"row 2", "column 1"});
  // Categorical code 2.5 and a code ≥ V.
  expect_invalid(
      [&] {
        fit(Dataset::from_vector(std::vector<double>{0, 1, 2.5, 1}, 4, 1), diag_options(2, "categorical:0-1:3"));
      },
      {"row 2", "2.5"});
  expect_invalid(
      [&] {
        fit(Dataset::from_vector(std::vector<double>{0, 1, 3, 1}, 4, 1), diag_options(2, "categorical:0-1:3"));
      },
      {"row 2", "3"});
  expect_invalid(
      [&] {
        fit(Dataset::from_vector(std::vector<double>{0, 1, -1, 1}, 4, 1), diag_options(2, "categorical"));
      },
      {"row 2", "-1"});
  // Negative Poisson count.
  expect_invalid(
      [&] {
        fit(Dataset::from_vector(std::vector<double>{0, 1, 2, -3}, 4, 1), diag_options(2, "poisson"));
      },
      {"row 3", "-3", "poisson"});
  // Exponential needs x ≥ 0, bernoulli 0 or 1.
  expect_invalid(
      [&] {
        fit(Dataset::from_vector(std::vector<double>{0, 1, -0.5, 1}, 4, 1), diag_options(2, "exponential"));
      },
      {"row 2", "-0.5", "exponential"});
  expect_invalid(
      [&] {
        fit(Dataset::from_vector(std::vector<double>{0, 1, 1, 2}, 4, 1), diag_options(2, "bernoulli"));
      },
      {"row 3", "bernoulli"});
  // Infinity in a Gaussian column.
  expect_invalid(
      [&] {
        fit(Dataset::from_vector(std::vector<double>{0, 1, INFINITY, 1}, 4, 1), diag_options(2));
      },
      {"row 2", "inf"});
  // The same rules hold for scoring.
  Model m;
  m.weights = {1.0};
  Part c = make_part(Family::categorical, 0, 1, 3);
  c.prob = {0.25, 0.25, 0.5};
  m.parts = {c};
  expect_invalid([&] { score_samples(m, Dataset::from_vector(std::vector<double>{0, 3}, 2, 1)); }, {"row 1"});
}

TEST(EngineBadInput, SliceErrorsNameGlobalRows) {
  // A row range of a larger dataset: errors name the row in the whole dataset.
  std::vector<double> v(400, 1.0);
  v[250] = std::nan("");
  const Dataset all = Dataset::from_vector(v, 400, 1);
  expect_invalid([&] { fit(all.slice(200, 300), diag_options(2)); }, {"row 250"});
  std::vector<double> codes(400, 0.0);
  codes[321] = 2.0;
  try {
    score_samples(impossible_code_model(), Dataset::from_vector(codes, 400, 1).slice(300, 400));
    FAIL() << "no exception";
  } catch (const ImpossibleEvidence& e) {
    EXPECT_NE(std::string(e.what()).find("rows 321"), std::string::npos) << e.what();
  }
}

TEST(EngineBadInput, ModelJson) {
  expect_invalid([&] { model_from_json(test::diag_model_json("[0.5, 0.6]")); }, {"weights", "sum"});
  expect_invalid([&] { model_from_json(test::full_model_json("[[1, 2], [2, 1]]")); }, {"cov[1]", "positive definite"});
  // A categorical part's V is an integer ≥ 1, checked where the file is read.
  for (const char* categories : {"0", "-2", "\"3\"", "1.5"})
    expect_invalid(
        [&] {
          model_from_json(std::string(R"({"format":"mixle-model","version":1,"weights":[1],"parts":[
        {"family":"categorical","columns":[0,1],"categories":)") +
                          categories + R"(,"prob":[[1]]}]})");
        },
        {"\"categories\" must be an integer ≥ 1"});
  expect_invalid([&] { model_from_json(test::full_model_json("[[1, 0.5], [0, 1]]")); }, {"symmetric"});
  // Symmetric to a relative 1e-9 (what a JSON round trip of a computed covariance keeps): 5e-10
  // apart is accepted, 5e-9 apart is not.
  EXPECT_NO_THROW(model_from_json(test::full_model_json("[[1, 0.5], [0.5000000005, 1]]")));
  expect_invalid([&] { model_from_json(test::full_model_json("[[1, 0.5], [0.500000005, 1]]")); }, {"symmetric"});
  Model m = model_from_json(test::diag_model_json());
  m.weights = {0.7, 0.7};
  FitOptions o;
  o.init = InitMethod::model;
  o.init_model = m;
  expect_invalid([&] { fit(Dataset::from_vector(test::gaussian_values(10), 10, 2), o); }, {"weights"});
}

TEST(EngineBadInput, LayoutPastTheDataNamesItsLastColumn) {
  // Columns 2..4 of a 4-column file: the error names column 4 (the first one missing is 4, and
  // the range's last column is 4 too), not the half-open end 5.
  expect_invalid([&] { parse_layout("gaussian_diag:0-2,poisson:2-5", 4); },
                 {"poisson:2-5", "column 4 is past the data's 4 columns"});
  expect_invalid([&] { parse_layout("gaussian_diag:1-1", 4); }, {"empty column range"});
  EXPECT_EQ(parse_layout("gaussian_diag:0-2,poisson:2-4", 4).size(), 2u);
}

TEST(EngineRegistry, DiscreteFamiliesAreThoseOfIntegerColumns) {
  for (const Family f : {Family::categorical, Family::poisson, Family::bernoulli})
    EXPECT_TRUE(family_is_discrete(f)) << family_name(f);
  for (const Family f : {Family::gaussian_diag, Family::gaussian_full, Family::exponential})
    EXPECT_FALSE(family_is_discrete(f)) << family_name(f);
}

TEST(EngineBadInput, ComponentCounts) {
  const Dataset data = Dataset::from_vector(test::gaussian_values(5), 5, 2);
  expect_invalid([&] { fit(data, diag_options(6)); }, {"6", "5 data rows"});
  expect_invalid([&] { fit(data, diag_options(0)); }, {"components"});
  FitOptions o = diag_options(6);
  o.init = InitMethod::select;
  expect_invalid([&] { fit(data, o); }, {"6"});
}

}  // namespace
}  // namespace mixle
