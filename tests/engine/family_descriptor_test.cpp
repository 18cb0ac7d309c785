// Family descriptors are the one statement of a family's shape: the registry finds every family
// by name and enum, and what the descriptors say — parameter shapes, statistics sizes, free
// parameters — matches what the engine really allocates, packs and counts.
#include "engine/estimator.hpp"
#include "engine/families/family_ops.hpp"
#include "engine/model_summary.hpp"

#include <mixle/error.hpp>
#include <mixle/family.hpp>
#include <mixle/model.hpp>

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <set>
#include <vector>
#include <string>

namespace mixle {
namespace {

TEST(FamilyDescriptors, RegistryFindsEveryFamilyByNameAndEnum) {
  std::set<std::string> names;
  for (const FamilyDescriptor* d : family_descriptors()) {
    ASSERT_NE(d, nullptr);
    EXPECT_EQ(&family_descriptor(d->family), d) << d->name;
    EXPECT_EQ(find_family(d->name), d);
    EXPECT_EQ(family_from_name(d->name), d->family);
    EXPECT_STREQ(family_name(d->family), d->name);
    EXPECT_EQ(&engine::family_ops(d->family).descriptor(), d) << d->name;
    EXPECT_FALSE(d->params.empty()) << d->name;
    EXPECT_NE(std::string(d->summary), "") << d->name;
    names.insert(d->name);
    EXPECT_NE(family_names().find(d->name), std::string::npos);
  }
  EXPECT_EQ(names.size(), family_descriptors().size()) << "names are unique";
  EXPECT_EQ(names.size(), 10u);
  EXPECT_EQ(find_family("gaussian"), nullptr);
  EXPECT_THROW(engine::family_ops(static_cast<Family>(family_descriptors().size())), InvalidInput);
  try {
    family_from_name("gaussian");
    FAIL() << "an unknown name is refused";
  } catch (const InvalidInput& e) {
    EXPECT_NE(std::string(e.what()).find(family_names()), std::string::npos) << e.what();
  }
}

// A shifted family packs its shift — its mean — as its first D coefficients, so the range check
// of the packed coefficients (pack_model) covers the shifts too: a mean float32 cannot hold is
// refused there, whichever part it is in.
TEST(FamilyDescriptors, AShiftedFamilysShiftIsItsFirstCoefficients) {
  constexpr std::size_t K = 2, D = 3;
  int shifted = 0;
  for (const FamilyDescriptor* d : family_descriptors()) {
    if (!d->shifted) continue;
    ++shifted;
    Part p;
    p.family = d->family;
    p.col_begin = 0;
    p.col_end = D;
    const engine::FamilyOps& ops = engine::family_ops(d->family);
    ops.resize(p, K);
    for (std::size_t i = 0; i < p.mean.size(); ++i) p.mean[i] = 1.5 + static_cast<double>(i);
    for (std::size_t k = 0; k < K; ++k) {
      std::vector<double> shift(D), coef(static_cast<std::size_t>(ops.coef_stride(p)));
      ASSERT_GE(coef.size(), D) << d->name;
      ops.shift(p, k, shift.data());
      (void)ops.pack(p, k, coef.data());
      for (std::size_t j = 0; j < D; ++j) {
        EXPECT_EQ(shift[j], p.mean[k * D + j]) << d->name << " component " << k;
        EXPECT_EQ(coef[j], shift[j]) << d->name << " component " << k << " coefficient " << j;
      }
    }
  }
  EXPECT_EQ(shifted, 5);  // gaussian_diag, _full, _spherical, _tied and lognormal
}

// A family's coefficient stride is exactly what it packs: every one of the coef_stride values of
// a component is written (none left as padding for the kernels to step over).
TEST(FamilyDescriptors, PackingFillsTheWholeCoefficientStride) {
  constexpr std::size_t K = 2, D = 3, V = 4;
  for (const FamilyDescriptor* d : family_descriptors()) {
    Part p;
    p.family = d->family;
    p.col_begin = 0;
    p.col_end = D;
    p.categories = d->categories ? V : 0;
    const engine::FamilyOps& ops = engine::family_ops(d->family);
    ops.resize(p, K);
    for (std::size_t k = 0; k < K; ++k) {
      std::vector<double> coef(static_cast<std::size_t>(ops.coef_stride(p)), std::numeric_limits<double>::quiet_NaN());
      ASSERT_FALSE(coef.empty()) << d->name;
      (void)ops.pack(p, k, coef.data());
      for (std::size_t j = 0; j < coef.size(); ++j)
        EXPECT_FALSE(std::isnan(coef[j]))
            << d->name << " component " << k << ": coefficient " << j << " of " << coef.size() << " not written";
    }
  }
}

// A model with one part of every family, D = 3 columns each (V = 4 for categorical), K = 2:
// the planner's bytes (from descriptors) equal the engine's parameter arrays and statistics
// buffer, and the free parameters follow the families' formulas.
TEST(FamilyDescriptors, SizesMatchWhatTheEngineAllocates) {
  constexpr std::size_t K = 2, D = 3, V = 4;
  Model model;
  model.weights = {0.5, 0.5};
  std::size_t column = 0;
  for (const FamilyDescriptor* d : family_descriptors()) {
    Part p;
    p.family = d->family;
    p.col_begin = column;
    p.col_end = column += D;
    p.categories = d->categories ? V : 0;
    engine::family_ops(d->family).resize(p, K);
    model.parts.push_back(p);
  }
  std::uint64_t values = K;  // the weights
  for (const Part& p : model.parts)
    for (const ParamDescriptor& param : family_descriptor(p.family).params) {
      EXPECT_EQ((p.*param.values).size(),
                K * static_cast<std::size_t>(param_values(param.shape, D, static_cast<std::int64_t>(p.categories))))
          << family_name(p.family) << "." << param.name;
      values += (p.*param.values).size();
    }
  const plan::ModelSummary summary = engine::summarise(model);
  ASSERT_NO_THROW(summary.validate());
  EXPECT_EQ(summary.parameter_bytes(), 8 * values);
  EXPECT_EQ(summary.statistic_bytes(), 8 * static_cast<std::uint64_t>(engine::stat_layout(model).size));
  // diag 2D, full D + D(D+1)/2, categorical D(V−1), poisson, exponential, bernoulli D each,
  // gamma and lognormal 2D each, gaussian_spherical D + 1 per component; gaussian_tied D per
  // component and one shared covariance, D(D+1)/2.
  EXPECT_EQ(
      model.free_parameters(),
      (K - 1) + K * (2 * D + (D + D * (D + 1) / 2) + D * (V - 1) + 3 * D + 2 * 2 * D + (D + 1) + D) + D * (D + 1) / 2);
}

// A model with no components (a default-constructed one) has no weights to choose and no parts:
// no free parameters and no columns.
TEST(FamilyDescriptors, AnEmptyModelHasNoFreeParameters) {
  EXPECT_EQ(Model{}.free_parameters(), 0u);
  EXPECT_EQ(Model{}.columns(), 0u);
}

// Every parameter array of every family must hold exactly its shape's values: one fewer or one
// more is refused naming the array, before any kernel reads past its end.
TEST(FamilyDescriptors, EveryParameterArrayOfTheWrongSizeIsRefused) {
  constexpr std::size_t K = 2, D = 3, V = 4;
  for (const FamilyDescriptor* d : family_descriptors()) {
    Part p;
    p.family = d->family;
    p.col_end = D;
    p.categories = d->categories ? V : 0;
    engine::family_ops(d->family).resize(p, K);
    const Model valid{{0.5, 0.5}, {p}};
    ASSERT_NO_THROW(validate_model(valid)) << d->name;
    for (const ParamDescriptor& param : d->params)
      for (const bool longer : {false, true}) {
        Model wrong = valid;
        std::vector<double>& values = wrong.parts[0].*param.values;
        if (longer)
          values.push_back(values.back());
        else
          values.pop_back();
        try {
          validate_model(wrong);
          ADD_FAILURE() << d->name << "." << param.name << " one value " << (longer ? "longer" : "shorter");
        } catch (const InvalidInput& e) {
          EXPECT_NE(std::string(e.what()).find(param.name), std::string::npos) << e.what();
        }
      }
  }
}

// A layout summarises like the model it initialises; a categorical part whose V comes from the
// data counts with the V given for unknown ones.
TEST(FamilyDescriptors, LayoutSummariesCountUnknownCategories) {
  const plan::ModelSummary s = engine::summarise(3, parse_layout("gaussian_full:0-2,categorical:2-4", 4), 5);
  ASSERT_EQ(s.parts.size(), 2u);
  EXPECT_EQ(s.components, 3u);
  EXPECT_EQ(s.parts[0].family, "gaussian_full");
  EXPECT_EQ(s.parts[0].dims, 2u);
  EXPECT_EQ(s.parts[0].categories, 0u);
  EXPECT_EQ(s.parts[1].dims, 2u);  // columns [2, 4): its width, wherever it starts
  EXPECT_EQ(s.parts[1].categories, 5u);
  EXPECT_EQ(engine::summarise(3, parse_layout("categorical:0-2:7", 2), 5).parts[0].categories, 7u);
}

// A fit's planned model: its initial model when it starts from one (K from the file, whatever
// --components says), else its layout with categories not yet read counted as 2.
TEST(FamilyDescriptors, FitOptionsSummariseTheModelToBeFitted) {
  FitOptions o;
  o.components = 5;
  o.layout = "gaussian_diag:0-2,categorical:2-3";
  plan::ModelSummary s = engine::summarise(o, 3);
  EXPECT_EQ(s.components, 5u);
  ASSERT_EQ(s.parts.size(), 2u);
  EXPECT_EQ(s.parts[1].categories, engine::kUnreadCategories);
  EXPECT_EQ(engine::kUnreadCategories, 2u);
  Model start{{0.5, 0.5}, {Part{}}};
  start.parts[0].family = Family::poisson;
  start.parts[0].col_begin = 0;
  start.parts[0].col_end = 3;
  start.parts[0].rate = {1, 2, 3, 4, 5, 6};
  o.init_model = start;
  // An initial model that is not used (init is not InitMethod::model) is not what is fitted.
  o.init = InitMethod::kmeanspp;
  EXPECT_EQ(engine::summarise(o, 3).components, 5u);
  o.init = InitMethod::model;
  s = engine::summarise(o, 3);
  EXPECT_EQ(s.components, 2u);
  ASSERT_EQ(s.parts.size(), 1u);
  EXPECT_EQ(s.parts[0].family, "poisson");
  EXPECT_EQ(s.parts[0].dims, 3u);
}

// A value a family refuses is written with every digit that tells it apart (17 significant
// digits): a count a hair above 2.5 must not read as 2.5.
TEST(FamilyDescriptors, ARefusedValueIsWrittenToEveryDigit) {
  Part p;
  p.family = Family::poisson;
  p.col_begin = 0;
  p.col_end = 1;
  const Dataset d = Dataset::from_vector(std::vector<double>{1.0, std::nextafter(2.5, 3.0)}, 2, 1);
  try {
    engine::family_ops(Family::poisson).check_data(p, d);
    ADD_FAILURE() << "a fractional count accepted";
  } catch (const InvalidInput& e) {
    EXPECT_NE(std::string(e.what()).find("row 1, column 0: value 2.5000000000000004 is not valid for poisson"),
              std::string::npos)
        << e.what();
  }
}

// The benchmark's work model reads as it always has (bench reports carry these strings).
TEST(FamilyDescriptors, FlopFormulas) {
  EXPECT_EQ(flop_formula(family_descriptor(Family::gaussian_diag).flops), "8*N*K*D");
  // gaussian_tied: gaussian_full's kernels, so its work (the pooling is per component, not per row).
  for (const Family f : {Family::gaussian_full, Family::gaussian_tied})
    EXPECT_EQ(flop_formula(family_descriptor(f).flops), "4*N*K*D^2 + 4*N*K*D") << family_name(f);
  EXPECT_EQ(flop_formula(family_descriptor(Family::categorical).flops), "2*N*K*D");
  for (const Family f : {Family::poisson, Family::exponential, Family::bernoulli})
    EXPECT_EQ(flop_formula(family_descriptor(f).flops), "4*N*K*D") << family_name(f);
  // gamma: E (α−1)·log x − β·x, M Σ r x and Σ r log x; lognormal: gaussian_diag's on log x.
  // gaussian_spherical: gaussian_diag's kernels, so its work.
  for (const Family f : {Family::gamma, Family::lognormal, Family::gaussian_spherical})
    EXPECT_EQ(flop_formula(family_descriptor(f).flops), "8*N*K*D") << family_name(f);
  EXPECT_EQ(flop_formula({.per_column = 1, .per_category = 3}), "1*N*K*D + 3*N*K*D*V");
  EXPECT_EQ(flop_formula({.per_component = 5}), "5*N*K");
  EXPECT_EQ(flop_formula({.per_component = 2, .per_column_pair = 1}), "1*N*K*D^2 + 2*N*K");
}

}  // namespace
}  // namespace mixle
