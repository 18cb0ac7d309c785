// partial_fit: batch by batch it is the stepwise fit (bit for bit), its state survives a JSON
// round trip mid-stream, and it refuses states, rows and options it cannot use.
#include "engine/engine_test_util.hpp"

#include <mixle/error.hpp>
#include <mixle/fit.hpp>
#include <mixle/partial_fit.hpp>

#include <gtest/gtest.h>

#include <string>

namespace mixle::test {
namespace {

const char* kTruth = R"({"format":"mixle-model","version":1,"weights":[0.5,0.5],"parts":[
    {"family":"gaussian_full","columns":[0,2],"mean":[[0,0],[3,3]],"cov":[[[2,1],[1,2]],[[1,-0.3],[-0.3,0.5]]]},
    {"family":"categorical","columns":[2,3],"categories":3,"prob":[[0.6,0.3,0.1],[0.1,0.3,0.6]]}]})";

Model start_of(const Model& truth) {
  Model m = truth;
  m.weights = {0.3, 0.7};
  m.parts[0].mean = {0.5, -0.5, 2, 4};
  return m;
}

TEST(PartialFit, BatchByBatchItIsTheStepwiseFit) {
  const Model truth = model_from_json(kTruth);
  const Dataset data = sample(truth, 1000, 6);
  FitOptions o;
  o.init = InitMethod::model;
  o.init_model = start_of(truth);
  o.precision = "fp64";
  o.batch_size = 150;  // 7 batches, the last of 100 rows
  o.epochs = 1;
  o.tol = 0;
  o.step_decay = 0.7;
  o.step_offset = 1.5;
  const FitResult whole = fit(data, o);

  Model model = start_of(truth);
  StepwiseState state;
  const PartialFitOptions p{.step_decay = 0.7, .step_offset = 1.5, .total_weight = 1000, .precision = "fp64"};
  for (std::size_t begin = 0; begin < 1000; begin += 150)
    model = partial_fit(model, data.slice(begin, std::min<std::size_t>(1000, begin + 150)), state, p);
  EXPECT_EQ(state.steps, 7u);
  EXPECT_EQ(state.scale_weight, 1000.0);
  EXPECT_EQ(model_to_json(model), model_to_json(whole.model));
}

TEST(PartialFit, AStateSavedMidStreamResumesTheSameStream) {
  const Model truth = model_from_json(kTruth);
  const Dataset data = sample(truth, 600, 7);
  const PartialFitOptions p{.precision = "fp64"};
  Model straight = start_of(truth), resumed = start_of(truth);
  StepwiseState a, b;
  for (std::size_t begin = 0; begin < 600; begin += 100) {
    straight = partial_fit(straight, data.slice(begin, begin + 100), a, p);
    if (begin == 200) b = stepwise_state_from_json(stepwise_state_to_json(b));  // "restart" here
    resumed = partial_fit(resumed, data.slice(begin, begin + 100), b, p);
  }
  EXPECT_EQ(a, b);
  EXPECT_EQ(model_to_json(straight), model_to_json(resumed));
  EXPECT_EQ(a.scale_weight, 100.0) << "0 = the first batch's weight";
}

TEST(PartialFit, ABatchOfNoWeightChangesNothing) {
  const Model truth = model_from_json(kTruth);
  const Dataset data = sample(truth, 50, 8);
  StepwiseState state;
  const Model first = partial_fit(start_of(truth), data, state, {.precision = "fp64"});
  const StepwiseState before = state;
  const Dataset nothing = data.with_weights(std::vector<double>(50, 0.0));
  EXPECT_EQ(model_to_json(partial_fit(first, nothing, state, {.precision = "fp64"})), model_to_json(first));
  EXPECT_EQ(state, before);
}

TEST(PartialFit, RefusesForeignStatesBadRowsAndBadOptions) {
  const Model truth = model_from_json(kTruth);
  const Dataset data = sample(truth, 40, 9);
  StepwiseState state;
  partial_fit(start_of(truth), data, state);
  const Model other = model_from_json(R"({"format":"mixle-model","version":1,"weights":[1],"parts":[
      {"family":"gaussian_diag","columns":[0,2],"mean":[[0,0]],"var":[[1,1]]}]})");
  expect_invalid_input([&] { partial_fit(other, data, state); }, {"this model needs 7", "start a new one"});
  // One count matching is not enough: a state with the model's statistics but not its shifts,
  // or its shifts but not its statistics, is as foreign.
  StepwiseState more_statistics = state, more_shifts = state;
  more_statistics.statistics.push_back(0.0);
  more_shifts.shifts.push_back(0.0);
  expect_invalid_input([&] { partial_fit(start_of(truth), data, more_statistics); },
                       {"holds " + std::to_string(state.statistics.size() + 1) + " statistics", "start a new one"});
  expect_invalid_input([&] { partial_fit(start_of(truth), data, more_shifts); },
                       {"and " + std::to_string(state.shifts.size() + 1) + " shifts", "start a new one"});
  StepwiseState fresh;
  expect_invalid_input([&] { partial_fit(start_of(truth), data, fresh, {.step_decay = 2}); }, {"step decay"});
  expect_invalid_input([&] { partial_fit(start_of(truth), data, fresh, {.total_weight = -1}); }, {"total_weight"});
  expect_invalid_input([&] { partial_fit(start_of(truth), data.slice(0, 0), fresh); }, {"at least one row"});
  std::vector<double> bad = data.values();
  bad[5 * 3 + 2] = 7;  // category 7 of 3
  expect_invalid_input([&] { partial_fit(start_of(truth), Dataset::from_vector(bad, 40, 3), fresh); }, {"row 5"});
  EXPECT_EQ(fresh.steps, 0u) << "nothing folded";
}

TEST(PartialFit, StateJsonIsCheckedFieldByField) {
  expect_invalid_input([] { stepwise_state_from_json("[]"); }, {"stepwise state"});
  expect_invalid_input([] { stepwise_state_from_json(R"({"format":"x","version":1})"); }, {"format"});
  for (const char* version : {"0", "2", "-1"})
    expect_invalid_input(
        [&] {
          stepwise_state_from_json(std::string(R"({"format":"mixle-stepwise-state","version":)") + version +
                                   R"(,"steps":1,"scale_weight":5,"statistics":[1],"shifts":[]})");
        },
        {std::string("stepwise state: version ") + version + " is not supported; accepted: 1"});
  expect_invalid_input(
      [] {
        stepwise_state_from_json(
            R"({"format":"mixle-stepwise-state","version":1,"steps":2,"scale_weight":5,"statistics":[],"shifts":[]})");
      },
      {"after 2 step(s)"});
  expect_invalid_input(
      [] {
        stepwise_state_from_json(
            R"({"format":"mixle-stepwise-state","version":1,"steps":1,"scale_weight":5,"statistics":["a"],"shifts":[]})");
      },
      {"statistics[0]"});
  // Any positive scale weight is a state's (a weighted batch may total less than one row).
  expect_invalid_input(
      [] {
        stepwise_state_from_json(
            R"({"format":"mixle-stepwise-state","version":1,"steps":1,"scale_weight":0,"statistics":[1],"shifts":[]})");
      },
      {"scale_weight > 0"});
  const StepwiseState s{{1.5, 0.1 + 0.2}, {3.25}, 4, 1e3};
  EXPECT_EQ(stepwise_state_from_json(stepwise_state_to_json(s)), s) << "doubles round-trip exactly";
  const StepwiseState light{{1.5}, {}, 1, 0.25};
  EXPECT_EQ(stepwise_state_from_json(stepwise_state_to_json(light)), light);
}

}  // namespace
}  // namespace mixle::test
