// Shared by the real-process fit tests: draw a dataset with the CLI, and compare two model files
// value by value.
#pragma once

#include "comms/process_util.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace mixle::test {

/// Every number of a JSON document, in document order.
inline std::vector<double> flatten(const nlohmann::json& j) {
  std::vector<double> out;
  if (j.is_number()) out.push_back(j.get<double>());
  if (j.is_array())
    for (const auto& e : j)
      for (double v : flatten(e)) out.push_back(v);
  if (j.is_object())
    for (const auto& [k, v] : j.items())
      for (double x : flatten(v)) out.push_back(x);
  return out;
}

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

}  // namespace mixle::test
