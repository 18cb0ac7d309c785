// Resources from launchers and orchestrators: MPI, Dask, Spark, torchrun, SLURM. Each takes its
// inputs explicitly (environment map or JSON text) so it stays pure and testable.
#include <mixle/plan/resources.hpp>

#include <mixle/error.hpp>

#include "plan/json_fields.hpp"
#include "plan/slurm_tasks.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <limits>
#include <map>

namespace mixle::plan {

namespace {

using detail::Json;

const std::string* env_get(const Environment& env, std::string_view name) {
  auto it = env.find(name);
  return it == env.end() ? nullptr : &it->second;
}

/// An environment integer ≥ min; names the variable and the value on failure.
std::int64_t env_int(std::string_view name, const std::string& value, std::int64_t min) {
  std::int64_t out = 0;
  const char* first = value.data();
  const char* last = value.data() + value.size();
  auto [ptr, ec] = std::from_chars(first, last, out);
  if (ec != std::errc() || ptr != last || value.empty()) {
    throw InvalidInput(std::string(name) + "='" + value +
                       "' is not an integer; accepted: an "
                       "integer ≥ " +
                       std::to_string(min));
  }
  if (out < min) {
    throw InvalidInput(std::string(name) + "=" + value + " is out of range; accepted: an integer ≥ " +
                       std::to_string(min));
  }
  return out;
}

std::optional<std::int64_t> env_opt_int(const Environment& env, std::string_view name, std::int64_t min) {
  const std::string* v = env_get(env, name);
  if (!v || v->empty()) return std::nullopt;
  return env_int(name, *v, min);
}

std::int64_t env_required(const Environment& env, std::string_view name, std::int64_t min, std::string_view why) {
  auto v = env_opt_int(env, name, min);
  if (!v) {
    throw InvalidInput(std::string(name) + " is not set; " + std::string(why));
  }
  return *v;
}

std::optional<std::string> canonical(const std::optional<std::string>& precision) {
  if (!precision) return std::nullopt;
  return precision_name(*precision);
}

/// Spark-style memory sizes: bytes, or a number with k/m/g/t (binary units, as Spark reads them).
std::uint64_t parse_memory_size(const Json& value, std::string_view path) {
  if (!value.is_string()) return detail::as_uint(value, path);
  std::string text = value.get<std::string>();
  std::string digits;
  std::size_t i = 0;
  while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) digits += text[i++];
  std::string unit = text.substr(i);
  for (char& c : unit) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (!unit.empty() && unit.back() == 'b') unit.pop_back();
  std::uint64_t scale = 0;
  if (unit.empty())
    scale = 1;
  else if (unit == "k")
    scale = 1ull << 10;
  else if (unit == "m")
    scale = 1ull << 20;
  else if (unit == "g")
    scale = 1ull << 30;
  else if (unit == "t")
    scale = 1ull << 40;
  if (digits.empty() || scale == 0) {
    throw InvalidInput(std::string(path) + "='" + text +
                       "' is not a memory size; accepted: bytes "
                       "or a number with k, m, g or t (e.g. \"4g\")");
  }
  std::uint64_t n = std::stoull(digits);
  if (n > std::numeric_limits<std::uint64_t>::max() / scale) {
    throw InvalidInput(std::string(path) + "='" + text + "' is too large");
  }
  return n * scale;
}

struct RankPlacement {
  std::int64_t node = 0;
  std::int64_t local = 0;
};

/// One device per global rank; the device and memory depend on whether GPUs are visible.
Resources world_devices(std::string_view prefix, const std::vector<RankPlacement>& ranks,
                        const LaunchOptions& options) {
  const std::int64_t world = static_cast<std::int64_t>(ranks.size());
  const bool gpus = !options.gpu_memory_bytes.empty();
  std::map<std::int64_t, std::uint64_t> ranks_on_node;
  for (const RankPlacement& p : ranks) ++ranks_on_node[p.node];
  std::vector<DeviceSpec> devices;
  for (std::int64_t r = 0; r < world; ++r) {
    const RankPlacement& p = ranks[static_cast<std::size_t>(r)];
    DeviceSpec d;
    d.name =
        std::string(prefix) + "-node:" + std::to_string(p.node) + (gpus ? ":cuda:" : ":cpu:") + std::to_string(p.local);
    d.kind = gpus ? "cuda" : "cpu";
    d.engine = gpus ? "cuda" : "cpu";
    d.throughput = gpus ? options.gpu_throughput : 1.0;
    if (gpus) {
      d.memory_bytes = options.gpu_memory_bytes[static_cast<std::size_t>(p.local)];
    } else if (options.memory_bytes) {
      // Nodes are alike: each rank gets its share of its own node's memory.
      d.memory_bytes = std::max<std::uint64_t>(1, *options.memory_bytes / ranks_on_node[p.node]);
    }
    d.precision = canonical(options.precision);
    d.node_id = p.node;
    d.local_rank = p.local;
    d.global_rank = r;
    devices.push_back(std::move(d));
  }
  return Resources(std::move(devices));
}

void check_gpu_count(std::int64_t local_world, const LaunchOptions& options, std::string_view var) {
  if (!options.gpu_memory_bytes.empty() && local_world > static_cast<std::int64_t>(options.gpu_memory_bytes.size())) {
    throw InvalidInput(std::string(var) + "=" + std::to_string(local_world) + " exceeds the " +
                       std::to_string(options.gpu_memory_bytes.size()) +
                       " visible GPUs of this node and would duplicate a physical GPU; accepted: "
                       "at most one rank per visible GPU");
  }
}

}  // namespace

