// What a distributed backend really executes (BackendCapabilities) and the registry of training
// backends, with lazy factories so that optional dependencies load only when asked for.
#pragma once

#include <mixle/plan/parallel_plan.hpp>

#include <cstdint>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace mixle::plan {

/// What a backend executes, rather than merely accepts as flags.
struct BackendCapabilities {
  std::string name;
  std::set<ParallelAxis> axes;                          ///< axes it can run with size > 1
  std::set<std::string> precisions = {"fp32", "bf16"};  ///< "fp32", "fp64", "bf16", "fp16", …
  bool distributed_optimizer = false;
  bool reshardable_checkpoint = false;
  bool elastic_restart = false;
  std::vector<std::string> requirements;  ///< what must be built/installed
  std::vector<std::set<ParallelAxis>> incompatible_axis_sets;
  /// mixle addition: the largest world it can run (single: 1); none = unbounded.
  std::optional<std::int64_t> max_world_size;
  /// mixle addition: one line on how it executes a plan (e.g. "one worker per plan rank").
  std::string execution;

  /// Throws UnrealizedModelPlacement naming the active axes the backend does not execute, an
  /// incompatible active set, or a world above max_world_size; InvalidInput for an unsupported
  /// precision (listing the supported ones).
  void validate(const ParallelPlan& plan, std::string_view precision = "fp32") const;
  /// Sorted lists (reference `as_dict`) plus mixle's additions.
  std::string to_json(int indent = -1) const;
  bool operator==(const BackendCapabilities&) const = default;
};

/// A distributed training backend as the registry sees it.
class TrainingBackend {
 public:
  virtual ~TrainingBackend() = default;
  virtual const BackendCapabilities& capabilities() const = 0;
};

/// A zero-argument lazy factory: called once, on the first get_training_backend of its name.
/// A function pointer (not std::function) so that re-registering the same factory is
/// recognisably identical.
using TrainingBackendFactory = std::shared_ptr<const TrainingBackend> (*)();

/// Registry key: `name` stripped, lowercased, '-' → '_'.
std::string training_backend_key(std::string_view name);
/// Registers an instance. A different object under an existing key needs override_existing
/// (InvalidInput otherwise, naming the key); the identical object is a no-op. Empty key or null
/// backend → InvalidInput.
void register_training_backend(std::string_view name, std::shared_ptr<const TrainingBackend> backend,
                               bool override_existing = false);
/// Registers a lazy factory (same collision rules; the identical factory is a no-op).
void register_training_backend(std::string_view name, TrainingBackendFactory factory, bool override_existing = false);
/// The backend under `name`, calling its factory once and caching the result (under the
/// registry's lock: a factory must not call the registry itself). Unknown names →
/// InvalidInput listing the registered ones; a factory returning null → InvalidInput.
std::shared_ptr<const TrainingBackend> get_training_backend(std::string_view name);
/// Registered keys, sorted. Built-ins: single, gloo, mpi, nccl, lightning_fabric, ray_train.
std::vector<std::string> available_training_backends();

}  // namespace mixle::plan
