// Row placement: which device holds which contiguous row range (plan → Placement), and the
// component-axis split of a model over devices (model_sharding_plan → ModelShard). The memory
// model is documented in docs/planning.md.
#pragma once

#include <mixle/plan/resources.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace mixle::plan {

/// One part of every component, as far as planning needs it.
struct PartSummary {
  std::string family;          ///< gaussian_diag, gaussian_full, categorical, poisson, exponential, bernoulli
  std::size_t dims = 1;        ///< columns the part covers (D)
  std::size_t categories = 0;  ///< categorical only: categories per column (V ≥ 2)
};

/// The structure of a mixture (K components, each the product of `parts`).
struct ModelSummary {
  std::size_t components = 1;  ///< K
  std::vector<PartSummary> parts;

  /// Throws InvalidInput naming the part, field and value (unknown family, dims 0, …).
  void validate() const;
  /// Columns of the data matrix: Σ dims.
  std::size_t columns() const;
  /// float64 values of one component's parameters: 1 weight + per-part parameters.
  std::uint64_t parameter_values_per_component() const;
  /// float64 values of one component's statistics: 1 count + per-part statistics.
  std::uint64_t statistic_values_per_component() const;
  /// Bytes of all K components' parameters (float64).
  std::uint64_t parameter_bytes() const;
  /// Bytes of the flat float64 statistics buffer: K components + log-likelihood + row count.
  std::uint64_t statistic_bytes() const;
};

/// A contiguous row range [start, stop) on one device.
struct PlacementShard {
  DeviceSpec device;
  std::uint64_t start = 0;
  std::uint64_t stop = 0;
  std::uint64_t sub_chunks = 1;       ///< contiguous pieces the engine streams the range in
  std::uint64_t encoded_bytes = 0;    ///< resident data bytes (× safety factor)
  std::uint64_t transient_bytes = 0;  ///< working set + fixed model/statistics bytes (× sf)

  std::uint64_t size() const noexcept { return stop - start; }
  std::uint64_t total_bytes() const noexcept { return encoded_bytes + transient_bytes; }
  bool operator==(const PlacementShard&) const = default;
};

/// A row placement. validate() is run by every producer (plan, from_json).
struct Placement {
  std::vector<PlacementShard> shards;
  std::uint64_t total_rows = 0;
  double encoded_row_bytes = 0;    ///< data bytes of one row
  double transient_row_bytes = 0;  ///< working-set bytes of one row in a chunk (K × dtype)
  std::uint64_t model_bytes = 0;
  std::uint64_t statistic_bytes = 0;
  std::uint64_t dtype_bytes = 4;  ///< compute precision bytes
  std::optional<Resources> resources;
  // mixle additions (optional on read):
  std::uint64_t rows_per_chunk = 0;  ///< working-set chunk rows; 0 = a whole shard at once
  double safety_factor = 1.25;

  /// Checks, in order: dtype_bytes ≥ 1 and per-row bytes finite ≥ 0; `total_rows` equals the
  /// stored one when given; `resources` equals the declared ones when both exist; every shard's
  /// device is in the effective resources ("not in declared resources") and fits its memory
  /// (MemoryError with the numbers); shards tile [0, total_rows) exactly ("overlap", "gap",
  /// no empty shard except the single [0:0] of a zero-row placement). Throws InvalidInput.
  void validate(std::optional<std::uint64_t> total_rows = {}, const Resources* resources = nullptr) const;
  /// Shards on the device named `name`.
  std::vector<PlacementShard> for_device(std::string_view name) const;
  /// "Placement(rows=…, …)" plus one line per shard "name[start:stop] rows= sub_chunks=
  /// estimated_bytes=".
  std::string to_string() const;
  /// Reference `to_dict` shape (see docs/planning.md).
  std::string to_json(int indent = -1) const;
  static Placement from_json(std::string_view text);
  bool operator==(const Placement&) const = default;
};

/// Inputs of plan().
struct PlanOptions {
  std::uint64_t rows = 0;                   ///< N
  std::optional<ModelSummary> model;        ///< K and fixed bytes; none: K = 1, no fixed bytes
  std::optional<std::size_t> columns;       ///< data columns; default model->columns()
  std::size_t data_dtype_bytes = 4;         ///< 4 (float32 data) or 8 (float64)
  std::string precision = "float32";        ///< compute precision of the working set
  std::optional<std::uint64_t> num_chunks;  ///< exact number of row ranges (block assignment)
  std::uint64_t sub_chunks = 1;
  std::uint64_t rows_per_chunk = 65536;  ///< rows of one N×K working-set block; 0 = whole shard
  double safety_factor = 1.25;
};

/// Advisory row placement over `resources` (throughput-proportional, then split to fit memory).
/// Throws InvalidInput for bad options and MemoryError when the fixed state or one row does not
/// fit a device.
Placement plan(const Resources& resources, const PlanOptions& options);

/// A contiguous component range [component_start, component_stop) owned by one device.
struct ModelShard {
  DeviceSpec device;
  std::uint64_t component_start = 0;
  std::uint64_t component_stop = 0;
  std::uint64_t parameter_bytes = 0;
  std::uint64_t statistic_bytes = 0;

  std::uint64_t num_components() const noexcept { return component_stop - component_start; }
  /// Non-empty range; parameter + statistic bytes within known device memory (MemoryError
  /// "capacity").
  void validate() const;
  std::string to_json(int indent = -1) const;
  static ModelShard from_json(std::string_view text);
  bool operator==(const ModelShard&) const = default;
};

struct ShardingOptions {
  std::string axis = "components";  ///< the only axis the engine shards
  std::uint64_t min_components_per_shard = 1;
};

/// Throughput-weighted contiguous component ranges over the first
/// max(1, min(#devices, K / min_components_per_shard)) devices.
std::vector<ModelShard> model_sharding_plan(const ModelSummary& model, const Resources& resources,
                                            const ShardingOptions& options = {});

}  // namespace mixle::plan
