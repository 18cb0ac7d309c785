// StepReceipt validation and its one-line JSON form.
#include <mixle/plan/step_receipt.hpp>

#include <mixle/error.hpp>

#include "plan/json_fields.hpp"

#include <cmath>
#include <limits>
#include <sstream>

namespace mixle::plan {

namespace {

using detail::Json;

void at_least(const char* field, std::int64_t value, std::int64_t min) {
  if (value < min) {
    throw InvalidInput("step receipt " + std::string(field) + "=" + std::to_string(value) +
                       " is out of range; accepted: an integer ≥ " + std::to_string(min));
  }
}

void non_blank(const char* field, const std::string& value) {
  if (value.find_first_not_of(" \t\r\n") == std::string::npos) {
    throw InvalidInput("step receipt " + std::string(field) + "='" + value + "' is blank; accepted: a non-blank name");
  }
}

}  // namespace

void StepReceipt::validate() const {
  at_least("step", step, 0);
  at_least("local_examples", local_examples, 0);
  at_least("local_tokens", local_tokens, 0);
  at_least("collective_bytes", collective_bytes, 0);
  at_least("microbatches", microbatches, 1);
  at_least("accumulation_steps", accumulation_steps, 1);
  at_least("data_parallel_size", data_parallel_size, 1);
  if (!std::isfinite(loss) || loss < 0) {
    std::ostringstream v;
    v << loss;
    throw InvalidInput("step receipt loss=" + v.str() + " is invalid; accepted: a finite number ≥ 0");
  }
  non_blank("optimizer", optimizer);
  non_blank("precision", precision);
  if (global_examples_observed) at_least("global_examples_observed", *global_examples_observed, 0);
  if (global_tokens_observed) at_least("global_tokens_observed", *global_tokens_observed, 0);
  for (const auto& [key, value] : extra) {
    if (const double* d = std::get_if<double>(&value); d && !std::isfinite(*d)) {
      throw InvalidInput("step receipt extra." + key +
                         " is not finite; accepted: finite numbers (JSON has no NaN/inf)");
    }
  }
}

std::int64_t StepReceipt::global_examples() const noexcept {
  return global_examples_observed ? *global_examples_observed : local_examples * data_parallel_size;
}

std::int64_t StepReceipt::global_tokens() const noexcept {
  return global_tokens_observed ? *global_tokens_observed : local_tokens * data_parallel_size;
}

std::string StepReceipt::to_json_line() const {
  validate();
  Json extra_json = Json::object();
  for (const auto& entry : extra) {  // no structured binding: lambdas capture those from C++20 (clang 16) only
    const std::string& key = entry.first;
    std::visit([&](const auto& v) { extra_json[key] = Json(v); }, entry.second);
  }
  auto opt = [](const std::optional<std::int64_t>& v) { return v ? Json(*v) : Json(nullptr); };
  Json out = {{"step", step},
              {"loss", loss},
              {"local_examples", local_examples},
              {"local_tokens", local_tokens},
              {"microbatches", microbatches},
              {"accumulation_steps", accumulation_steps},
              {"data_parallel_size", data_parallel_size},
              {"optimizer", optimizer},
              {"precision", precision},
              {"collective_bytes", collective_bytes},
              {"skipped", skipped},
              {"extra", extra_json},
              {"global_examples_observed", opt(global_examples_observed)},
              {"global_tokens_observed", opt(global_tokens_observed)}};
  return out.dump();  // dump() without indent never emits a newline
}

StepReceipt StepReceipt::from_json(std::string_view text) {
  using namespace detail;
  const Json doc = parse_object(text, "step receipt");
  constexpr std::int64_t kAny = std::numeric_limits<std::int64_t>::min();  // range: validate()
  StepReceipt r;
  r.step = get_int(doc, "", "step", kAny);
  r.loss = get_number(doc, "", "loss");
  r.local_examples = get_int(doc, "", "local_examples", kAny);
  r.local_tokens = get_int(doc, "", "local_tokens", kAny);
  r.microbatches = get_int(doc, "", "microbatches", kAny);
  r.accumulation_steps = get_int(doc, "", "accumulation_steps", kAny);
  r.data_parallel_size = get_int(doc, "", "data_parallel_size", kAny);
  r.optimizer = get_string(doc, "", "optimizer");
  r.precision = get_string(doc, "", "precision");
  r.collective_bytes = get_int(doc, "", "collective_bytes", kAny, 0);
  r.skipped = get_bool(doc, "", "skipped", false);
  if (auto it = doc.find("extra"); it != doc.end() && !it->is_null()) {
    if (!it->is_object()) {
      throw InvalidInput("extra=" + describe(*it) + " is not an object; accepted: {key: scalar}");
    }
    for (const auto& [key, v] : it->items()) {
      if (v.is_null())
        r.extra[key] = nullptr;
      else if (v.is_boolean())
        r.extra[key] = v.get<bool>();
      else if (v.is_number_integer())
        r.extra[key] = as_int(v, "extra." + key, kAny);
      else if (v.is_number())
        r.extra[key] = v.get<double>();
      else if (v.is_string())
        r.extra[key] = v.get<std::string>();
      else {
        throw InvalidInput("extra." + key + "=" + describe(v) +
                           " is not a scalar; accepted: null, booleans, numbers, strings");
      }
    }
  }
  r.global_examples_observed = get_opt_int(doc, "", "global_examples_observed", kAny);
  r.global_tokens_observed = get_opt_int(doc, "", "global_tokens_observed", kAny);
  r.validate();
  return r;
}

}  // namespace mixle::plan
