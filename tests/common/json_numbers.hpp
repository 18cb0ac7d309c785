// Every number of a JSON document (a model file, a result), for comparing two documents of the
// same shape value by value.
#pragma once

#include <mixle/model.hpp>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
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

/// Every number of a model's file form, in order.
inline std::vector<double> model_numbers(const Model& model) {
  return flatten(nlohmann::json::parse(model_to_json(model)));
}

/// Largest |a − b| / max(|b|, 1e-12) over every number of two models' file forms (weights and
/// parameters); +inf when the models differ in shape.
inline double max_relative_difference(const Model& a, const Model& b) {
  const std::vector<double> x = model_numbers(a), y = model_numbers(b);
  if (x.size() != y.size()) return std::numeric_limits<double>::infinity();
  double worst = 0.0;
  for (std::size_t i = 0; i < x.size(); ++i)
    worst = std::max(worst, std::abs(x[i] - y[i]) / std::max(1e-12, std::abs(y[i])));
  return worst;
}

}  // namespace mixle::test
