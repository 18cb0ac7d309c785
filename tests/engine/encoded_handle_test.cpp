// The encoded-data handle's own operations (the reference's contract: statistics as a monoid,
// estimate = one EM step, initialize), checked against naive computations, and the compute
// backends' device names.
#include "engine_test_util.hpp"

#include "engine/compute.hpp"
#include "engine/encoded_data.hpp"
#include "engine/local_handle.hpp"

#include <mixle/encoded_data.hpp>
#include <mixle/error.hpp>
#include <mixle/fit.hpp>

#include <gtest/gtest.h>

#include <cmath>
#include <numbers>
#include <optional>
#include <string>

namespace mixle {
namespace {

using engine::EstimatorOptions;
using engine::Precision;

EstimatorOptions fp64() {
  EstimatorOptions o;
  o.precision = Precision::fp64;
  return o;
}

TEST(EncodedHandle, StatisticsOfTwoHalvesCombineToThoseOfTheWhole) {
  const Model model = test::truth_model("mixed");
  const Dataset rows = sample(model, 1000, 3);
  const auto whole = engine::encoded_data(rows);
  const auto first = engine::encoded_data(rows.slice(0, 377));
  const auto second = engine::encoded_data(rows.slice(377, 1000));
  const engine::Statistics all = whole->stream_accumulate(model, fp64());
  engine::Statistics halves = first->stream_accumulate(model, fp64());
  const engine::Statistics before = halves;
  halves.combine(second->stream_accumulate(model, fp64()));
  ASSERT_EQ(halves.values.size(), all.values.size());
  EXPECT_EQ(halves.rows(), 1000.0);
  EXPECT_NE(halves.values, before.values);
  for (std::size_t i = 0; i < all.values.size(); ++i)
    EXPECT_NEAR(halves.values[i], all.values[i], 1e-10 * (1.0 + std::abs(all.values[i]))) << "statistic " << i;
  const auto [n, loglik] = whole->log_density_sum(model, fp64());
  EXPECT_EQ(n, 1000.0);
  EXPECT_EQ(loglik, all.loglik_sum());
  engine::Statistics shorter = engine::Statistics::zero(3);
  test::expect_invalid_input([&] { shorter.combine(all); },
                             {"different sizes", "(3 vs " + std::to_string(all.values.size())});
}

/// One EM step of a gaussian_diag mixture written out plainly: responsibilities by Bayes' rule,
/// weighted means and variances (plus reg_covar).
Model naive_em_step(const Model& m, const Dataset& data, double reg_covar) {
  const std::size_t N = data.rows(), D = data.cols(), K = m.components();
  const Part& p = m.parts[0];
  const double* x = data.as<double>();
  std::vector<double> mass(K, 0.0), sum(K * D, 0.0), resp(N * K);
  for (std::size_t n = 0; n < N; ++n) {
    double total = 0.0;
    for (std::size_t k = 0; k < K; ++k) {
      double log_density = std::log(m.weights[k]);
      for (std::size_t d = 0; d < D; ++d) {
        const double v = p.var[k * D + d], z = x[n * D + d] - p.mean[k * D + d];
        log_density -= 0.5 * (std::log(2 * std::numbers::pi * v) + z * z / v);
      }
      resp[n * K + k] = std::exp(log_density);
      total += resp[n * K + k];
    }
    for (std::size_t k = 0; k < K; ++k) {
      resp[n * K + k] /= total;
      mass[k] += resp[n * K + k];
      for (std::size_t d = 0; d < D; ++d) sum[k * D + d] += resp[n * K + k] * x[n * D + d];
    }
  }
  Model next = m;
  for (std::size_t k = 0; k < K; ++k) {
    next.weights[k] = mass[k] / static_cast<double>(N);
    for (std::size_t d = 0; d < D; ++d) next.parts[0].mean[k * D + d] = sum[k * D + d] / mass[k];
  }
  std::vector<double> square(K * D, 0.0);
  for (std::size_t n = 0; n < N; ++n)
    for (std::size_t k = 0; k < K; ++k)
      for (std::size_t d = 0; d < D; ++d) {
        const double z = x[n * D + d] - next.parts[0].mean[k * D + d];
        square[k * D + d] += resp[n * K + k] * z * z;
      }
  for (std::size_t i = 0; i < K * D; ++i) next.parts[0].var[i] = square[i] / mass[i / D] + reg_covar;
  return next;
}

TEST(EncodedHandle, EstimateIsOneEmStep) {
  const Model truth = test::truth_model("diag");
  const Dataset rows = sample(truth, 800, 5);
  Model start = truth;  // a start away from the truth, so that the step moves every parameter
  for (double& mu : start.parts[0].mean) mu += 0.5;
  for (double& v : start.parts[0].var) v *= 1.5;
  start.weights = {0.1, 0.2, 0.3, 0.4};
  const auto handle = engine::encoded_data(rows);
  const engine::MStepResult step = handle->estimate(start, fp64());
  const Model want = naive_em_step(start, rows, fp64().m_step.reg_covar);
  EXPECT_TRUE(step.empty_components.empty());
  for (std::size_t k = 0; k < 4; ++k) EXPECT_NEAR(step.model.weights[k], want.weights[k], 1e-12);
  for (std::size_t i = 0; i < want.parts[0].mean.size(); ++i) {
    EXPECT_NEAR(step.model.parts[0].mean[i], want.parts[0].mean[i], 1e-10) << "mean " << i;
    EXPECT_NEAR(step.model.parts[0].var[i], want.parts[0].var[i], 1e-10 * want.parts[0].var[i]) << "var " << i;
  }
  // EM never lowers the likelihood.
  EXPECT_GT(handle->log_density_sum(step.model, fp64()).second, handle->log_density_sum(start, fp64()).second);
}

// A handle whose estimate is the base's with equal weights put in: the M-step of a backend that
// overrides it. It records the evidence each step reported.
class EqualWeightsEstimate final : public engine::LocalEncodedData {
 public:
  explicit EqualWeightsEstimate(const Dataset& rows) : LocalEncodedData(rows, engine::make_cpu_compute(1)) {}
  engine::MStepResult estimate(const Model& prev, const EstimatorOptions& options) override {
    engine::MStepResult next = LocalEncodedData::estimate(prev, options);
    evidence.push_back(next.loglik_sum / next.rows);
    next.model.weights.assign(next.model.weights.size(), 1.0 / static_cast<double>(next.model.weights.size()));
    return next;
  }
  std::vector<double> evidence;  // mean log-likelihood of each step's previous model
};

// The EM loop of fit steps through EncodedData::estimate: an override's model is the one the
// next iteration starts from, and its evidence is the history fit reports. estimate's own rows
// and loglik_sum are the E-step's (log_density_sum of the previous model).
TEST(EncodedHandle, TheEmLoopStepsThroughEstimate) {
  const Model truth = test::truth_model("diag");
  const Dataset rows = sample(truth, 600, 3);
  const auto plain = engine::encoded_data(rows);
  const engine::MStepResult step = plain->estimate(truth, fp64());
  const auto [n, loglik] = plain->log_density_sum(truth, fp64());
  EXPECT_EQ(step.rows, n);
  EXPECT_EQ(step.loglik_sum, loglik);

  const auto handle = std::make_shared<EqualWeightsEstimate>(rows);
  FitOptions o;
  o.components = 4;
  o.init = InitMethod::model;
  o.init_model = truth;
  o.init_model->weights = {0.7, 0.1, 0.1, 0.1};
  o.max_iter = 4;
  o.tol = 0.0;
  o.precision = "fp64";
  const FitResult r = fit(std::shared_ptr<EncodedData>(handle), o);
  ASSERT_EQ(r.iterations, 4);
  for (double w : r.model.weights) EXPECT_EQ(w, 0.25);
  EXPECT_EQ(r.mean_loglik, handle->evidence);
}

TEST(EncodedHandle, InitializeRefusesAComponentLeftWithoutRows) {
  const Model truth = test::truth_model("diag");
  const auto two_rows = engine::encoded_data(sample(truth, 2, 1));
  // Two rows, four components: whatever the draw, two components receive no row.
  test::expect_invalid_input([&] { two_rows->initialize(truth, 9, 1.0, fp64()); },
                             {"initialisation 'select' with p = 1", "no rows (2 rows, K = 4)", "--init kmeans++"});
  test::expect_invalid_input([&] { two_rows->initialize(truth, 9, 0.0, fp64()); }, {"init-p", "(0, 1]"});
  const auto many = engine::encoded_data(sample(truth, 400, 1));
  const Model m = many->initialize(truth, 9, 0.5, fp64());
  EXPECT_NO_THROW(validate_model(m));
}

TEST(EncodedHandle, AnMStepRefusesStatisticsOfAnotherShape) {
  const Model model = test::truth_model("diag");
  const std::vector<double> three(3, 1.0);
  test::expect_invalid_input(
      [&] { engine::m_step(model, three, engine::shift_table(model, Precision::fp64), fp64()); },
      {"statistics have 3 values", "the model needs " + std::to_string(engine::stat_layout(model).size)});
}

std::unique_ptr<engine::EncodedData> no_backend(const Dataset&, const engine::EncodedDataOptions&) { return nullptr; }

TEST(EncodedHandle, RegistrationNeedsANameAndAFactory) {
  test::expect_invalid_input([] { engine::register_encoded_data_backend("", &no_backend); },
                             {"non-empty name and a factory"});
  test::expect_invalid_input([] { engine::register_encoded_data_backend("nameless_factory", nullptr); },
                             {"non-empty name and a factory"});
  for (const auto& name : engine::encoded_data_backends()) EXPECT_NE(name, "nameless_factory");
}

TEST(ComputeDevices, NamesAreCheckedBeforeAnyDeviceIsTouched) {
  test::expect_invalid_input([] { engine::make_compute("cuda:x", 1); }, {"\"cuda:x\"", "cuda:<index> with index ≥ 0"});
  test::expect_invalid_input([] { engine::make_compute("cuda:-1", 1); }, {"\"cuda:-1\""});
  test::expect_invalid_input([] { engine::make_compute("cuda:1x", 1); }, {"\"cuda:1x\""});
  test::expect_invalid_input([] { engine::make_compute("tpu", 1); }, {"unknown device \"tpu\"", "auto, cpu, cuda"});
  EXPECT_EQ(engine::make_compute("cpu", 1)->name(), engine::make_cpu_compute(1)->name());
}

// One reading of a CUDA device name for the fit, the bench and calibration: "cuda" is device 0,
// "cuda:i" device i, anything else no CUDA device; a malformed index is refused.
TEST(ComputeDevices, CudaIndexReadsCudaAndCudaColonIndexOnly) {
  EXPECT_EQ(engine::cuda_index("cuda"), 0);
  EXPECT_EQ(engine::cuda_index("cuda:0"), 0);
  EXPECT_EQ(engine::cuda_index("cuda:12"), 12);
  for (const char* other : {"cpu", "auto", "tpu", "cudas", "xcuda:1", ""})
    EXPECT_EQ(engine::cuda_index(other), std::nullopt) << other;
  for (const char* bad : {"cuda:", "cuda:x", "cuda:-1", "cuda:1x", "cuda: 1", "cuda:+1"})
    test::expect_invalid_input([&] { (void)engine::cuda_index(bad); }, {std::string("\"") + bad + "\""});
}

}  // namespace
}  // namespace mixle