Resources Resources::from_mpi(std::size_t world_size, const SlotOptions& options) {
  if (world_size == 0) throw InvalidInput("MPI world_size=0 is invalid; accepted: an integer ≥ 1");
  std::vector<DeviceSpec> devices;
  for (std::size_t i = 0; i < world_size; ++i) {
    DeviceSpec d;
    d.name = "mpi:" + std::to_string(i);
    if (options.memory_bytes) d.memory_bytes = std::max<std::uint64_t>(1, *options.memory_bytes / world_size);
    d.throughput = options.throughput;
    d.precision = canonical(options.precision);
    d.global_rank = static_cast<std::int64_t>(i);
    devices.push_back(std::move(d));
  }
  return Resources(std::move(devices));
}

Resources Resources::from_mpi(const Environment& env, const SlotOptions& options) {
  for (const char* var : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE", "MPI_LOCALNRANKS"}) {
    if (auto size = env_opt_int(env, var, 1)) {
      return from_mpi(static_cast<std::size_t>(*size), options);
    }
  }
  return from_mpi(std::size_t{1}, options);
}

Resources Resources::from_dask(std::string_view scheduler_info_json, std::optional<std::string> precision) {
  const Json doc = detail::parse_object(scheduler_info_json, "Dask scheduler_info document");
  const Json& workers = detail::require(doc, "", "workers");
  if (!workers.is_object() || workers.empty()) {
    throw InvalidInput("Dask scheduler_info workers=" + detail::describe(workers) +
                       " has no workers; accepted: an object mapping each worker address to "
                       "{\"nthreads\", \"memory_limit\"}");
  }
  // nlohmann objects iterate in key order, which is the address sort the reference uses.
  std::vector<DeviceSpec> devices;
  for (const auto& [address, info] : workers.items()) {
    const std::string context = "workers[" + address + "]";
    if (!info.is_object()) {
      throw InvalidInput(context + "=" + detail::describe(info) + " is not an object");
    }
    DeviceSpec d;
    d.name = "dask:" + address;
    auto threads = detail::get_int(info, context, "nthreads", 0, 1);
    d.throughput = static_cast<double>(std::max<std::int64_t>(1, threads));
    if (auto mem = detail::get_opt_uint(info, context, "memory_limit"); mem && *mem > 0) {
      d.memory_bytes = *mem;  // Dask writes 0 for "no limit"
    }
    d.precision = canonical(precision);
    devices.push_back(std::move(d));
  }
  return Resources(std::move(devices));
}

