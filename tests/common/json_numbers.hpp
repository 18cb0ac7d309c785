// Every number of a JSON document (a model file, a result), for comparing two documents of the
// same shape value by value.
#pragma once

#include <mixle/model.hpp>

#include <nlohmann/json.hpp>

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

}  // namespace mixle::test
