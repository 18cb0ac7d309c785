// Empty components restarted from the worst-explained rows (`--empty reseed`): which rows, the
// parameters they give (a naive mean and variance of those rows as the oracle), the weights,
// every Gaussian covariance type, sample weights (= replicated rows), two ranks (= one), the EM
// loop's warnings and stopping rule, and the refusal under component sharding.
#include "common/json_numbers.hpp"
#include "common/thread_ranks.hpp"
#include "engine_test_util.hpp"

#include "engine/component_sharded.hpp"
#include "engine/distributed_handle.hpp"
#include "engine/em.hpp"
#include "engine/local_handle.hpp"
#include "engine/reseed.hpp"

#include <mixle/fit.hpp>

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

namespace mixle {
namespace {

using engine::EmptyPolicy;

constexpr std::size_t kPerCluster = 600;

/// Rows of 2 columns: `centres.size()` clusters of kPerCluster rows each, N(centre, 1) per column.
std::vector<double> clusters(const std::vector<std::pair<double, double>>& centres, std::uint64_t seed = 5) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> noise(0.0, 1.0);
  std::vector<double> v;
  for (const auto& [x, y] : centres)
    for (std::size_t r = 0; r < kPerCluster; ++r) v.insert(v.end(), {x + noise(rng), y + noise(rng)});
  return v;
}

/// Naive mean and population variance of column c over cluster i's rows.
std::pair<double, double> cluster_moments(const std::vector<double>& v, std::size_t i, std::size_t c) {
  double sum = 0.0;
  for (std::size_t r = 0; r < kPerCluster; ++r) sum += v[(i * kPerCluster + r) * 2 + c];
  const double mean = sum / kPerCluster;
  double ss = 0.0;
  for (std::size_t r = 0; r < kPerCluster; ++r) {
    const double d = v[(i * kPerCluster + r) * 2 + c] - mean;
    ss += d * d;
  }
  return {mean, ss / kPerCluster};
}

/// K components over 2 columns of `family`: components 0 and 1 on clusters at (0, 0) and (8, 0),
/// the others far from every row (they capture none).
Model start_model(const std::string& family, std::size_t K) {
  std::string means = "[[0,0],[8,0]", spread;
  for (std::size_t k = 2; k < K; ++k) means += ",[1000,1000]";
  means += "]";
  std::string weights = "[0.5,0.5";
  for (std::size_t k = 2; k < K; ++k) weights += ",0";
  weights += "]";
  auto repeat = [&](const std::string& one) {
    std::string all = "[";
    for (std::size_t k = 0; k < K; ++k) all += (k ? "," : "") + one;
    return all + "]";
  };
  if (family == "gaussian_diag") spread = R"("var":)" + repeat("[1,1]");
  if (family == "gaussian_spherical") spread = R"("var":)" + repeat("1");
  if (family == "gaussian_full" || family == "gaussian_tied") spread = R"("cov":)" + repeat("[[1,0.2],[0.2,1]]");
  return model_from_json(R"({"format":"mixle-model","version":1,"weights":)" + weights + R"(,"parts":[{"family":")" +
                         family + R"(","columns":[0,2],"mean":)" + means + "," + spread + "}]}");
}

engine::EstimatorOptions fp64() {
  engine::EstimatorOptions o;
  o.precision = engine::Precision::fp64;
  return o;
}

/// One E-step and M-step of `model` on `handle`.
engine::MStepResult em_step(engine::EncodedData& handle, const Model& model) {
  const engine::Statistics s = handle.stream_accumulate(model, fp64());
  return engine::m_step(model, s.values, engine::shift_table(model, engine::Precision::fp64), fp64());
}