Resources Resources::from_spark(std::string_view spark_json, std::optional<std::string> precision) {
  const Json doc = detail::parse_object(spark_json, "Spark document");
  std::int64_t slots = detail::get_int(doc, "", "defaultParallelism", std::numeric_limits<std::int64_t>::min(), 1);
  if (slots <= 0) slots = 1;  // the reference treats a falsy parallelism as one slot
  SlotOptions options;
  options.precision = precision;
  for (const char* field : {"memory_bytes", "executorMemory"}) {
    if (auto it = doc.find(field); it != doc.end() && !it->is_null()) {
      options.memory_bytes = parse_memory_size(*it, field);
      break;
    }
  }
  Resources base = from_mpi(static_cast<std::size_t>(slots), options);
  std::vector<DeviceSpec> devices = base.devices();
  for (std::size_t i = 0; i < devices.size(); ++i) {
    devices[i].name = "spark:" + std::to_string(i);
    devices[i].global_rank.reset();
  }
  return Resources(std::move(devices));
}

Resources Resources::from_torchrun(const Environment& env, const LaunchOptions& options) {
  const std::int64_t world = env_opt_int(env, "WORLD_SIZE", 1).value_or(1);
  auto local_world = env_opt_int(env, "LOCAL_WORLD_SIZE", 1);
  if (world > 1 && !local_world) {
    throw InvalidInput("WORLD_SIZE=" + std::to_string(world) +
                       " but LOCAL_WORLD_SIZE is not set; torchrun sets both — accepted: "
                       "LOCAL_WORLD_SIZE dividing WORLD_SIZE");
  }
  const std::int64_t local = local_world.value_or(1);
  if (world % local != 0) {
    throw InvalidInput("LOCAL_WORLD_SIZE=" + std::to_string(local) +
                       " does not divide WORLD_SIZE=" + std::to_string(world) + "; accepted: a divisor of WORLD_SIZE");
  }
  if (world > 1) {
    const char* why =
        "torchrun sets RANK, LOCAL_RANK and GROUP_RANK for every worker of a world "
        "larger than 1";
    const std::int64_t rank = env_required(env, "RANK", 0, why);
    const std::int64_t local_rank = env_required(env, "LOCAL_RANK", 0, why);
    const std::int64_t group_rank = env_required(env, "GROUP_RANK", 0, why);
    if (rank >= world) {
      throw InvalidInput("RANK=" + std::to_string(rank) +
                         " is outside the world; accepted: 0 ≤ "
                         "RANK < WORLD_SIZE=" +
                         std::to_string(world));
    }
    if (local_rank != rank % local || group_rank != rank / local) {
      throw InvalidInput(
          "torchrun topology is inconsistent: RANK=" + std::to_string(rank) +
          ", LOCAL_WORLD_SIZE=" + std::to_string(local) + " imply LOCAL_RANK=" + std::to_string(rank % local) +
          " and GROUP_RANK=" + std::to_string(rank / local) + ", but LOCAL_RANK=" + std::to_string(local_rank) +
          " and GROUP_RANK=" + std::to_string(group_rank));
    }
  } else if (auto rank = env_opt_int(env, "RANK", 0); rank && *rank != 0) {
    throw InvalidInput("RANK=" + std::to_string(*rank) + " is outside a world of 1; accepted: 0");
  }
  check_gpu_count(local, options, "LOCAL_WORLD_SIZE");
  std::vector<RankPlacement> ranks;
  for (std::int64_t r = 0; r < world; ++r) ranks.push_back({r / local, r % local});
  return world_devices("torchrun", ranks, options);
}

std::vector<std::int64_t> detail::slurm_tasks_per_node(const std::string& text) {
  std::vector<std::int64_t> out;
  const std::string bad =
      "SLURM_TASKS_PER_NODE='" + text + "' is not understood; accepted: counts with repeats, e.g. \"2(x3),1\"";
  std::size_t i = 0;
  while (i < text.size()) {
    std::size_t j = i;
    while (j < text.size() && std::isdigit(static_cast<unsigned char>(text[j]))) ++j;
    if (j == i) throw InvalidInput(bad);
    const std::int64_t count = env_int("SLURM_TASKS_PER_NODE", text.substr(i, j - i), 1);
    std::int64_t repeat = 1;
    if (j < text.size() && text[j] == '(') {
      const std::size_t close = text.find(')', j);
      if (close == std::string::npos || text.compare(j, 2, "(x") != 0) throw InvalidInput(bad);
      repeat = env_int("SLURM_TASKS_PER_NODE", text.substr(j + 2, close - j - 2), 1);
      j = close + 1;
    }
    for (std::int64_t r = 0; r < repeat; ++r) out.push_back(count);
    if (j < text.size() && text[j] != ',') throw InvalidInput(bad);
    i = j + 1;
  }
  if (out.empty()) throw InvalidInput(bad);
  return out;
}

