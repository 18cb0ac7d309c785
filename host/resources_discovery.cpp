// Resources::discover and the machine readers behind it (Linux).
#include "host/resources_discovery.hpp"

#include <mixle/error.hpp>

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <fstream>
#include <sstream>

#if MIXLE_HAVE_CUDA
#include <cuda_runtime.h>
#endif

extern char** environ;

namespace mixle::host {

namespace {

std::optional<std::string> read_small_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string_view trim(std::string_view s) {
  const auto first = s.find_first_not_of(" \t\r\n");
  if (first == std::string_view::npos) return {};
  return s.substr(first, s.find_last_not_of(" \t\r\n") - first + 1);
}

/// The lines of a text, without their '\n'.
std::vector<std::string_view> lines_of(std::string_view text) {
  std::vector<std::string_view> lines;
  for (std::size_t pos = 0; pos < text.size();) {
    const std::size_t end = std::min(text.find('\n', pos), text.size());
    lines.push_back(text.substr(pos, end - pos));
    pos = end + 1;
  }
  return lines;
}

std::optional<std::uint64_t> parse_u64(std::string_view s) {
  std::uint64_t value = 0;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (ec != std::errc() || ptr != s.data() + s.size() || s.empty()) return std::nullopt;
  return value;
}

}  // namespace

std::size_t affinity_cpu_count() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) {
    const int n = CPU_COUNT(&set);
    if (n > 0) return static_cast<std::size_t>(n);
  }
  const long online = sysconf(_SC_NPROCESSORS_ONLN);
  return online > 0 ? static_cast<std::size_t>(online) : 1;
}

std::optional<std::uint64_t> parse_meminfo_total(std::string_view meminfo) {
  for (const std::string_view line : lines_of(meminfo)) {
    if (!line.starts_with("MemTotal:")) continue;
    std::string_view rest = trim(line.substr(9));
    std::uint64_t scale = 1;
    if (rest.ends_with(" kB")) {
      rest = trim(rest.substr(0, rest.size() - 3));
      scale = 1024;  // /proc/meminfo's "kB" is KiB
    }
    if (auto v = parse_u64(rest)) return *v * scale;
    return std::nullopt;
  }
  return std::nullopt;
}

std::optional<std::uint64_t> parse_cgroup_memory_limit(std::string_view text) {
  const std::string_view value = trim(text);
  if (value.empty() || value == "max") return std::nullopt;
  auto v = parse_u64(value);
  // cgroup v1 reports "unlimited" as a page-rounded near-2^63 number.
  constexpr std::uint64_t kUnlimitedV1 = 1ull << 60;
  if (!v || *v == 0 || *v >= kUnlimitedV1) return std::nullopt;
  return v;
}

std::optional<std::string> parse_cgroup_v2_path(std::string_view text) {
  for (const std::string_view line : lines_of(text))
    if (line.starts_with("0::")) return std::string(trim(line.substr(3)));
  return std::nullopt;
}

std::optional<std::string> parse_cgroup_v1_memory_path(std::string_view text) {
  for (const std::string_view line : lines_of(text)) {
    // "N:controller,controller:/path"
    const auto first = line.find(':'), second = first == std::string_view::npos ? first : line.find(':', first + 1);
    if (second == std::string_view::npos) continue;
    std::string_view controllers = line.substr(first + 1, second - first - 1);
    while (!controllers.empty()) {
      const auto comma = controllers.find(',');
      if (controllers.substr(0, comma) == "memory") return std::string(trim(line.substr(second + 1)));
      controllers = comma == std::string_view::npos ? std::string_view() : controllers.substr(comma + 1);
    }
  }
  return std::nullopt;
}

namespace {

/// The tightest limit in `file` on the way from the cgroup `path` (below `mount`) up to the
/// mount's root: a limit set on a parent (a Slurm job, a Kubernetes pod) binds every cgroup
/// below it, and a container sees its own cgroup as the root.
std::optional<std::uint64_t> tightest_limit(const std::string& mount, std::string path, const char* file) {
  std::optional<std::uint64_t> tightest;
  if (path == "/") path.clear();
  for (;;) {
    if (auto text = read_small_file(mount + path + "/" + file))
      if (auto v = parse_cgroup_memory_limit(*text)) tightest = tightest ? std::min(*tightest, *v) : *v;
    if (path.empty()) return tightest;
    const auto slash = path.rfind('/');
    if (slash == std::string::npos)
      path.clear();  // a path /proc/self/cgroup would not write: read the root only
    else
      path.erase(slash);  // "/a/b" → "/a" → "" (the root)
  }
}

}  // namespace

