// Stepwise EM's pieces against derived oracles: statistics moved to new centres equal the ones
// taken about them (written out naively), the step-size rule and batch orders as defined, and two
// steps of stepwise EM equal the M-step written out by hand.
#include "engine/compute.hpp"
#include "engine/engine_test_util.hpp"
#include "engine/stepwise_em.hpp"
#include "kernels/model_view.hpp"

#include <mixle/error.hpp>

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <numeric>
#include <random>

namespace mixle::test {
namespace {

using engine::StepwiseOptions;

// K = 2 over five columns: a diagonal Gaussian (0-2), a full Gaussian (2-4), a categorical (4-5).
Model three_parts() {
  return model_from_json(R"({"format":"mixle-model","version":1,"weights":[0.5,0.5],"parts":[
      {"family":"gaussian_diag","columns":[0,2],"mean":[[1,-2],[30,4]],"var":[[1,1],[2,2]]},
      {"family":"gaussian_full","columns":[2,4],"mean":[[5,6],[-7,8]],"cov":[[[1,0.2],[0.2,1]],[[2,0],[0,2]]]},
      {"family":"categorical","columns":[4,5],"categories":3,"prob":[[0.2,0.3,0.5],[0.6,0.2,0.2]]}]})");
}

TEST(StepwiseEm, StatisticsMovedToNewCentresEqualThoseTakenAboutThem) {
  const Model model = three_parts();
  const std::size_t N = 40, C = 5, K = 2;
  std::mt19937_64 rng(3);
  std::normal_distribution<double> z(0.0, 3.0);
  std::vector<double> x(N * C), resp(N * K);
  for (std::size_t r = 0; r < N; ++r) {
    for (std::size_t c = 0; c < 4; ++c) x[r * C + c] = 10.0 + z(rng);
    x[r * C + 4] = static_cast<double>(rng() % 3);
    const double a = std::uniform_real_distribution<double>(0.05, 0.95)(rng);
    resp[r * K] = a;
    resp[r * K + 1] = 1.0 - a;
  }
  const Dataset rows = Dataset::from_vector(x, N, C);
  const engine::StatLayout layout = engine::stat_layout(model);
  std::vector<double> stats(static_cast<std::size_t>(layout.size), 0.0);
  engine::make_cpu_compute(1)->accumulate_given(model, rows, resp.data(), stats);  // about 0
  const std::vector<double> about_zero = stats;

  const engine::ShiftTable zero = engine::shift_table(model, engine::Precision::fp64, /*zero_shift=*/true);
  const engine::ShiftTable centres = engine::shift_table(model, engine::Precision::fp64);
  engine::reshift_statistics(model, stats, zero, centres);

  for (std::size_t k = 0; k < K; ++k) {
    double mass = 0.0;
    for (std::size_t r = 0; r < N; ++r) mass += resp[r * K + k];
    ASSERT_NEAR(stats[kernels::kStatHeader + k], mass, 1e-12);
    // Diagonal part: Σr(x−c), Σr(x−c)².
    const double* diag = stats.data() + layout.part_offset[0] + k * layout.part_stride[0];
    for (std::size_t d = 0; d < 2; ++d) {
      const double c = model.parts[0].mean[k * 2 + d];
      double f = 0.0, s = 0.0;
      for (std::size_t r = 0; r < N; ++r) {
        f += resp[r * K + k] * (x[r * C + d] - c);
        s += resp[r * K + k] * (x[r * C + d] - c) * (x[r * C + d] - c);
      }
      EXPECT_NEAR(diag[d], f, 1e-9 * (1.0 + std::abs(f)));
      EXPECT_NEAR(diag[2 + d], s, 1e-9 * s);
    }
    // Full part: Σr(x−c), Σr(x−c)(x−c)ᵀ.
    const double* full = stats.data() + layout.part_offset[1] + k * layout.part_stride[1];
    for (std::size_t i = 0; i < 2; ++i) {
      double f = 0.0;
      for (std::size_t r = 0; r < N; ++r) f += resp[r * K + k] * (x[r * C + 2 + i] - model.parts[1].mean[k * 2 + i]);
      EXPECT_NEAR(full[i], f, 1e-9 * (1.0 + std::abs(f)));
      for (std::size_t j = 0; j < 2; ++j) {
        double s = 0.0;
        for (std::size_t r = 0; r < N; ++r)
          s += resp[r * K + k] * (x[r * C + 2 + i] - model.parts[1].mean[k * 2 + i]) *
               (x[r * C + 2 + j] - model.parts[1].mean[k * 2 + j]);
        EXPECT_NEAR(full[2 + i * 2 + j], s, 1e-9 * (1.0 + std::abs(s))) << k << " " << i << " " << j;
      }
    }
  }
  // The categorical part and the header are not moved; moving back restores the statistics.
  for (std::size_t i = 0; i < static_cast<std::size_t>(layout.part_offset[0]); ++i) EXPECT_EQ(stats[i], about_zero[i]);
  for (std::size_t i = static_cast<std::size_t>(layout.part_offset[2]); i < stats.size(); ++i)
    EXPECT_EQ(stats[i], about_zero[i]);
  engine::reshift_statistics(model, stats, centres, zero);
  for (std::size_t i = 0; i < stats.size(); ++i)
    EXPECT_NEAR(stats[i], about_zero[i], 1e-9 * (1 + std::abs(about_zero[i])));
}