TEST(Reseed, BadnessBinsOrderRowsFromBestToWorstExplained) {
  using engine::badness_bin;
  const std::size_t zero = engine::kBadnessZero;
  EXPECT_EQ(badness_bin(0.0), zero);
  // u = −log p = 1: floor(8 log2 2) = 8 above zero; u = 3: 16; u = −1 (density e): 8 below.
  EXPECT_EQ(badness_bin(-1.0), zero + 8);
  EXPECT_EQ(badness_bin(-3.0), zero + 16);
  EXPECT_EQ(badness_bin(1.0), zero - 8);
  EXPECT_EQ(badness_bin(-1e-9), zero);
  EXPECT_EQ(badness_bin(1e-9), zero - 1);
  // The lowest bins: density 2^63.8 (u = −2^63.8: floor(−510.4) = −511) is bin 1, 2^63.9 bin 0.
  EXPECT_EQ(badness_bin(std::exp2(63.8)), 1u);
  EXPECT_EQ(badness_bin(std::exp2(63.9)), 0u);
  std::size_t previous = 0;
  for (double l = 1e300; l > -1e300; l = l > 1e-6 ? l / 1.7 : l > -1e-6 ? -1e-6 : l * 1.7) {
    const std::size_t bin = badness_bin(l);
    EXPECT_GE(bin, previous) << l;
    EXPECT_LT(bin, engine::kBadnessBins);
    previous = bin;
  }
  EXPECT_EQ(badness_bin(-std::numeric_limits<double>::infinity()), engine::kBadnessBins - 1);
  EXPECT_EQ(badness_bin(std::numeric_limits<double>::infinity()), 0u);
  EXPECT_EQ(badness_bin(std::nan("")), 0u);
}

TEST(Reseed, TheWorstBinsHoldingTheWantedWeightAreTaken) {
  using engine::first_worst_bin;
  const std::vector<double> weight_in{4.0, 0.0, 3.0, 2.0};
  EXPECT_EQ(first_worst_bin(weight_in, 2.0), 3u);  // the worst bin alone holds it
  EXPECT_EQ(first_worst_bin(weight_in, 2.5), 2u);  // 2 < 2.5 ≤ 2 + 3
  EXPECT_EQ(first_worst_bin(weight_in, 5.0), 2u);
  EXPECT_EQ(first_worst_bin(weight_in, 5.5), 0u);  // the empty bin 1 adds nothing
  EXPECT_EQ(first_worst_bin(weight_in, 100.0), 0u);
  EXPECT_EQ(first_worst_bin({0.0, 1.0, 0.0}, 0.0), 1u);  // some weight, even when none is wanted
  EXPECT_EQ(first_worst_bin({0.0, 0.0}, 0.0), 0u);
}

// Clusters A (0, 0), B (8, 0) and C (−40, 5), 600 rows each; components 0 and 1 sit on A and B,
// component 2 far away. Under that model (the one the E-step evaluated; its M-step moves
// component 0 towards C) C's rows are the worst explained by hundreds of nats, and they hold
// exactly the 1/K of the weight a reseed takes: component 2 must become C's naive mean and
// variance.
TEST(Reseed, AnEmptyComponentTakesTheWorstExplainedRowsMeanAndSpreadForEveryCovarianceType) {
  const std::vector<double> v = clusters({{0, 0}, {8, 0}, {-40, 5}});
  for (const std::string family : {"gaussian_diag", "gaussian_spherical", "gaussian_full", "gaussian_tied"}) {
    SCOPED_TRACE(family);
    engine::LocalEncodedData handle(Dataset::from_vector(v, 3 * kPerCluster, 2), engine::make_cpu_compute(1));
    Model evaluated = start_model(family, 3);
    const engine::MStepResult next = em_step(handle, evaluated);
    ASSERT_EQ(next.empty_components, std::vector<std::size_t>{2});
    Model model = next.model;
    const std::vector<double> before = model.weights;
    const std::vector<double> cov_before = model.parts[0].cov;
    const engine::Reseeded r = engine::reseed_component(handle, evaluated, model, 2, fp64(), 1);
    EXPECT_EQ(r.component, 2u);
    EXPECT_EQ(r.rows, static_cast<double>(kPerCluster));
    EXPECT_DOUBLE_EQ(r.weight, 1.0 / 3.0);
    EXPECT_DOUBLE_EQ(model.weights[2], 1.0 / 3.0);
    for (std::size_t k = 0; k < 2; ++k) EXPECT_NEAR(model.weights[k], before[k] * 2.0 / 3.0, 1e-15);
    const Part& p = model.parts[0];
    const auto [mx, vx] = cluster_moments(v, 2, 0);
    const auto [my, vy] = cluster_moments(v, 2, 1);
    EXPECT_NEAR(p.mean[4], mx, 1e-12);
    EXPECT_NEAR(p.mean[5], my, 1e-12);
    EXPECT_EQ(evaluated.parts[0].mean[4], p.mean[4]);  // the scoring model has it too
    EXPECT_DOUBLE_EQ(evaluated.weights[2], 1.0 / 3.0);
    const double reg = fp64().m_step.reg_covar;
    if (family == "gaussian_diag") {
      EXPECT_NEAR(p.var[4], vx + reg, 1e-10);
      EXPECT_NEAR(p.var[5], vy + reg, 1e-10);
    } else if (family == "gaussian_spherical") {
      EXPECT_NEAR(p.var[2], (vx + vy) / 2 + reg, 1e-10);
    } else if (family == "gaussian_full") {
      EXPECT_NEAR(p.cov[8], vx + reg, 1e-10);
      EXPECT_NEAR(p.cov[11], vy + reg, 1e-10);
    } else {
      EXPECT_EQ(p.cov, cov_before);  // the tied covariance is shared: the reseed leaves it as it was
    }
    EXPECT_NO_THROW(validate_model(model));
  }
  engine::LocalEncodedData handle(Dataset::from_vector(v, 3 * kPerCluster, 2), engine::make_cpu_compute(1));
  Model three = start_model("gaussian_diag", 3), four = start_model("gaussian_diag", 4);
  test::expect_invalid_input([&] { engine::reseed_component(handle, three, three, 3, fp64(), 1); },
                             {"component 3 of a 3-component model"});
  test::expect_invalid_input([&] { engine::reseed_component(handle, four, three, 2, fp64(), 1); }, {"reseed"});
}

