// partial_fit (include/mixle/partial_fit.hpp): one step of stepwise EM on a batch the caller
// holds, with the running statistics in a state the caller keeps — the same update as
// fit(batch_size) (engine/stepwise_em.hpp's fold_batch), without a dataset to walk.
#include "engine/encoded_data.hpp"
#include "engine/stepwise_em.hpp"
#include "plan/json_fields.hpp"

#include <mixle/error.hpp>
#include <mixle/partial_fit.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

namespace mixle {

Model partial_fit(const Model& model, const Dataset& rows, StepwiseState& state, const PartialFitOptions& options) {
  validate_model(model);
  if (rows.empty()) throw InvalidInput(rows.source() + ": partial_fit needs at least one row");
  const engine::StepwiseOptions rule{.step_decay = options.step_decay, .step_offset = options.step_offset};
  engine::validate(rule);
  if (!(options.total_weight >= 0.0) || !std::isfinite(options.total_weight))
    throw InvalidInput("partial_fit total_weight " + std::to_string(options.total_weight) +
                       ": must be finite and ≥ 0 (0 = the first batch's weight)");
  EstimatorOptions est;
  est.precision = precision_from_name(options.precision);
  est.m_step = {.reg_covar = options.reg_covar, .pseudo_count = options.pseudo_count, .rate_floor = options.rate_floor};

  const engine::ShiftTable shifts = engine::shift_table(model, est.precision);
  const std::size_t size = static_cast<std::size_t>(engine::stat_layout(model).size);
  if (state.steps > 0 && (state.statistics.size() != size || state.shifts.size() != shifts.values.size()))
    throw InvalidInput("partial_fit: the state holds " + std::to_string(state.statistics.size()) + " statistics and " +
                       std::to_string(state.shifts.size()) + " shifts, this model needs " + std::to_string(size) +
                       " and " + std::to_string(shifts.values.size()) +
                       "; a state belongs to the model it was started with (start a new one)");

  const std::shared_ptr<EncodedData> batch =
      encoded_data(rows, {.backend = "local", .device = options.device, .threads = options.threads});
  batch->check(model);
  const Statistics s = batch->stream_accumulate(model, est);
  if (!(s.rows() > 0.0)) return model;  // every row of the batch has weight 0
  if (state.steps == 0) {
    state.statistics.clear();
    state.scale_weight = options.total_weight > 0.0 ? options.total_weight : s.rows();
  }
  engine::ShiftTable running_shifts{state.shifts, shifts.part_offset};
  engine::fold_batch(model, state.statistics, running_shifts, s.values, state.scale_weight / s.rows(),
                     engine::step_size(state.steps, rule), shifts);
  state.shifts = std::move(running_shifts.values);
  ++state.steps;
  return engine::m_step(model, state.statistics, shifts, est).model;
}

namespace {
constexpr const char* kFormat = "mixle-stepwise-state";
}

std::string stepwise_state_to_json(const StepwiseState& state) {
  const plan::detail::Json out = {{"format", kFormat},
                                  {"version", 1},
                                  {"steps", state.steps},
                                  {"scale_weight", state.scale_weight},
                                  {"statistics", state.statistics},
                                  {"shifts", state.shifts}};
  return out.dump();
}

StepwiseState stepwise_state_from_json(const std::string& text) {
  namespace d = plan::detail;
  const d::Json in = d::parse_object(text, "stepwise state");
  if (d::get_string(in, "", "format") != kFormat)
    throw InvalidInput(std::string("stepwise state: format must be \"") + kFormat + "\"");
  if (const std::int64_t version = d::get_int(in, "", "version", std::numeric_limits<std::int64_t>::min());
      version != 1)
    throw InvalidInput("stepwise state: version " + std::to_string(version) + " is not supported; accepted: 1");
  StepwiseState state;
  state.steps = d::get_uint(in, "", "steps");
  state.scale_weight = d::get_number(in, "", "scale_weight");
  for (const auto& [field, values] : {std::pair{"statistics", &state.statistics}, std::pair{"shifts", &state.shifts}}) {
    const d::Json& list = d::require(in, "", field);
    if (!list.is_array()) throw InvalidInput(std::string("stepwise state: ") + field + " must be an array of numbers");
    for (std::size_t i = 0; i < list.size(); ++i)
      values->push_back(d::as_number(list[i], std::string(field) + "[" + std::to_string(i) + "]"));
  }
  if (state.steps > 0 && (state.statistics.empty() || !(state.scale_weight > 0.0)))
    throw InvalidInput("stepwise state: after " + std::to_string(state.steps) +
                       " step(s) it needs statistics and a scale_weight > 0");
  return state;
}

}  // namespace mixle
