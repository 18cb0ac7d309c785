// `mixle resources --calibrate`: every device gets a measured throughput (rows/s) and each run
// appends one record to the calibration catalog.
#include "comms/process_util.hpp"

#include <gtest/gtest.h>
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
    const auto resources = nlohmann::json::parse(read_file(out));
    ASSERT_EQ(resources["devices"].size(), 1u);
    const double throughput = resources["devices"][0]["throughput"].get<double>();
    EXPECT_GT(throughput, 1000.0) << "rows/s of a tiny EM iteration";
    const auto records = nlohmann::json::parse(read_file(catalog));
    const auto& list = records.is_array() ? records : records["records"];
    ASSERT_EQ(list.size(), static_cast<std::size_t>(run));
    EXPECT_EQ(list.back()["workload"], "em");
    EXPECT_EQ(list.back()["device_results"][0]["success"], true);
  }
}

}  // namespace
}  // namespace mixle::test