// A tied model's reseed keeps the shared covariance by pooling it from one other component: for
// component 0 that is component 1 (the pooled matrix of no component would leave component 0
// with its own).
TEST(Reseed, TheFirstComponentOfATiedModelKeepsTheSharedCovariance) {
  const std::vector<double> v = clusters({{0, 0}, {8, 0}, {-40, 5}});
  engine::LocalEncodedData handle(Dataset::from_vector(v, 3 * kPerCluster, 2), engine::make_cpu_compute(1));
  Model evaluated = start_model("gaussian_tied", 2);
  Model model = em_step(handle, evaluated).model;
  const std::vector<double> cov_before = model.parts[0].cov;
  engine::reseed_component(handle, evaluated, model, 0, fp64(), 1);
  EXPECT_EQ(model.parts[0].cov, cov_before);
  EXPECT_NO_THROW(validate_model(model));
}

// Two empty components and two unexplained clusters: the first reseed takes the worse one (E,
// hundreds of units away), and the second, scoring under the model that now explains E, takes C.
TEST(Reseed, SeveralEmptyComponentsAreSpreadOverDifferentRows) {
  const std::vector<double> v = clusters({{0, 0}, {8, 0}, {-40, 5}, {200, -200}});
  engine::LocalEncodedData handle(Dataset::from_vector(v, 4 * kPerCluster, 2), engine::make_cpu_compute(1));
  Model evaluated = start_model("gaussian_diag", 4);
  const engine::MStepResult next = em_step(handle, evaluated);
  ASSERT_EQ(next.empty_components, (std::vector<std::size_t>{2, 3}));
  Model model = next.model;
  engine::reseed_component(handle, evaluated, model, 2, fp64(), 1);
  engine::reseed_component(handle, evaluated, model, 3, fp64(), 1);
  EXPECT_NEAR(model.parts[0].mean[4], cluster_moments(v, 3, 0).first, 1e-12);
  EXPECT_NEAR(model.parts[0].mean[6], cluster_moments(v, 2, 0).first, 1e-12);
  double sum = 0.0;
  for (double w : model.weights) sum += w;
  EXPECT_NEAR(sum, 1.0, 1e-15);
}

FitOptions from_model(const Model& initial, const std::string& empty) {
  FitOptions o;
  o.init = InitMethod::model;
  o.init_model = initial;
  o.precision = "fp64";
  o.threads = 1;
  o.max_iter = 50;
  o.tol = 1e-10;
  o.empty = empty;
  return o;
}