Resources Resources::from_slurm(const Environment& env, const LaunchOptions& options) {
  const char* why =
      "run under srun, which sets SLURM_NTASKS, SLURM_PROCID, SLURM_LOCALID and "
      "SLURM_NODEID";
  const std::int64_t world = env_required(env, "SLURM_NTASKS", 1, why);
  const std::int64_t rank = env_required(env, "SLURM_PROCID", 0, why);
  const std::int64_t local_rank = env_required(env, "SLURM_LOCALID", 0, why);
  const std::int64_t node = env_required(env, "SLURM_NODEID", 0, why);
  std::vector<std::int64_t> per_node;
  if (const std::string* tasks = env_get(env, "SLURM_TASKS_PER_NODE"); tasks && !tasks->empty()) {
    per_node = detail::slurm_tasks_per_node(*tasks);
  } else if (auto n = env_opt_int(env, "SLURM_NTASKS_PER_NODE", 1)) {
    if (world % *n != 0) {
      throw InvalidInput("SLURM_NTASKS_PER_NODE=" + std::to_string(*n) + " does not divide SLURM_NTASKS=" +
                         std::to_string(world) + "; accepted: a divisor, or set SLURM_TASKS_PER_NODE");
    }
    per_node.assign(static_cast<std::size_t>(world / *n), *n);
  } else if (world == 1) {
    per_node = {1};
  } else {
    throw InvalidInput("SLURM_NTASKS=" + std::to_string(world) +
                       " but neither SLURM_TASKS_PER_NODE nor SLURM_NTASKS_PER_NODE is set; "
                       "accepted: srun sets SLURM_TASKS_PER_NODE (e.g. \"2(x2)\")");
  }
  std::int64_t total = 0;
  for (std::int64_t n : per_node) total += n;
  if (total != world) {
    throw InvalidInput("SLURM_TASKS_PER_NODE adds up to " + std::to_string(total) + " tasks but SLURM_NTASKS=" +
                       std::to_string(world) + "; accepted: per-node counts summing to SLURM_NTASKS");
  }
  if (rank >= world) {
    throw InvalidInput("SLURM_PROCID=" + std::to_string(rank) +
                       " is outside the world; accepted: "
                       "0 ≤ SLURM_PROCID < SLURM_NTASKS=" +
                       std::to_string(world));
  }
  // Block distribution: node n holds the ranks after those of nodes 0..n-1, in local order. With
  // any other distribution the rank → (node, local) map is not derivable from the environment.
  std::vector<RankPlacement> ranks;
  std::int64_t max_local = 0;
  for (std::size_t n = 0; n < per_node.size(); ++n) {
    for (std::int64_t l = 0; l < per_node[n]; ++l) ranks.push_back({static_cast<std::int64_t>(n), l});
    max_local = std::max(max_local, per_node[n]);
  }
  const RankPlacement& expected = ranks[static_cast<std::size_t>(rank)];
  if (expected.node != node || expected.local != local_rank) {
    throw InvalidInput(
        "SLURM topology is inconsistent with block distribution: SLURM_PROCID=" + std::to_string(rank) +
        " implies SLURM_NODEID=" + std::to_string(expected.node) +
        " and SLURM_LOCALID=" + std::to_string(expected.local) + ", but SLURM_NODEID=" + std::to_string(node) +
        " and SLURM_LOCALID=" + std::to_string(local_rank) + "; accepted: srun --distribution=block (the default)");
  }
  check_gpu_count(max_local, options, "SLURM tasks per node");
  return world_devices("slurm", ranks, options);
}

}  // namespace mixle::plan
