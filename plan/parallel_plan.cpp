// ParallelPlan validation, mesh and JSON.
#include <mixle/plan/parallel_plan.hpp>

#include <mixle/error.hpp>

#include "plan/json_fields.hpp"

namespace mixle::plan {

namespace {

constexpr const char* kAxisNames[] = {"dp_replicate", "dp_shard", "tp", "pp", "cp", "ep", "etp"};
constexpr const char* kAcceptedAxes = "dp_replicate, dp_shard, tp, pp, cp, ep, etp";

std::int64_t positive(const char* name, PlanSize size) {
  if (size.value() < 1) {
    throw InvalidInput(std::string(name) + "=" + std::to_string(size.value()) +
                       " must be an exact positive integer; accepted: an integer ≥ 1");
  }
  return size.value();
}

}  // namespace

const char* axis_name(ParallelAxis axis) noexcept { return kAxisNames[static_cast<int>(axis)]; }

ParallelAxis axis_from_name(std::string_view name) {
  for (ParallelAxis axis : kParallelAxes) {
    if (name == axis_name(axis)) return axis;
  }
  throw InvalidInput("parallel axis '" + std::string(name) + "' is not known; accepted: " + kAcceptedAxes);
}

ParallelPlan::ParallelPlan(const ParallelPlanSizes& s)
    : sizes_{positive("dp_replicate", s.dp_replicate),
             positive("dp_shard", s.dp_shard),
             positive("tp", s.tp),
             positive("pp", s.pp),
             positive("cp", s.cp),
             positive("ep", s.ep),
             positive("etp", s.etp)},
      microbatches_(positive("microbatches", s.microbatches)),
      accumulation_(positive("gradient_accumulation_steps", s.gradient_accumulation_steps)),
      world_size_(1) {
  for (ParallelAxis axis : kPhysicalAxes) {
    std::int64_t v = size(axis);
    if (__builtin_mul_overflow(world_size_, v, &world_size_)) {
      throw InvalidInput(
          "parallel plan world size (dp_replicate·dp_shard·tp·pp·cp) overflows 63 "
          "bits; accepted: sizes whose product fits");
    }
  }
  if (data_parallel_size() % size(ParallelAxis::ep) != 0) {
    throw InvalidInput("ep=" + std::to_string(size(ParallelAxis::ep)) +
                       ": expert parallelism must divide the data-parallel domain "
                       "(dp_replicate·dp_shard=" +
                       std::to_string(data_parallel_size()) + "); accepted: a divisor of it");
  }
}

std::int64_t ParallelPlan::size(ParallelAxis axis) const noexcept { return sizes_[static_cast<int>(axis)]; }

std::int64_t ParallelPlan::size(std::string_view axis) const { return size(axis_from_name(axis)); }

std::int64_t ParallelPlan::data_parallel_size() const noexcept {
  return size(ParallelAxis::dp_replicate) * size(ParallelAxis::dp_shard);
}

std::vector<ParallelAxis> ParallelPlan::active_axes() const {
  std::vector<ParallelAxis> out;
  for (ParallelAxis axis : kParallelAxes) {
    if (size(axis) > 1) out.push_back(axis);
  }
  return out;
}

std::pair<std::vector<std::string>, std::vector<std::int64_t>> ParallelPlan::mesh() const {
  std::pair<std::vector<std::string>, std::vector<std::int64_t>> out;
  for (ParallelAxis axis : kPhysicalAxes) {
    if (size(axis) > 1) {
      out.first.emplace_back(axis_name(axis));
      out.second.push_back(size(axis));
    }
  }
  if (out.first.empty()) return {{"dp_replicate"}, {1}};
  return out;
}

void ParallelPlan::check_world_size(std::int64_t actual) const {
  if (actual < 1) {
    throw InvalidInput("world_size=" + std::to_string(actual) +
                       " must be an exact positive integer; accepted: an integer ≥ 1");
  }
  if (actual != world_size_) {
    throw InvalidInput("parallel plan requires world_size=" + std::to_string(world_size_) +
                       ", but the process group has world_size=" + std::to_string(actual) +
                       "; accepted: a process group of exactly " + std::to_string(world_size_) + " ranks");
  }
}

std::string ParallelPlan::to_json(int indent) const {
  detail::Json out = detail::Json::object();
  for (ParallelAxis axis : kParallelAxes) out[axis_name(axis)] = size(axis);
  out["microbatches"] = microbatches_;
  out["gradient_accumulation_steps"] = accumulation_;
  out["world_size"] = world_size_;
  out["data_parallel_size"] = data_parallel_size();
  return out.dump(indent);
}

ParallelPlan ParallelPlan::from_json(std::string_view text) {
  using namespace detail;
  const Json doc = parse_object(text, "parallel plan document");
  // min = INT64_MIN so that out-of-range values reach the constructor's message.
  auto read = [&](const char* name) -> PlanSize {
    return get_int(doc, "", name, std::numeric_limits<std::int64_t>::min(), 1);
  };
  ParallelPlan plan({.dp_replicate = read("dp_replicate"),
                     .dp_shard = read("dp_shard"),
                     .tp = read("tp"),
                     .pp = read("pp"),
                     .cp = read("cp"),
                     .ep = read("ep"),
                     .etp = read("etp"),
                     .microbatches = read("microbatches"),
                     .gradient_accumulation_steps = read("gradient_accumulation_steps")});
  if (auto w = get_opt_int(doc, "", "world_size", 1); w && *w != plan.world_size()) {
    throw InvalidInput("world_size=" + std::to_string(*w) +
                       " does not match the product of the "
                       "physical axes (" +
                       std::to_string(plan.world_size()) + "); accepted: " + std::to_string(plan.world_size()) +
                       " or omit it");
  }
  if (auto d = get_opt_int(doc, "", "data_parallel_size", 1); d && *d != plan.data_parallel_size()) {
    throw InvalidInput("data_parallel_size=" + std::to_string(*d) + " does not match dp_replicate·dp_shard (" +
                       std::to_string(plan.data_parallel_size()) +
                       "); accepted: " + std::to_string(plan.data_parallel_size()) + " or omit it");
  }
  return plan;
}

}  // namespace mixle::plan
