// Reading the machine for Resources::discover: CPUs in the affinity mask, memory from the cgroup
// limit or /proc/meminfo, CUDA devices through the runtime (CUDA builds only), and the process
// environment for the launcher constructors. The parsers are separate so tests can feed text.
#pragma once

#include <mixle/plan/resources.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace mixle::host {

/// CPUs this process may run on (sched_getaffinity), at least 1.
std::size_t affinity_cpu_count();

/// MemTotal of a /proc/meminfo text, in bytes; nullopt when absent.
std::optional<std::uint64_t> parse_meminfo_total(std::string_view meminfo);
/// A cgroup memory limit file's content (v2 memory.max: "max" or bytes; v1
/// memory.limit_in_bytes: bytes, where values ≥ 2^60 mean unlimited); nullopt when unlimited or
/// unreadable.
std::optional<std::uint64_t> parse_cgroup_memory_limit(std::string_view text);
/// The cgroup v2 path of this process from a /proc/self/cgroup text ("0::/path"), if any.
std::optional<std::string> parse_cgroup_v2_path(std::string_view proc_self_cgroup);

/// Where usable_memory_bytes reads the machine: the proc file system and the cgroup mount.
/// Tests point them at a folder of their own.
struct MachineFiles {
  std::string proc = "/proc";
  std::string cgroup = "/sys/fs/cgroup";
};

/// The cgroup v1 path of this process's memory controller from a /proc/self/cgroup text
/// ("N:memory:/path", the controller possibly among others: "N:cpu,memory:/path"), if any.
std::optional<std::string> parse_cgroup_v1_memory_path(std::string_view proc_self_cgroup);

/// The memory this process may use: the least of MemTotal and every cgroup memory limit set on
/// the way from its cgroup up to the mount's root, v2 (memory.max, its path from the "0::" line
/// of proc/self/cgroup) and v1 (memory/…/memory.limit_in_bytes, from the memory controller's
/// line) alike; nullopt when none can be read.
std::optional<std::uint64_t> usable_memory_bytes(const MachineFiles& files = {});

/// One visible CUDA device.
struct CudaDeviceInfo {
  std::string product;  ///< e.g. "NVIDIA H200"
  std::uint64_t memory_bytes = 0;
  std::int64_t multiprocessors = 0;
};
/// The visible CUDA devices; empty without a driver/device (cudaErrorNoDevice,
/// cudaErrorInsufficientDriver) or in a build without CUDA. Other CUDA errors → DeviceError.
std::vector<CudaDeviceInfo> cuda_devices();
/// How Resources::discover describes the visible CUDA device `index`: "cuda:index" on the cuda
/// engine, its memory, product and multiprocessors, the default GPU throughput until calibrated.
plan::DeviceSpec gpu_device_spec(std::size_t index, const CudaDeviceInfo& gpu,
                                 const std::optional<std::string>& precision);

using plan::kDefaultGpuThroughput;

/// The process environment as a plan::Environment.
plan::Environment process_environment();

/// LaunchOptions for from_torchrun/from_slurm with this node's visible GPUs filled in.
plan::LaunchOptions launch_options_for_this_node(std::optional<std::string> precision = {});

}  // namespace mixle::host