bool any_warning(const std::vector<std::string>& warnings, const std::string& text) {
  return std::any_of(warnings.begin(), warnings.end(),
                     [&](const std::string& w) { return w.find(text) != std::string::npos; });
}

// Through fit(): with 'keep' the third cluster stays unmodelled; with 'reseed' the fit finds all
// three clusters (means at their naive means), explains the data better, and says what it did.
TEST(Reseed, AFitThatReseedsFindsTheClusterThatKeepLeavesUnmodelled) {
  const std::vector<double> v = clusters({{0, 0}, {8, 0}, {-40, 5}});
  const Dataset data = Dataset::from_vector(v, 3 * kPerCluster, 2);
  const FitResult kept = fit(data, from_model(start_model("gaussian_diag", 3), "keep"));
  const FitResult reseeded = fit(data, from_model(start_model("gaussian_diag", 3), "reseed"));
  EXPECT_EQ(kept.model.weights[2], 0.0);
  EXPECT_TRUE(any_warning(kept.warnings, "component 2 captured no rows at iteration 1; it keeps")) << kept.warnings[0];
  EXPECT_TRUE(any_warning(reseeded.warnings,
                          "component 2 captured no rows at iteration 1; reseeded from the 600 worst-explained rows "
                          "(weight 0.3333)"));
  EXPECT_GT(reseeded.final_mean_loglik, kept.final_mean_loglik + 1.0);
  ASSERT_TRUE(reseeded.converged);
  for (std::size_t k = 0; k < 3; ++k) {
    EXPECT_NEAR(reseeded.model.weights[k], 1.0 / 3.0, 1e-6) << k;
    EXPECT_NEAR(reseeded.model.parts[0].mean[2 * k], cluster_moments(v, k, 0).first, 1e-4) << k;
    EXPECT_NEAR(reseeded.model.parts[0].mean[2 * k + 1], cluster_moments(v, k, 1).first, 1e-4) << k;
  }
  EXPECT_THROW(fit(data, from_model(start_model("gaussian_diag", 3), "split")), InvalidInput);
}

// Integer sample weights are replicated rows, for the reseed's choice and M-step as for EM.
TEST(Reseed, IntegerWeightsReseedAsReplicatedRows) {
  const std::vector<double> v = clusters({{0, 0}, {8, 0}, {-40, 5}});
  const std::size_t N = 3 * kPerCluster;
  std::vector<double> weights(N), replicated;
  for (std::size_t r = 0; r < N; ++r) {
    weights[r] = static_cast<double>(r % 4);  // weight 0: a row left out
    for (int copy = 0; copy < static_cast<int>(weights[r]); ++copy)
      replicated.insert(replicated.end(), {v[2 * r], v[2 * r + 1]});
  }
  const FitOptions o = from_model(start_model("gaussian_diag", 3), "reseed");
  const FitResult weighted = fit(Dataset::from_vector(v, N, 2).with_weights(weights), o);
  const FitResult copies = fit(Dataset::from_vector(replicated, replicated.size() / 2, 2), o);
  EXPECT_TRUE(any_warning(weighted.warnings, "reseeded from the 900 worst-explained rows"));
  ASSERT_EQ(weighted.iterations, copies.iterations);
  const std::vector<double> a = test::model_numbers(weighted.model), b = test::model_numbers(copies.model);
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], b[i], 1e-12 * std::max(1.0, std::abs(b[i]))) << i;
}

