// calibrate_resources: every device of a Resources is timed on the caller's model and rows, its
// throughput is the sample's rows over the median timing, failures keep the device's spec and are
// raised after the catalog record is written, and bad calls are refused before any device runs.
#include "common/bad_files.hpp"
#include "engine/engine_test_util.hpp"

#include <mixle/calibrate.hpp>
#include <mixle/error.hpp>
#include <mixle/fit.hpp>

#include <gtest/gtest.h>

#include <filesystem>
#include <limits>

namespace mixle::test {
namespace {

plan::DeviceSpec cpu_slot(const std::string& name, std::int64_t width) {
  plan::DeviceSpec d;
  d.name = name;
  d.kind = "cpu";
  d.compute_units = width;
  return d;
}

plan::DeviceSpec device(const std::string& name, const std::string& kind) {
  plan::DeviceSpec d;
  d.name = name;
  d.kind = kind;
  d.engine = kind;
  d.throughput = 7.0;
  return d;
}

Dataset records(std::size_t rows) { return sample(truth_model("mixed"), rows, 3); }

TEST(CalibrateResources, ThroughputIsTheSampleRowsOverTheMedianTiming) {
  const Model model = truth_model("mixed");
  plan::CalibrationCatalog catalog;
  for (const std::string workload : {"score", "estep", "accumulate", "em"}) {
    CalibrateOptions options;
    options.workload = workload;
    options.sample_size = 200;
    options.repeats = 3;
    options.catalog = &catalog;
    const plan::Resources out =
        calibrate_resources(records(500), model, plan::Resources::from_specs({cpu_slot("cpu:0", 1)}), options);
    const plan::CalibrationRecord& record = catalog.records().back();
    EXPECT_EQ(record.workload, workload == "accumulate" ? "estep" : workload);
    EXPECT_EQ(record.sample_size, 200u);
    EXPECT_EQ(record.row_count, 500u);
    EXPECT_EQ(record.repeats, 3u);
    EXPECT_EQ(record.model_type, "gaussian_diag+categorical+poisson");
    EXPECT_EQ(record.estimator_type, "mixle-em");
    EXPECT_GT(record.statistic_bytes, record.model_bytes);
    ASSERT_EQ(record.device_results.size(), 1u);
    const plan::DeviceCalibration& r = record.device_results[0];
    ASSERT_TRUE(r.success) << r.error.value_or("");
    ASSERT_EQ(r.elapsed_seconds.size(), 3u);
    std::vector<double> t = r.elapsed_seconds;
    std::sort(t.begin(), t.end());
    EXPECT_DOUBLE_EQ(*r.throughput, 200.0 / t[1]);
    EXPECT_GT(t[0], 1e-6) << "each timing holds a run over 200 rows, not an empty interval";
    EXPECT_DOUBLE_EQ(out.devices()[0].throughput, *r.throughput);
    EXPECT_EQ(record.resources, out);
  }
  EXPECT_EQ(catalog.records().size(), 4u);
}

TEST(CalibrateResources, TheSampleIsTheFirstRowsAndNoMoreThanTheData) {
  // A NaN past the sample is never read; one inside it is the data's error, named by row, before
  // any device runs.
  std::vector<double> values = records(50).values();
  const std::size_t C = 4;
  values[40 * C] = std::numeric_limits<double>::quiet_NaN();
  const Dataset data = Dataset::from_vector(values, 50, C);
  const plan::Resources one = plan::Resources::from_specs({cpu_slot("cpu:0", 1)});
  plan::CalibrationCatalog catalog;
  CalibrateOptions options;
  options.sample_size = 40;
  options.catalog = &catalog;
  EXPECT_NO_THROW(calibrate_resources(data, truth_model("mixed"), one, options));
  EXPECT_EQ(catalog.records().back().sample_size, 40u);
  options.sample_size = 41;
  expect_invalid_input([&] { calibrate_resources(data, truth_model("mixed"), one, options); }, {"row 40"});
  EXPECT_EQ(catalog.records().size(), 1u) << "a refused call records nothing";
  options.sample_size = 512;
  calibrate_resources(records(30), truth_model("mixed"), one, options);
  EXPECT_EQ(catalog.records().back().sample_size, 30u);
  options.sample_size = 1;  // the least
  calibrate_resources(records(30), truth_model("mixed"), one, options);
  EXPECT_EQ(catalog.records().back().sample_size, 1u);
}

// A slot without compute_units takes every thread: a width of its own, timed by itself too.
TEST(CalibrateResources, CpuSlotsOfOneWidthAreMeasuredOnceAndEachWidthByItself) {
  plan::DeviceSpec every_thread = cpu_slot("cpu:4", 0);
  every_thread.compute_units.reset();
  const plan::Resources slots = plan::Resources::from_specs(
      {cpu_slot("cpu:0", 1), cpu_slot("cpu:1", 1), cpu_slot("cpu:2", 2), cpu_slot("cpu:3", 2), every_thread});
  plan::CalibrationCatalog catalog;
  CalibrateOptions options;
  options.catalog = &catalog;
  options.repeats = 2;
  std::vector<std::string> progressed;
  options.progress = [&](const plan::DeviceCalibration& r) { progressed.push_back(r.device_name); };
  const plan::Resources out = calibrate_resources(records(400), truth_model("mixed"), slots, options);
  EXPECT_EQ(progressed, (std::vector<std::string>{"cpu:0", "cpu:1", "cpu:2", "cpu:3", "cpu:4"}));
  const auto& r = catalog.records().back().device_results;
  ASSERT_EQ(r.size(), 5u);
  EXPECT_EQ(r[0].elapsed_seconds, r[1].elapsed_seconds);
  EXPECT_EQ(r[2].elapsed_seconds, r[3].elapsed_seconds);
  EXPECT_NE(r[0].elapsed_seconds, r[2].elapsed_seconds) << "a 2-CPU slot is timed by itself";
  EXPECT_NE(r[4].elapsed_seconds, r[0].elapsed_seconds) << "a slot of every thread is not a 1-CPU slot";
  EXPECT_NE(r[4].elapsed_seconds, r[2].elapsed_seconds) << "nor a 2-CPU slot";
  for (std::size_t i = 0; i < 5; ++i) {
    EXPECT_EQ(r[i].device_name, slots.devices()[i].name);
    EXPECT_EQ(out.devices()[i].compute_units, slots.devices()[i].compute_units);
  }
}

TEST(CalibrateResources, APrecisionIsCanonicalAndPinnedOnEveryDevice) {
  CalibrateOptions options;
  options.precision = "fp64";
  const plan::Resources out = calibrate_resources(records(100), truth_model("mixed"),
                                                  plan::Resources::from_specs({cpu_slot("cpu:0", 1)}), options);
  EXPECT_EQ(out.devices()[0].precision, "float64");
  options.precision = "float16";
  expect_invalid_input(
      [&] {
        calibrate_resources(records(100), truth_model("mixed"), plan::Resources::from_specs({cpu_slot("cpu:0", 1)}),
                            options);
      },
      {"float16", "float32 or float64"});
}

TEST(CalibrateResources, AFailedDeviceKeepsItsSpecAndIsRaisedAfterTheRecordIsSaved) {
  TempDir dir("calibrate");
  const std::string path = dir.file("catalog.json");
  plan::DeviceSpec gpu = device("node-a-gpu", "gpu");  // no index in its name: its local rank
  gpu.local_rank = 61;
  const plan::Resources devices =
      plan::Resources::from_specs({cpu_slot("cpu:0", 1), device("mps:0", "mps"), device("cuda:57", "cuda"), gpu});
  CalibrateOptions options;
  options.catalog_path = path;
  options.model_type = "records";
  try {
    calibrate_resources(records(100), truth_model("mixed"), devices, options);
    FAIL() << "no ResourceCalibrationError";
  } catch (const ResourceCalibrationError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("mps:0: device kind \"mps\" has no mixle engine"), std::string::npos) << what;
    // Each CUDA device is named by the index it was given (no machine has these).
    EXPECT_NE(what.find("cuda:57: CUDA device 57: "), std::string::npos) << what;
    EXPECT_NE(what.find("node-a-gpu: CUDA device 61: "), std::string::npos) << what;
    EXPECT_EQ(what.find("cpu:0"), std::string::npos) << what;
    ASSERT_EQ(e.results().size(), 4u);
    EXPECT_TRUE(e.results()[0].success);
    EXPECT_FALSE(e.results()[1].success);
    EXPECT_FALSE(e.results()[2].success);
    EXPECT_TRUE(e.results()[1].elapsed_seconds.empty());
    EXPECT_EQ(e.resources().devices()[1], devices.devices()[1]) << "a failed device keeps its spec";
    EXPECT_EQ(e.resources().devices()[2], devices.devices()[2]);
    EXPECT_NE(e.resources().devices()[0].throughput, devices.devices()[0].throughput);
  }
  // The record was written before the error, and a second run appends to it.
  ASSERT_TRUE(std::filesystem::exists(path));
  EXPECT_THROW(calibrate_resources(records(100), truth_model("mixed"), devices, options), ResourceCalibrationError);
  const plan::CalibrationCatalog saved = plan::CalibrationCatalog::load(path);
  ASSERT_EQ(saved.records().size(), 2u);
  EXPECT_FALSE(saved.records()[0].fully_successful());
  EXPECT_EQ(saved.records()[0].model_type, "records");
  EXPECT_FALSE(saved.resources_for("records", "score").has_value());
}

TEST(CalibrateResources, BadCallsAreRefusedBeforeAnyDeviceRuns) {
  const plan::Resources one = plan::Resources::from_specs({cpu_slot("cpu:0", 1)});
  const Model model = truth_model("mixed");
  auto refused = [&](const Dataset& data, CalibrateOptions options, const std::vector<std::string>& words) {
    int calls = 0;
    options.progress = [&](const plan::DeviceCalibration&) { ++calls; };
    expect_invalid_input([&] { calibrate_resources(data, model, one, options); }, words);
    EXPECT_EQ(calls, 0);
  };
  refused(Dataset::from_vector(std::vector<double>{}, 0, 4), {}, {"no data rows"});
  refused(records(10), {.sample_size = 0}, {"sample_size 0"});
  refused(records(10), {.repeats = 0}, {"repeats 0", "≥ 1"});
  refused(records(10), {.workload = "fit"}, {"fit", "score", "estep", "em"});
  refused(Dataset::from_vector(std::vector<double>(30, 0.5), 10, 3), {}, {"column"});
  Model heavy = model;  // weights summing to 1.5: the model is checked before anything runs on it
  heavy.weights[0] += 0.5;
  int calls = 0;
  CalibrateOptions counted;
  counted.progress = [&](const plan::DeviceCalibration&) { ++calls; };
  expect_invalid_input([&] { calibrate_resources(records(10), heavy, one, counted); }, {"weights"});
  EXPECT_EQ(calls, 0);
}

}  // namespace
}  // namespace mixle::test