TEST(StepwiseEm, StepSizesFollowTheRule) {
  StepwiseOptions o;
  o.step_decay = 0.6;
  o.step_offset = 2.0;
  EXPECT_EQ(engine::step_size(0, o), 1.0) << "the running statistics start as the first batch's";
  EXPECT_DOUBLE_EQ(engine::step_size(1, o), std::pow(3.0, -0.6));
  EXPECT_DOUBLE_EQ(engine::step_size(3, o), std::pow(5.0, -0.6));
  o.step_decay = 1.0;
  o.step_offset = 0.0;
  EXPECT_DOUBLE_EQ(engine::step_size(4, o), 0.25);
}

TEST(StepwiseEm, BatchOrdersAreSequentialOrSeededPermutations) {
  StepwiseOptions o;
  EXPECT_EQ(engine::batch_order(4, 3, o), (std::vector<std::size_t>{0, 1, 2, 3}));
  o.shuffle = true;
  o.seed = 9;
  const auto first = engine::batch_order(50, 0, o);
  auto sorted = first;
  std::sort(sorted.begin(), sorted.end());
  std::vector<std::size_t> all(50);
  std::iota(all.begin(), all.end(), std::size_t{0});
  EXPECT_EQ(sorted, all) << "a permutation";
  EXPECT_NE(first, all);
  EXPECT_EQ(engine::batch_order(50, 0, o), first) << "the same seed and epoch, the same order";
  EXPECT_NE(engine::batch_order(50, 1, o), first) << "each epoch its own order";
  o.seed = 10;
  EXPECT_NE(engine::batch_order(50, 0, o), first);
  EXPECT_EQ(engine::batch_order(1, 0, o), (std::vector<std::size_t>{0}));
}

// Over seeds, the orders of three batches are the six permutations about equally often (600
// draws: 100 expected each, binomial σ ≈ 9; the bounds are 4σ away).
TEST(StepwiseEm, ShuffledOrdersAreUniformOverPermutations) {
  std::map<std::vector<std::size_t>, int> seen;
  for (std::uint64_t seed = 0; seed < 600; ++seed) {
    StepwiseOptions o;
    o.shuffle = true;
    o.seed = seed;
    ++seen[engine::batch_order(3, 0, o)];
  }
  ASSERT_EQ(seen.size(), 6u);
  for (const auto& [order, count] : seen) {
    EXPECT_GE(count, 64) << order[0] << order[1] << order[2];
    EXPECT_LE(count, 136) << order[0] << order[1] << order[2];
  }
}

