// Distributed-update contracts: what is communicated, how, over which mesh axes, and with what
// numerical evidence (reference training_contracts: PayloadKind, CollectiveKind, StateLayout,
// ParameterLayout, DistributedUpdate).
#pragma once

#include <mixle/plan/parallel_plan.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace mixle::plan {

/// Value communicated when an update is distributed.
enum class PayloadKind { gradient, sufficient_statistic, parameter, activation, kv_block, token, message };
/// Collective or point-to-point operation an update requires.
enum class CollectiveKind { none, all_reduce, reduce_scatter, all_gather, all_to_all, broadcast, p2p, custom };
/// Physical ownership of mutable state.
enum class StateLayout { replicated, sharded, pipeline_local, expert_local, offloaded };

/// Lowercase names ("sufficient_statistic", "all_reduce", …) and their inverses, which throw
/// InvalidInput listing the accepted names.
const char* payload_name(PayloadKind kind) noexcept;
const char* collective_name(CollectiveKind kind) noexcept;
const char* state_layout_name(StateLayout layout) noexcept;
PayloadKind payload_from_name(std::string_view name);
CollectiveKind collective_from_name(std::string_view name);
StateLayout state_layout_from_name(std::string_view name);

/// Stable logical identity and global layout of one parameter.
struct ParameterLayout {
  std::string logical_id;
  std::vector<std::int64_t> global_shape;                       ///< each ≥ 0
  std::vector<std::pair<std::string, std::string>> placements;  ///< (axis, placement), axes unique
  std::optional<std::string> shared_group;
  StateLayout optimizer_state = StateLayout::replicated;

  /// InvalidInput naming the field: blank id, negative dimension, blank or repeated axis,
  /// blank placement or shared_group.
  void validate() const;
  /// placements as an object {axis: placement}.
  std::string to_json(int indent = -1) const;
  /// global_shape entries must be exact integers (2.5 and true are rejected).
  static ParameterLayout from_json(std::string_view text);
  bool operator==(const ParameterLayout&) const = default;
};

/// An executable communication declaration with explicit numerical evidence.
struct DistributedUpdate {
  std::string node_id;
  PayloadKind payload = PayloadKind::sufficient_statistic;
  CollectiveKind collective = CollectiveKind::all_reduce;
  std::vector<ParallelAxis> mesh_axes;
  StateLayout state_layout = StateLayout::replicated;
  /// True only without a collective: a collective cannot guarantee numerical exactness.
  bool exact = false;
  std::vector<std::string> notes;
  /// Whether the maths is exact (e.g. sums of sufficient statistics), apart from transport.
  bool contract_exact = false;
  std::optional<bool> determinism_observed;
  std::optional<double> maximum_absolute_error;
  std::optional<double> maximum_relative_error;
  std::optional<std::string> numerics_evidence_id;
  std::int64_t numerics_sample_count = 0;

  /// InvalidInput: blank node_id; repeated mesh axis; exact with a collective; negative or
  /// non-finite error bounds; negative sample count; evidence id present ⇔ sample count > 0;
  /// with evidence, determinism_observed and both error bounds all set.
  void validate() const;
  std::string to_json(int indent = -1) const;
  /// Enum fields must be their string names.
  static DistributedUpdate from_json(std::string_view text);
  bool operator==(const DistributedUpdate&) const = default;
};

/// The EM update of one iteration under `plan`: the flat float64 statistics buffer all-reduced
/// over the active data-parallel axes (contract_exact: sums are exact maths; transport is not
/// claimed exact). With no active data axis, collective none and exact.
DistributedUpdate em_statistics_update(const ParallelPlan& plan, std::string node_id = "em_statistics");

}  // namespace mixle::plan