std::optional<std::uint64_t> usable_memory_bytes(const MachineFiles& files) {
  std::optional<std::uint64_t> machine;
  if (auto text = read_small_file(files.proc + "/meminfo")) machine = parse_meminfo_total(*text);
  std::string v2_path, v1_path;
  if (auto text = read_small_file(files.proc + "/self/cgroup")) {
    v2_path = parse_cgroup_v2_path(*text).value_or("");
    v1_path = parse_cgroup_v1_memory_path(*text).value_or("");
  }
  std::optional<std::uint64_t> tightest = machine;
  for (const auto limit : {tightest_limit(files.cgroup, v2_path, "memory.max"),
                           tightest_limit(files.cgroup + "/memory", v1_path, "memory.limit_in_bytes")})
    if (limit) tightest = tightest ? std::min(*tightest, *limit) : *limit;
  return tightest;
}

std::vector<CudaDeviceInfo> cuda_devices() {
  std::vector<CudaDeviceInfo> out;
#if MIXLE_HAVE_CUDA
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status == cudaErrorNoDevice || status == cudaErrorInsufficientDriver) {
    (void)cudaGetLastError();  // no GPU is a normal state: clear the sticky error, report none
    return out;
  }
  if (status != cudaSuccess) {
    throw DeviceError(std::string("cudaGetDeviceCount failed: ") + cudaGetErrorName(status) + " (" +
                      cudaGetErrorString(status) + ")");
  }
  for (int i = 0; i < count; ++i) {
    cudaDeviceProp props{};
    const cudaError_t e = cudaGetDeviceProperties(&props, i);
    if (e != cudaSuccess) {
      throw DeviceError("cudaGetDeviceProperties(" + std::to_string(i) + ") failed: " + cudaGetErrorName(e) + " (" +
                        cudaGetErrorString(e) + ")");
    }
    out.push_back({props.name, static_cast<std::uint64_t>(props.totalGlobalMem),
                   static_cast<std::int64_t>(props.multiProcessorCount)});
  }
#endif
  return out;
}

plan::DeviceSpec gpu_device_spec(std::size_t index, const CudaDeviceInfo& gpu,
                                 const std::optional<std::string>& precision) {
  plan::DeviceSpec d;
  d.name = "cuda:" + std::to_string(index);
  d.kind = "cuda";
  d.engine = "cuda";
  d.memory_bytes = gpu.memory_bytes;
  d.throughput = kDefaultGpuThroughput;
  if (precision) d.precision = plan::precision_name(*precision);
  d.product = gpu.product;
  d.compute_units = gpu.multiprocessors;
  return d;
}

plan::Environment process_environment() {
  plan::Environment env;
  for (char** entry = environ; entry && *entry; ++entry) {
    std::string_view kv(*entry);
    const auto eq = kv.find('=');
    if (eq == std::string_view::npos) continue;
    env.emplace(std::string(kv.substr(0, eq)), std::string(kv.substr(eq + 1)));
  }
  return env;
}

plan::LaunchOptions launch_options_for_this_node(std::optional<std::string> precision) {
  plan::LaunchOptions options;
  options.precision = std::move(precision);
  options.memory_bytes = usable_memory_bytes();
  for (const CudaDeviceInfo& gpu : cuda_devices()) options.gpu_memory_bytes.push_back(gpu.memory_bytes);
  return options;
}

}  // namespace mixle::host

namespace mixle::plan {

Resources Resources::discover(const DiscoverOptions& options) {
  if (options.cpu_workers == 0) {
    throw InvalidInput("cpu_workers=0 is invalid; accepted: an integer ≥ 1");
  }
  SlotOptions slots;
  slots.memory_bytes = host::usable_memory_bytes();
  slots.precision = options.precision;
  std::vector<DeviceSpec> devices = local(options.cpu_workers, slots).devices();
  const std::size_t cpus = host::affinity_cpu_count();
  for (DeviceSpec& d : devices) {
    d.compute_units = static_cast<std::int64_t>(std::max<std::size_t>(1, cpus / options.cpu_workers));
  }
  if (options.include_cuda) {
    const std::vector<host::CudaDeviceInfo> gpus = host::cuda_devices();
    for (std::size_t i = 0; i < gpus.size(); ++i)
      devices.push_back(host::gpu_device_spec(i, gpus[i], options.precision));
  }
  return Resources(std::move(devices));
}

}  // namespace mixle::plan