TEST(StepwiseEm, ControlsOutOfRangeAreRefusedNamingThem) {
  auto refused = [](StepwiseOptions o, const std::string& words) {
    expect_invalid_input([&] { engine::validate(o); }, {words});
  };
  refused({.step_decay = 0.5}, "step decay 0.5");
  refused({.step_decay = 1.01}, "(0.5, 1]");
  refused({.step_offset = -1.0}, "step offset");
  refused({.step_offset = std::numeric_limits<double>::infinity()}, "step offset");
  refused({.epochs = 0}, "epochs 0");
  EXPECT_NO_THROW(engine::validate({.step_decay = 1.0, .step_offset = 0.0, .epochs = 1}));
}

// K = 1, so every responsibility is 1 and two steps can be written out: rows (x, c) = (1, 0),
// (3, 1) | (10, 1), (14, 1) in batches of two, ρ_1 = (1 + 2)^−1 = 1/3. The running statistics
// after both steps are those of the four rows weighted (1 − ρ)·2, (1 − ρ)·2, ρ·2, ρ·2 = 4/3, 4/3,
// 2/3, 2/3 (each batch scaled by total weight / batch weight = 2).
TEST(StepwiseEm, TwoStepsEqualTheMStepWrittenOut) {
  const Model start = model_from_json(R"({"format":"mixle-model","version":1,"weights":[1],"parts":[
      {"family":"gaussian_diag","columns":[0,1],"mean":[[-50]],"var":[[4]]},
      {"family":"categorical","columns":[1,2],"categories":2,"prob":[[0.9,0.1]]}]})");
  const Dataset rows = Dataset::from_vector(std::vector<double>{1, 0, 3, 1, 10, 1, 14, 1}, 4, 2);
  std::vector<std::shared_ptr<engine::EncodedData>> batches{engine::encoded_data(rows.slice(0, 2)),
                                                            engine::encoded_data(rows.slice(2, 4))};
  engine::EmOptions em;
  em.max_iter = 1;
  em.estimator.precision = engine::Precision::fp64;
  const StepwiseOptions o{.step_decay = 1.0, .step_offset = 2.0, .epochs = 1};
  const engine::EmResult r = engine::run_stepwise_em(batches, 4.0, start, em, o);

  const double w[4] = {4.0 / 3, 4.0 / 3, 2.0 / 3, 2.0 / 3}, x[4] = {1, 3, 10, 14}, c[4] = {0, 1, 1, 1};
  double mean = 0.0, square = 0.0, ones = 0.0;
  for (int i = 0; i < 4; ++i) {
    mean += w[i] * x[i] / 4.0;
    square += w[i] * x[i] * x[i] / 4.0;
    ones += w[i] * c[i];
  }
  const MStepOptions m;
  const Part& g = r.model.parts[0];
  EXPECT_NEAR(g.mean[0], 16.0 / 3.0, 1e-12);
  EXPECT_NEAR(mean, 16.0 / 3.0, 1e-12);
  EXPECT_NEAR(g.var[0], square - mean * mean + m.reg_covar, 1e-11);
  const Part& cat = r.model.parts[1];
  EXPECT_NEAR(cat.prob[0], (4.0 - ones + m.pseudo_count) / (4.0 + 2 * m.pseudo_count), 1e-14);
  EXPECT_NEAR(cat.prob[1], (ones + m.pseudo_count) / (4.0 + 2 * m.pseudo_count), 1e-14);
  EXPECT_DOUBLE_EQ(r.model.weights[0], 1.0);
  ASSERT_EQ(r.mean_loglik.size(), 1u);
  EXPECT_EQ(r.iterations, 1);
}