// Two ranks holding halves of the rows reseed the same rows and fit the one-rank model.
TEST(Reseed, TwoRanksReseedAsOne) {
  const std::vector<double> v = clusters({{0, 0}, {8, 0}, {-40, 5}});
  const Dataset all = Dataset::from_vector(v, 3 * kPerCluster, 2);
  engine::EmOptions em;
  em.max_iter = 30;
  em.tol = 1e-10;
  em.estimator = fp64();
  em.empty = EmptyPolicy::reseed;
  em.threads = 1;
  engine::LocalEncodedData one(all, engine::make_cpu_compute(1));
  const engine::EmResult single = engine::run_em(one, start_model("gaussian_diag", 3), em);
  std::vector<engine::EmResult> ranks(2);
  const std::size_t half = all.rows() / 2 + 7;  // an uneven split through cluster B
  const std::vector<std::string> errors = test::on_thread_ranks(2, [&](std::size_t r, comms::Communicator& comm) {
    engine::DistributedEncodedData handle(all.slice(r ? half : 0, r ? all.rows() : half), all.rows(), r ? half : 0,
                                          comm, engine::make_cpu_compute(1));
    ranks[r] = engine::run_em(handle, start_model("gaussian_diag", 3), em);
  });
  const std::vector<double> expected = test::model_numbers(single.model);
  for (std::size_t r = 0; r < 2; ++r) {
    ASSERT_EQ(errors[r], "") << r;
    EXPECT_TRUE(any_warning(ranks[r].warnings, "reseeded from the 600 worst-explained rows"));
    EXPECT_EQ(ranks[r].iterations, single.iterations);
    const std::vector<double> got = test::model_numbers(ranks[r].model);
    ASSERT_EQ(got.size(), expected.size());
    for (std::size_t i = 0; i < got.size(); ++i)
      EXPECT_NEAR(got[i], expected[i], 1e-9 * std::max(1.0, std::abs(expected[i]))) << r << " " << i;
  }
}

// The EM loop never stops at an iteration that reseeded (its model has not been through an
// E-step yet), and warns once per reseed, naming the rows.
TEST(Reseed, TheEmLoopDoesNotStopAtAnIterationThatReseeded) {
  const Model initial = start_model("gaussian_diag", 3);
  engine::EmOptions em;
  em.max_iter = 10;
  em.tol = 1e9;  // any change is small enough: only the reseed keeps EM going
  int calls = 0;
  const engine::EmResult r = engine::run_em_steps(initial, em, [&](const Model& model) {
    ++calls;
    engine::IterationStep step{100.0, -250.0, engine::MStepResult{model, {}}, {}};
    if (calls == 2) {
      step.next.empty_components = {2};
      step.reseeded = {engine::Reseeded{2, 30.0, 0.3}};
    }
    return step;
  });
  EXPECT_EQ(r.iterations, 3);
  EXPECT_TRUE(r.converged);
  ASSERT_EQ(r.warnings.size(), 1u);
  EXPECT_EQ(r.warnings[0],
            "component 2 captured no rows at iteration 2; reseeded from the 30 worst-explained rows "
            "(weight 0.3)");
}

// The reseed warning writes a row count or weight as an integer while it is one below 10^15
// (every digit exact), and otherwise in four significant digits.
TEST(Reseed, TheWarningWritesWholeNumbersBelow1e15InFullAndOthersInFourDigits) {
  const Model initial = start_model("gaussian_diag", 3);
  engine::EmOptions em;
  em.max_iter = 3;
  em.tol = 0.0;
  int calls = 0;
  const engine::EmResult r = engine::run_em_steps(initial, em, [&](const Model& model) {
    ++calls;
    engine::IterationStep step{100.0, -250.0, engine::MStepResult{model, {}}, {}};
    step.next.empty_components = {2};
    if (calls == 1) step.reseeded = {engine::Reseeded{2, 999999999999999.0, 1e15}};
    if (calls == 2) step.reseeded = {engine::Reseeded{2, 12345.5, 0.25}};
    if (calls == 3) step.reseeded = {engine::Reseeded{2, 3.0, 2e15}};
    return step;
  });
  ASSERT_EQ(r.warnings.size(), 3u);
  EXPECT_EQ(r.warnings[0],
            "component 2 captured no rows at iteration 1; reseeded from the 999999999999999 worst-explained rows "
            "(weight 1e+15)");
  EXPECT_EQ(r.warnings[1],
            "component 2 captured no rows at iteration 2; reseeded from the 1.235e+04 worst-explained rows "
            "(weight 0.25)");
  EXPECT_EQ(r.warnings[2],
            "component 2 captured no rows at iteration 3; reseeded from the 3 worst-explained rows (weight 2e+15)");
}

