// `mixle resources --calibrate`: every device gets a measured throughput (rows/s) and each run
// appends one record to the calibration catalog.
#include "comms/process_util.hpp"

#include <gtest/gtest.h>
#include <filesystem>
#include <nlohmann/json.hpp>

namespace mixle::test {
namespace {

using namespace std::chrono_literals;

TEST(CliResourcesCalibrate, WritesMeasuredThroughputAndAppendsToTheCatalog) {
  TempDir dir;
  const auto out = dir.path / "resources.json", catalog = dir.path / "catalog.json";
  const std::vector<std::string> argv{
      MIXLE_CLI_PATH, "resources", "--calibrate", "--no-cuda", "--rows", "4096",       "--dims",    "4",
      "--components", "3",         "--iters",     "2",         "--out",  out.string(), "--catalog", catalog.string()};
  for (int run = 1; run <= 2; ++run) {
    Process p = run_process(argv, {}, dir.path / "log.txt", 120s);
    ASSERT_EQ(p.exit_code(), 0) << p.output();
    // The case measured is the one asked for: its size is stated before the measuring starts.
    EXPECT_NE(p.output().find("on gaussian_diag N=4096 D=4 K=3, 2 EM iteration(s) each"), std::string::npos)
        << p.output();
    const auto resources = nlohmann::json::parse(read_file(out));
    ASSERT_EQ(resources["devices"].size(), 1u);
    const double throughput = resources["devices"][0]["throughput"].get<double>();
    EXPECT_GT(throughput, 1000.0) << "rows/s of a tiny EM iteration";
    const auto records = nlohmann::json::parse(read_file(catalog));
    const auto& list = records.is_array() ? records : records["records"];
    ASSERT_EQ(list.size(), static_cast<std::size_t>(run));
    EXPECT_EQ(list.back()["workload"], "em");
    EXPECT_EQ(list.back()["model_type"], "gaussian_diag") << "the default family";
    EXPECT_EQ(list.back()["sample_size"], 4096);
    EXPECT_EQ(list.back()["repeats"], 2);
    EXPECT_EQ(list.back()["device_results"][0]["success"], true);
    // Stamped with the time of the run (seconds since the epoch).
    const double stamped = list.back()["timestamp"].get<double>();
    const double now = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
    EXPECT_GT(stamped, now - 600.0);
    EXPECT_LE(stamped, now + 1.0);
  }
}

// Identical CPU slots are measured once; each slot's result still carries its own name.
TEST(CliResourcesCalibrate, EveryCpuSlotIsNamedInTheCatalog) {
  TempDir dir;
  const auto out = dir.path / "resources.json", catalog = dir.path / "catalog.json";
  Process p = run_process(
      {MIXLE_CLI_PATH, "resources", "--calibrate", "--no-cuda", "--cpu-workers", "2", "--rows", "2048", "--dims", "2",
       "--components", "2", "--iters", "1", "--out", out.string(), "--catalog", catalog.string()},
      {}, dir.path / "log.txt", 120s);
  ASSERT_EQ(p.exit_code(), 0) << p.output();
  const auto resources = nlohmann::json::parse(read_file(out));
  ASSERT_EQ(resources["devices"].size(), 2u);
  const auto records = nlohmann::json::parse(read_file(catalog));
  const auto& results = (records.is_array() ? records : records["records"]).back()["device_results"];
  ASSERT_EQ(results.size(), 2u);
  for (std::size_t i = 0; i < 2; ++i)
    EXPECT_EQ(results[i]["device_name"], resources["devices"][i]["name"]) << results.dump();
  EXPECT_NE(results[0]["device_name"], results[1]["device_name"]);
}

// Without --catalog the record goes beside --out; --family and --precision are recorded, and
// the workload's size is the documented default (65,536 rows, 3 iterations).
TEST(CliResourcesCalibrate, TheDefaultCatalogLiesBesideTheResources) {
  TempDir dir;
  const auto out = dir.path / "resources.json";
  Process p = run_process({MIXLE_CLI_PATH, "resources", "--calibrate", "--no-cuda", "--family", "poisson",
                           "--precision", "float64", "--out", out.string()},
                          {}, dir.path / "log.txt", 120s);
  ASSERT_EQ(p.exit_code(), 0) << p.output();
  const auto catalog = dir.path / "mixle-calibration.json";
  ASSERT_TRUE(std::filesystem::exists(catalog)) << p.output();
  EXPECT_NE(p.output().find("appended a calibration record to " + catalog.string()), std::string::npos) << p.output();
  const auto records = nlohmann::json::parse(read_file(catalog));
  const auto& record = (records.is_array() ? records : records["records"]).back();
  EXPECT_EQ(record["model_type"], "poisson");
  EXPECT_EQ(record["precision"], "float64");
  EXPECT_EQ(record["sample_size"], 65536);
  EXPECT_EQ(record["repeats"], 3);
  EXPECT_NE(p.output().find("N=65536 D=32 K=64, 3 EM iteration(s)"), std::string::npos) << p.output();
  EXPECT_EQ(nlohmann::json::parse(read_file(out))["devices"][0]["precision"], "float64");
}

// A calibration that cannot run fails the command, naming why, and writes no Resources file.
TEST(CliResourcesCalibrate, AnUnusablePrecisionFailsWithoutWritingTheResources) {
  TempDir dir;
  const auto out = dir.path / "resources.json", catalog = dir.path / "catalog.json";
  Process p = run_process(
      {MIXLE_CLI_PATH, "resources", "--calibrate", "--no-cuda", "--precision", "float16", "--rows", "512", "--dims",
       "2", "--components", "2", "--iters", "1", "--out", out.string(), "--catalog", catalog.string()},
      {}, dir.path / "log.txt", 120s);
  EXPECT_EQ(p.exit_code(), 1) << p.output();
  EXPECT_NE(p.output().find("float16"), std::string::npos) << p.output();
  EXPECT_NE(p.output().find("float32 or float64"), std::string::npos) << p.output();
  EXPECT_FALSE(std::filesystem::exists(out));
  EXPECT_FALSE(std::filesystem::exists(catalog));
}

}  // namespace
}  // namespace mixle::test
