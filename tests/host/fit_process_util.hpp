// Shared by the real-process fit tests: draw a dataset with the CLI, and compare two model files
// value by value.
#pragma once

#include "comms/process_util.hpp"
#include "common/json_numbers.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace mixle::test {

/// Largest |a − b| / |a| over the numbers of two model files (same shape expected).
inline double max_relative_difference(const std::filesystem::path& a, const std::filesystem::path& b) {
  const auto fa = flatten(nlohmann::json::parse(read_file(a))), fb = flatten(nlohmann::json::parse(read_file(b)));
  EXPECT_EQ(fa.size(), fb.size());
  double worst = 0.0;
  for (std::size_t i = 0; i < std::min(fa.size(), fb.size()); ++i)
    worst = std::max(worst, std::abs(fa[i] - fb[i]) / std::max(std::abs(fa[i]), 1e-300));
  return worst;
}

/// Writes `model_json` to dir/truth.json and draws `rows` rows from it into dir/data.npy.
inline std::filesystem::path generate_data(const TempDir& dir, const std::string& model_json, int rows) {
  const auto model = dir.path / "truth.json";
  std::ofstream(model) << model_json;
  const auto data = dir.path / "data.npy";
  Process p = run_process({MIXLE_CLI_PATH, "generate", "--model", model.string(), "--rows", std::to_string(rows),
                           "--seed", "5", "--out", data.string()},
                          {}, dir.path / "generate.log", std::chrono::seconds(60));
  EXPECT_EQ(p.exit_code(), 0) << p.output();
  return data;
}

/// Draws `rows` rows of a 3-component mixed record (gaussian_diag:0-3, categorical:3-4:3,
/// poisson:4-5) into dir/data.npy.
inline std::filesystem::path make_mixed_records(const TempDir& dir, int rows) {
  return generate_data(dir, R"({"format":"mixle-model","version":1,"weights":[0.5,0.3,0.2],"parts":[
    {"family":"gaussian_diag","columns":[0,3],"mean":[[0,0,0],[3,3,0],[0,4,-3]],"var":[[1,1,1],[0.5,2,1],[1,0.3,2]]},
    {"family":"categorical","columns":[3,4],"categories":3,"prob":[[0.8,0.1,0.1],[0.1,0.8,0.1],[0.1,0.1,0.8]]},
    {"family":"poisson","columns":[4,5],"rate":[[1],[6],[15]]}]})",
                       rows);
}

}  // namespace mixle::test
