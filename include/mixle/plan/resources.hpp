// Placement targets: DeviceSpec (one CPU slot, GPU or rank) and Resources (the set a plan uses).
// Pure value types; constructors that read the machine or the launcher live in host/ and take
// their inputs explicitly here (an Environment map), so planning stays deterministic and testable.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace mixle::plan {

/// Launcher environment variables (name → value). host::process_environment() returns the
/// real one; tests pass their own.
using Environment = std::map<std::string, std::string, std::less<>>;

/// Canonical precision name: "float16", "bfloat16", "float32" or "float64". Accepts those and
/// the aliases fp16/f16/half, bf16, fp32/f32/float, fp64/f64/double (case-insensitive).
/// Throws InvalidInput naming the value and listing the accepted names.
std::string precision_name(std::string_view precision);
/// Bytes per element of a canonical or alias precision name (2, 4 or 8).
std::size_t precision_bytes(std::string_view precision);

/// One placement target. JSON shape (reference `to_dict`): name, kind, memory_bytes, engine,
/// throughput, precision, node_id, local_rank, global_rank; mixle adds `product` and
/// `compute_units`, written only when set and optional on read.
struct DeviceSpec {
  std::string name;                           ///< unique within a Resources ("cpu:0", "cuda:1")
  std::string kind = "cpu";                   ///< "cpu", "cuda", "gpu", "mps"
  std::optional<std::uint64_t> memory_bytes;  ///< usable memory in bytes; unset = unknown
  std::string engine = "cpu";                 ///< compute engine that runs on it ("cpu", "cuda")
  double throughput = 1.0;                    ///< relative speed weight (calibrated: rows/s)
  std::optional<std::string> precision;       ///< canonical compute precision, if pinned
  std::optional<std::int64_t> node_id;        ///< launcher node index
  std::optional<std::int64_t> local_rank;     ///< rank within the node
  std::optional<std::int64_t> global_rank;    ///< rank within the world
  std::optional<std::string> product;         ///< hardware name, e.g. "NVIDIA H200" (mixle)
  std::optional<std::int64_t> compute_units;  ///< CPUs of a slot or SMs of a GPU (mixle)

  /// kind is "cuda", "mps" or "gpu".
  bool is_gpu() const noexcept;
  /// Throws InvalidInput naming the field and value: blank name, throughput not finite and > 0,
  /// memory_bytes 0, negative ranks/node/compute_units, unknown precision.
  void validate() const;
  bool operator==(const DeviceSpec&) const = default;
};

/// Options shared by the slot constructors (from_mpi, from_spark, local, …).
struct SlotOptions {
  std::optional<std::uint64_t> memory_bytes;  ///< total bytes, split evenly over the slots
  double throughput = 1.0;                    ///< weight of every slot
  std::optional<std::string> precision;       ///< canonicalised by precision_name
};

/// Default throughput weight of a GPU relative to one CPU slot (the reference's 10).
inline constexpr double kDefaultGpuThroughput = 10.0;

/// What a launcher node offers when its ranks each take one GPU (from_torchrun, from_slurm).
struct LaunchOptions {
  std::optional<std::uint64_t> memory_bytes;  ///< CPU ranks: one node's bytes, split over its ranks
  std::optional<std::string> precision;
  /// Memory in bytes of each GPU visible on this node, by local index; empty = CPU ranks.
  /// Nodes are assumed homogeneous (every node has this node's GPUs).
  std::vector<std::uint64_t> gpu_memory_bytes;
  double gpu_throughput = kDefaultGpuThroughput;  ///< default weight of a GPU rank (CPU ranks get 1)
};

/// Options of Resources::discover (implemented in host/, it reads the machine).
struct DiscoverOptions {
  std::size_t cpu_workers = 1;  ///< CPU slots; the affinity CPUs and memory are split over them
  bool include_cuda = true;     ///< add one "cuda:i" device per visible GPU (CUDA builds)
  std::optional<std::string> precision;
};

/// A validated, non-empty collection of devices with unique names and unique physical identities
/// (node_id, kind, local_rank) among devices that set node_id and local_rank.
class Resources {
 public:
  /// Throws InvalidInput when empty, a device is invalid, a name repeats or a physical identity
  /// repeats ("duplicate physical device identity").
  explicit Resources(std::vector<DeviceSpec> devices);

  const std::vector<DeviceSpec>& devices() const noexcept { return devices_; }
  std::size_t size() const noexcept { return devices_.size(); }
  /// The device named `name`, or nullptr.
  const DeviceSpec* find(std::string_view name) const noexcept;
  /// The device with the largest throughput (the first on ties).
  const DeviceSpec& fastest() const noexcept;

  /// One "cpu:0".
  static Resources single_cpu(const SlotOptions& options = {});
  /// `num_cpus` (≥ 1) slots "cpu:i", each memory_bytes / num_cpus.
  static Resources local(std::size_t num_cpus, const SlotOptions& options = {});
  /// CPU slots from the affinity mask and the cgroup/machine memory, plus CUDA devices when
  /// built with CUDA. Defined in host/resources_discovery.cpp.
  static Resources discover(const DiscoverOptions& options = {});
  static Resources from_specs(std::vector<DeviceSpec> devices);
  /// `world_size` slots "mpi:i" (CPU), memory split evenly.
  static Resources from_mpi(std::size_t world_size, const SlotOptions& options = {});
  /// World size from the first set of OMPI_COMM_WORLD_SIZE, PMI_SIZE, PMIX_SIZE,
  /// MPI_LOCALNRANKS; 1 when none is set.
  static Resources from_mpi(const Environment& env, const SlotOptions& options = {});
  /// From a Dask `client.scheduler_info()` JSON document: one "dask:<address>" per worker,
  /// sorted by address, memory = memory_limit, throughput = max(1, nthreads).
  static Resources from_dask(std::string_view scheduler_info_json, std::optional<std::string> precision = {});
  /// From `{"defaultParallelism": P, "executorMemory": "4g" | bytes}` (or "memory_bytes"):
  /// P slots "spark:i" (P ≤ 0 or absent → 1), the memory split evenly.
  static Resources from_spark(std::string_view spark_json, std::optional<std::string> precision = {});
  /// The whole torchrun world (one device per global rank) from WORLD_SIZE, LOCAL_WORLD_SIZE,
  /// RANK, LOCAL_RANK, GROUP_RANK, with every topology check of the reference.
  static Resources from_torchrun(const Environment& env, const LaunchOptions& options = {});
  /// The whole srun world from SLURM_NTASKS, SLURM_PROCID, SLURM_LOCALID, SLURM_NODEID and
  /// SLURM_TASKS_PER_NODE (or SLURM_NTASKS_PER_NODE); block task distribution is required.
  static Resources from_slurm(const Environment& env, const LaunchOptions& options = {});

  /// `{"devices":[…]}`; indent < 0 writes one line. Doubles round-trip exactly.
  std::string to_json(int indent = -1) const;
  /// Throws InvalidInput naming the field when the document does not have the shape above.
  static Resources from_json(std::string_view text);
  /// Atomic write (temporary file in the same folder, then rename).
  void save(const std::string& path) const;
  static Resources load(const std::string& path);

  bool operator==(const Resources&) const = default;

 private:
  std::vector<DeviceSpec> devices_;
};

}  // namespace mixle::plan