// Running statistics (from a saved stepwise state) that do not fit the batch's model — another
// size, or shifts of another model — are refused, whichever of the two differs.
TEST(StepwiseEm, RunningStatisticsOfAnotherShapeAreRefused) {
  const Model model = three_parts();
  const engine::ShiftTable shifts = engine::shift_table(model, engine::Precision::fp64);
  const std::vector<double> batch(static_cast<std::size_t>(engine::stat_layout(model).size), 1.0);
  std::vector<double> running(batch.size() - 1, 1.0);
  engine::ShiftTable running_shifts = shifts;
  expect_invalid_input([&] { engine::fold_batch(model, running, running_shifts, batch, 1.0, 0.5, shifts); },
                       {"another shape", std::to_string(batch.size() - 1) + " values"});
  running.assign(batch.size(), 1.0);
  running_shifts.values.push_back(0.0);
  expect_invalid_input([&] { engine::fold_batch(model, running, running_shifts, batch, 1.0, 0.5, shifts); },
                       {"another shape", std::to_string(shifts.values.size() + 1) + " shifts"});
}

// A batch whose every row has weight 0 holds no data: it takes no step (and no step number), so
// the run equals the run without it, bit for bit.
TEST(StepwiseEm, ABatchOfWeightZeroTakesNoStep) {
  const Model start = model_from_json(R"({"format":"mixle-model","version":1,"weights":[0.5,0.5],"parts":[
      {"family":"gaussian_diag","columns":[0,1],"mean":[[-1],[12]],"var":[[4],[4]]}]})");
  const Dataset rows = Dataset::from_vector(std::vector<double>{1, 3, 10, 14, 2, 11, 5, 7, 0, 13}, 10, 1)
                           .with_weights(std::vector<double>{1, 2, 1, 1, 0, 0, 0, 3, 1, 2});
  auto batch = [&](std::size_t begin, std::size_t end) { return engine::encoded_data(rows.slice(begin, end)); };
  engine::EmOptions em;
  em.max_iter = 3;
  em.tol = 0.0;
  em.estimator.precision = engine::Precision::fp64;
  const StepwiseOptions o{.epochs = 3};
  const engine::EmResult with = engine::run_stepwise_em({batch(0, 4), batch(4, 7), batch(7, 10)}, 11.0, start, em, o);
  const engine::EmResult without = engine::run_stepwise_em({batch(0, 4), batch(7, 10)}, 11.0, start, em, o);
  EXPECT_EQ(model_to_json(with.model), model_to_json(without.model));
  EXPECT_EQ(with.mean_loglik, without.mean_loglik);
  EXPECT_TRUE(std::isfinite(with.model.parts[0].mean[0]));
}

TEST(StepwiseEm, RefusesWhatItCannotRun) {
  const Dataset rows = Dataset::from_vector(std::vector<double>{1, 2, 3, 4}, 4, 1);
  const Model start = model_from_json(R"({"format":"mixle-model","version":1,"weights":[1],"parts":[
      {"family":"gaussian_diag","columns":[0,1],"mean":[[0]],"var":[[1]]}]})");
  const std::vector<std::shared_ptr<engine::EncodedData>> batches{engine::encoded_data(rows)};
  engine::EmOptions em;
  em.empty = engine::EmptyPolicy::reseed;
  expect_invalid_input([&] { engine::run_stepwise_em(batches, 4.0, start, em, {}); }, {"reseed"});
  em.empty = engine::EmptyPolicy::keep;
  em.estimator.marginalise = true;
  expect_invalid_input([&] { engine::run_stepwise_em(batches, 4.0, start, em, {}); }, {"marginalise"});
  em.estimator.marginalise = false;
  expect_invalid_input([&] { engine::run_stepwise_em({}, 4.0, start, em, {}); }, {"no batches"});
  expect_invalid_input([&] { engine::run_stepwise_em(batches, 4.0, start, em, {.step_decay = 0.3}); }, {"step decay"});
  expect_invalid_input([&] { engine::run_stepwise_em(batches, 0.0, start, em, {}); }, {"total weight"});
}

}  // namespace
}  // namespace mixle::test