/// A handle whose every E-step finds component 2 empty (its share of the rows dropped).
class LosesComponentTwo : public engine::LocalEncodedData {
 public:
  using LocalEncodedData::LocalEncodedData;
  engine::Statistics stream_accumulate(const Model& model, const engine::EstimatorOptions& options) override {
    engine::Statistics s = LocalEncodedData::stream_accumulate(model, options);
    const engine::StatLayout layout = engine::stat_layout(model);
    s.values[kernels::kStatHeader + 2] = 0.0;
    for (int i = 0; i < layout.part_stride[0]; ++i)
      s.values[layout.part_offset[0] + 2 * layout.part_stride[0] + i] = 0.0;
    return s;
  }
};

// A component that empties again after its reseed is kept at weight 0 and warned about once:
// one reseed per component and run, so EM cannot reseed forever.
TEST(Reseed, AComponentIsReseededOncePerRun) {
  const std::vector<double> v = clusters({{0, 0}, {8, 0}, {-40, 5}});
  LosesComponentTwo handle(Dataset::from_vector(v, 3 * kPerCluster, 2), engine::make_cpu_compute(1));
  engine::EmOptions em;
  em.max_iter = 5;
  em.tol = 0.0;
  em.estimator = fp64();
  em.empty = EmptyPolicy::reseed;
  const engine::EmResult r = engine::run_em(handle, start_model("gaussian_diag", 3), em);
  ASSERT_EQ(r.warnings.size(), 2u) << r.warnings.back();
  EXPECT_NE(r.warnings[0].find("iteration 1; reseeded"), std::string::npos) << r.warnings[0];
  EXPECT_NE(r.warnings[1].find("iteration 2; it keeps its previous parameters"), std::string::npos) << r.warnings[1];
  EXPECT_EQ(r.model.weights[2], 0.0);
}

// All rows alike: every row is in one badness bin, so a reseed's rows are all of them; its weight
// is capped at 1/K, and the two empty components take 1/3 each in turn (component 0 keeps
// (2/3)², component 1 (1/3)(2/3)). The components are then identical and EM keeps the weights.
TEST(Reseed, RowsAllAlikeGiveEachReseedAtMostOneKthOfTheWeight) {
  std::vector<double> v;
  for (int r = 0; r < 500; ++r) v.insert(v.end(), {2.5, -1.0});
  FitOptions o;
  o.components = 3;
  o.precision = "fp64";
  o.threads = 1;
  o.max_iter = 10;
  o.empty = "reseed";
  const FitResult r = fit(Dataset::from_vector(v, 500, 2), o);
  ASSERT_EQ(r.warnings.size(), 2u);
  EXPECT_NE(r.warnings[1].find("component 2 captured no rows at iteration 1; reseeded from the 500 worst-explained "
                               "rows (weight 0.3333)"),
            std::string::npos)
      << r.warnings[1];
  EXPECT_NEAR(r.model.weights[0], 4.0 / 9.0, 1e-12);
  EXPECT_NEAR(r.model.weights[1], 2.0 / 9.0, 1e-12);
  EXPECT_NEAR(r.model.weights[2], 1.0 / 3.0, 1e-12);
  for (std::size_t k = 0; k < 3; ++k) EXPECT_NEAR(r.model.parts[0].mean[2 * k], 2.5, 1e-12) << k;
}

TEST(Reseed, ComponentShardingRefusesIt) {
  const std::vector<double> v = clusters({{0, 0}, {8, 0}, {-40, 5}});
  FitOptions o = from_model(start_model("gaussian_diag", 3), "reseed");
  o.backend = "component_sharded";
  o.num_workers = 2;
  test::expect_invalid_input([&] { fit(Dataset::from_vector(v, 3 * kPerCluster, 2), o); },
                             {"'reseed'", "component sharding", "'keep'"});
  // Refused before any work: with fewer rows than components it is the option, not the
  // initialisation's shortfall, that the fit names.
  FitOptions drawn = o;
  drawn.init = InitMethod::kmeanspp;
  drawn.init_model.reset();
  drawn.components = 3;
  test::expect_invalid_input(
      [&] {
        fit(Dataset::from_vector(std::vector<double>{0.0, 0.0, 1.0, 1.0}, 2, 2), drawn);
      },
      {"'reseed'", "component sharding"});
}

}  // namespace
}  // namespace mixle
