// BackendCapabilities::validate and the training-backend registry with its built-in entries.
#include <mixle/plan/backend_registry.hpp>

#include <mixle/error.hpp>

#include "plan/json_fields.hpp"

#include <algorithm>
#include <cctype>
#include <map>
#include <mutex>

namespace mixle::plan {

namespace {

using detail::Json;

std::string join_axes(const std::vector<ParallelAxis>& axes) {
  std::string out;
  for (ParallelAxis a : axes) out += (out.empty() ? "" : ", ") + std::string(axis_name(a));
  return out.empty() ? "(none)" : out;
}

std::string join(const std::set<std::string>& items) {
  std::string out;
  for (const std::string& s : items) out += (out.empty() ? "" : ", ") + s;
  return out;
}

/// A built-in backend: its capabilities are the whole of what the registry needs.
class BuiltinBackend final : public TrainingBackend {
 public:
  explicit BuiltinBackend(BackendCapabilities caps) : caps_(std::move(caps)) {}
  const BackendCapabilities& capabilities() const override { return caps_; }

 private:
  BackendCapabilities caps_;
};

// EM communicators run two axes: dp_replicate, the data groups (statistics all-reduced, the same
// M-step everywhere), and tp, the component shards (each rank holds a contiguous range of the
// components — a slice of every parameter tensor, as tensor parallelism slices a layer — and the
// shards exchange per-row log-likelihoods).
std::shared_ptr<const TrainingBackend> make_em(std::string name, std::vector<std::string> requirements,
                                               std::string execution) {
  BackendCapabilities c;
  c.name = std::move(name);
  c.axes = {ParallelAxis::dp_replicate, ParallelAxis::tp};
  // The compute's precision (tf32: CUDA); statistics travel as float64 whatever it is.
  c.precisions = {"fp32", "fp64", "tf32"};
  c.requirements = std::move(requirements);
  c.execution = std::move(execution);
  return std::make_shared<BuiltinBackend>(std::move(c));
}

std::shared_ptr<const TrainingBackend> make_single() {
  BackendCapabilities c;
  c.name = "single";
  c.precisions = {"fp32", "fp64", "tf32"};
  c.max_world_size = 1;
  c.execution = "one process; no collectives";
  return std::make_shared<BuiltinBackend>(std::move(c));
}
std::shared_ptr<const TrainingBackend> make_gloo() {
  return make_em("gloo", {"mixle built with Gloo (MIXLE_GLOO)"},
                 "CPU ranks; statistics all-reduced over TCP with Gloo's ring; component shards on tp");
}
std::shared_ptr<const TrainingBackend> make_mpi() {
  return make_em("mpi", {"mixle built with MPI (MIXLE_MPI)", "launched by mpirun or srun"},
                 "CPU ranks; statistics reduced to rank 0 and broadcast, so every rank holds the "
                 "same bytes; component shards on tp");
}
std::shared_ptr<const TrainingBackend> make_nccl() {
  return make_em("nccl", {"mixle built with CUDA and NCCL"},
                 "one GPU per rank; statistics all-reduced with NCCL; component shards on tp");
}
std::shared_ptr<const TrainingBackend> make_lightning_fabric() {
  BackendCapabilities c;
  c.name = "lightning_fabric";
  c.axes = {ParallelAxis::dp_replicate, ParallelAxis::dp_shard};
  c.precisions = {"fp32", "fp16", "bf16"};
  c.requirements = {"lightning"};
  // Fabric picks DDP or FSDP from one strategy; replicate and shard together need HSDP, which
  // the launcher only accepts with an explicit strategy.
  c.incompatible_axis_sets = {{ParallelAxis::dp_replicate, ParallelAxis::dp_shard}};
  c.execution = "Fabric DDP (dp_replicate) or FSDP (dp_shard): data parallelism only";
  return std::make_shared<BuiltinBackend>(std::move(c));
}
std::shared_ptr<const TrainingBackend> make_ray_train() {
  BackendCapabilities c;
  c.name = "ray_train";
  c.axes = {ParallelAxis::dp_replicate};
  c.precisions = {"fp32", "fp64"};
  c.requirements = {"ray[train]"};
  c.execution =
      "one worker per plan rank (num_workers = world_size); each worker attests its "
      "mesh coordinate and runs data-parallel EM";
  return std::make_shared<BuiltinBackend>(std::move(c));
}

struct Entry {
  std::shared_ptr<const TrainingBackend> backend;  // set once resolved
  TrainingBackendFactory factory = nullptr;
};

struct Registry {
  std::mutex mutex;
  std::map<std::string, Entry> entries;
  Registry() {
    entries["single"].factory = &make_single;
    entries["gloo"].factory = &make_gloo;
    entries["mpi"].factory = &make_mpi;
    entries["nccl"].factory = &make_nccl;
    entries["lightning_fabric"].factory = &make_lightning_fabric;
    entries["ray_train"].factory = &make_ray_train;
  }
};

// Built-ins live in the registry's constructor rather than in static registrars, which a static
// library's linker may drop.
Registry& registry() {
  static Registry instance;
  return instance;
}

std::string checked_key(std::string_view name) {
  std::string key = training_backend_key(name);
  if (key.empty()) {
    throw InvalidInput("training backend name='" + std::string(name) + "' is blank; accepted: a non-blank name");
  }
  return key;
}

[[noreturn]] void collision(const std::string& key) {
  throw InvalidInput("training backend '" + key +
                     "' is already registered to a different "
                     "backend; pass override_existing=true to replace it");
}

}  // namespace

void BackendCapabilities::validate(const ParallelPlan& plan, std::string_view precision) const {
  if (max_world_size && plan.world_size() > *max_world_size) {
    throw UnrealizedModelPlacement("backend '" + name + "' runs at most world_size=" + std::to_string(*max_world_size) +
                                   ", but the plan needs world_size=" + std::to_string(plan.world_size()) +
                                   "; accepted: a smaller plan "
                                   "or a distributed backend (gloo, mpi, nccl)");
  }
  const std::vector<ParallelAxis> active = plan.active_axes();
  std::vector<ParallelAxis> missing;
  for (ParallelAxis a : active) {
    if (!axes.contains(a)) missing.push_back(a);
  }
  std::vector<ParallelAxis> supported(axes.begin(), axes.end());
  if (!missing.empty()) {
    throw UnrealizedModelPlacement("backend '" + name + "' does not execute parallel axes " + join_axes(missing) +
                                   "; accepted: plans whose active axes are "
                                   "among " +
                                   join_axes(supported));
  }
  if (!precisions.contains(std::string(precision))) {
    throw InvalidInput("backend '" + name + "' does not support precision='" + std::string(precision) +
                       "'; accepted: " + join(precisions));
  }
  for (const auto& set : incompatible_axis_sets) {
    if (std::all_of(set.begin(), set.end(), [&](ParallelAxis a) { return plan.size(a) > 1; })) {
      throw UnrealizedModelPlacement("backend '" + name + "' cannot combine axes " +
                                     join_axes({set.begin(), set.end()}) + "; accepted: at most one of them active");
    }
  }
}

std::string BackendCapabilities::to_json(int indent) const {
  Json axes_json = Json::array();
  for (ParallelAxis a : axes) axes_json.push_back(axis_name(a));  // set order = axis order
  std::vector<std::string> sorted_axes = axes_json.get<std::vector<std::string>>();
  std::sort(sorted_axes.begin(), sorted_axes.end());
  Json incompatible = Json::array();
  for (const auto& set : incompatible_axis_sets) {
    std::vector<std::string> names;
    for (ParallelAxis a : set) names.emplace_back(axis_name(a));
    std::sort(names.begin(), names.end());
    incompatible.push_back(names);
  }
  Json out = {{"name", name},
              {"axes", sorted_axes},
              {"precisions", std::vector<std::string>(precisions.begin(), precisions.end())},
              {"distributed_optimizer", distributed_optimizer},
              {"reshardable_checkpoint", reshardable_checkpoint},
              {"elastic_restart", elastic_restart},
              {"requirements", requirements},
              {"incompatible_axis_sets", incompatible},
              {"max_world_size", max_world_size ? Json(*max_world_size) : Json(nullptr)},
              {"execution", execution}};
  return out.dump(indent);
}

std::string training_backend_key(std::string_view name) {
  const auto first = name.find_first_not_of(" \t\r\n");
  if (first == std::string_view::npos) return {};
  const auto last = name.find_last_not_of(" \t\r\n");
  std::string key(name.substr(first, last - first + 1));
  for (char& c : key) {
    c = c == '-' ? '_' : static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  return key;
}

void register_training_backend(std::string_view name, std::shared_ptr<const TrainingBackend> backend,
                               bool override_existing) {
  const std::string key = checked_key(name);
  if (!backend) {
    throw InvalidInput("training backend '" + key + "' is null; accepted: a backend instance");
  }
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  auto it = r.entries.find(key);
  if (it != r.entries.end() && !override_existing) {
    if (it->second.backend == backend && !it->second.factory) return;  // identical: no-op
    collision(key);
  }
  r.entries[key] = Entry{std::move(backend), nullptr};
}

void register_training_backend(std::string_view name, TrainingBackendFactory factory, bool override_existing) {
  const std::string key = checked_key(name);
  if (!factory) {
    throw InvalidInput("training backend '" + key +
                       "' factory is null; accepted: a function "
                       "returning the backend");
  }
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  auto it = r.entries.find(key);
  if (it != r.entries.end() && !override_existing) {
    if (it->second.factory == factory) return;  // identical factory (e.g. registered twice)
    collision(key);
  }
  r.entries[key] = Entry{nullptr, factory};
}

std::shared_ptr<const TrainingBackend> get_training_backend(std::string_view name) {
  const std::string key = training_backend_key(name);
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  auto it = r.entries.find(key);
  if (it == r.entries.end()) {
    std::string known;
    for (const auto& [k, e] : r.entries) known += (known.empty() ? "" : ", ") + k;
    throw InvalidInput("training backend '" + std::string(name) + "' is not registered; accepted: " + known);
  }
  Entry& e = it->second;
  if (!e.backend) {
    e.backend = e.factory();  // once: the result is cached below
    if (!e.backend) {
      throw InvalidInput("training backend '" + key +
                         "' factory returned no backend; accepted: a "
                         "factory returning a TrainingBackend");
    }
  }
  return e.backend;
}

std::vector<std::string> available_training_backends() {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  std::vector<std::string> out;
  for (const auto& [k, e] : r.entries) out.push_back(k);
  return out;
}

}  // namespace mixle::plan
