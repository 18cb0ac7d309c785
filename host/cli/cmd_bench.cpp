// `mixle bench`: times the E-step, the M-step and a whole EM iteration on each selected device,
// checks each run against the CPU oracle, prints a table and optionally writes versioned JSON.
// The work is done by host/bench (a library, so `mixle resources --calibrate` can reuse it);
// this file only parses options. Metrics and JSON fields: bench/README.md.
#include "host/bench/bench.hpp"
#include "host/bench/report.hpp"
#include "host/cli/command.hpp"
#include "host/cli/option_checks.hpp"
#include "comms/comm_type.hpp"
#include "host/bench/comm_bench.hpp"
#include "host/launch_env.hpp"

#include <chrono>

#include "engine/compute.hpp"

#include <mixle/error.hpp>
#include <mixle/family.hpp>

#include <cstdio>
#include <memory>

namespace mixle::host {
namespace {

// The options' defaults are the library's default case (bench::BenchCase), so `mixle bench` and
// a program that benchmarks through the library time the same problem unless told otherwise.
constexpr bench::BenchCase kDefaultCase{};

struct BenchArgs {
  std::string family = family_name(kDefaultCase.family), device = "cpu",
              precision = engine::precision_name(kDefaultCase.precision), json;
  long long rows = static_cast<long long>(kDefaultCase.rows), dims = static_cast<long long>(kDefaultCase.dims),
            components = static_cast<long long>(kDefaultCase.components),
            categories = static_cast<long long>(kDefaultCase.categories);
  int threads = kDefaultCase.threads, iters = kDefaultCase.iters, warmup = kDefaultCase.warmup;
  std::uint64_t seed = kDefaultCase.seed;
  double centre_scale = kDefaultCase.centre_scale;
  std::string prune = "auto";
  bool comm_bench = false;
  std::string comm_type = "auto";
  std::size_t min_bytes = 8, max_bytes = 16u << 20;
};

// The largest message per rank: beyond any one device's memory, and far from where the ×4 steps
// between sizes would overflow.
constexpr long long kMaxCommBytes = 1LL << 36;

// Option values are usage errors (exit 2): the user typed them, nothing ran yet.
template <class F>
auto as_usage(F&& f) {
  try {
    return f();
  } catch (const InvalidInput& e) {
    throw UsageError(e.what());
  }
}

void check_device_syntax(const std::string& d) {
  if (d == "cpu" || d == "cuda" || d == "all") return;
  if (d.rfind("cuda:", 0) == 0 && d.size() > 5 && d.find_first_not_of("0123456789", 5) == std::string::npos) return;
  throw UsageError("--device \"" + d + "\": accepted: cpu, cuda, cuda:<index>, all");
}

bench::BenchCase to_case(const BenchArgs& a) {
  bench::BenchCase c;
  c.family = as_usage([&] { return family_from_name(a.family); });
  c.precision = as_usage([&] { return engine::precision_from_name(a.precision); });
  c.rows = static_cast<std::size_t>(a.rows);  // each ≥ 1 (≥ 2 categories), checked as parsed
  c.dims = static_cast<std::size_t>(a.dims);
  c.components = static_cast<std::size_t>(a.components);
  c.categories = static_cast<std::size_t>(a.categories);
  c.threads = a.threads;
  c.iters = a.iters;
  c.warmup = a.warmup;
  c.seed = a.seed;
  c.centre_scale = a.centre_scale;
  c.prune = as_usage([&] { return engine::prune_from_name(a.prune); });
  as_usage([&] { bench::validate_case(c); });
  return c;
}

/// `--comm`: rank 0 prints the table (and --json); every rank takes part.
int run_comm(const BenchArgs& a) {
  const LaunchEnv env = detect_launch_env();
  auto comm = communicator_from_env(env, resolve_comm(a.comm_type, env, false), std::chrono::seconds(60));
  if (a.min_bytes > a.max_bytes)
    throw UsageError("--comm needs --min-bytes ≤ --max-bytes (" + std::to_string(a.min_bytes) + " > " +
                     std::to_string(a.max_bytes) + ")");
  const auto rows = bench::run_comm_bench(*comm, a.min_bytes, a.max_bytes, a.iters, a.warmup);
  if (comm->rank() == 0) {
    std::fputs(bench::format_comm_table(*comm, rows).c_str(), stdout);
    if (!a.json.empty()) write_file_atomic(a.json, bench::format_comm_json(*comm, rows));
  }
  for (const auto& r : rows)
    if (!r.correct) return 1;
  return 0;
}

std::function<int()> setup_bench(CLI::App& app) {
  auto a = std::make_shared<BenchArgs>();
  app.add_option("--family", a->family, "Component family (" + family_names() + ")")->capture_default_str();
  app.add_option("-n,--rows", a->rows, "Rows N of the synthetic dataset")
      ->check(at_least(1, "the rows benchmarked, ≥ 1"))
      ->capture_default_str();
  app.add_option("-d,--dims", a->dims, "Dimensions D (columns)")
      ->check(at_least(1, "the columns, ≥ 1"))
      ->capture_default_str();
  app.add_option("-k,--components", a->components, "Components K")
      ->check(at_least(1, "the components, ≥ 1"))
      ->capture_default_str();
  app.add_option("--categories", a->categories, "Categories V per feature (categorical)")
      ->check(at_least(2, "the categories per feature, ≥ 2"))
      ->capture_default_str();
  app.add_option("--centre-scale", a->centre_scale,
                 "Gaussian families: the generating means are this scale times N(0,1) per dimension (σ in "
                 "[0.5, 1.5]); 4 separates the components, 0.5 overlaps them")
      ->capture_default_str();
  app.add_option("--prune", a->prune, "Exact pruning of the timed E-steps: auto, off (the same bits)")
      ->check(CLI::IsMember({"auto", "off"}))
      ->capture_default_str();
  app.add_option("--device", a->device, "cpu, cuda, cuda:i, or all (cpu and every CUDA device)")->capture_default_str();
  app.add_option("--precision", a->precision, "Compute precision: fp32, fp64, tf32 (CUDA)")->capture_default_str();
  app.add_option("--threads", a->threads, "CPU threads (0 = all)")
      ->check(at_least(0, "cpu threads, or 0 for all"))
      ->capture_default_str();
  app.add_option("--iters", a->iters, "Timed repetitions per phase")
      ->check(at_least(1, "the timed repetitions, ≥ 1"))
      ->capture_default_str();
  app.add_option("--warmup", a->warmup, "Untimed EM iterations first")
      ->check(at_least(0, "the untimed iterations, ≥ 0"))
      ->capture_default_str();
  app.add_option("--seed", a->seed, "Seed of the synthetic model and data")->capture_default_str();
  app.add_option("--json", a->json, "Also write the results as JSON here (atomically)");
  auto* comm = app.add_option_group("comm", "All-reduce latency and bandwidth across the ranks of this job");
  comm->add_flag("--comm", a->comm_bench, "Benchmark the communicator (run under torchrun, mpirun or mixle launch)");
  comm->add_option("--comm-type", a->comm_type, "Communicator type: auto, or one of " + comms::comm_type_names())
      ->capture_default_str();
  comm->add_option("--min-bytes", a->min_bytes, "Smallest message per rank (at least one double, 8 bytes, is sent)")
      ->check(at_least(1, "bytes per rank, ≥ 1"))
      ->capture_default_str();
  comm->add_option("--max-bytes", a->max_bytes, "Largest message per rank")
      ->check(whole_in(1, kMaxCommBytes, "bytes per rank, 1 to 2^36 (64 GiB)"))
      ->capture_default_str();
  return [a]() -> int {
    if (a->comm_bench) return run_comm(*a);
    check_device_syntax(a->device);
    const bench::BenchCase c = to_case(*a);
    const std::vector<std::string> devices = bench::expand_devices(a->device);
    if (c.precision == engine::Precision::tf32 && devices.front() == "cpu")
      throw UsageError(
          "--precision tf32 is a CUDA tensor-core mode; the CPU computes fp32 or fp64 "
          "(use --device cuda or cuda:i with tf32)");
    // Fail before spending minutes on data: NotCompiled for CUDA in a CPU-only build, and
    // InvalidInput for a device index that does not exist.
    for (const auto& d : devices) (void)engine::make_compute(d, c.threads);

    std::fprintf(stderr, "mixle: bench: preparing %s N=%zu D=%zu K=%zu …\n", family_name(c.family), c.rows, c.dims,
                 c.components);
    const bench::PreparedCase prepared = bench::prepare_case(c);
    std::vector<bench::BenchResult> results;
    for (const auto& d : devices) {
      std::fprintf(stderr, "mixle: bench: %s (%d warm-up, %d timed per phase) …\n", d.c_str(), c.warmup, c.iters);
      results.push_back(bench::run_case(prepared, d));
    }
    std::fputs(bench::format_table(prepared, results).c_str(), stdout);
    if (!a->json.empty()) {
      write_file_atomic(a->json, bench::format_json(prepared, results));
      std::fprintf(stderr, "mixle: bench: results written to %s\n", a->json.c_str());
    }
    return bench::report_failed_checks(results, stderr);
  };
}

}  // namespace
MIXLE_REGISTER_COMMAND("bench", "Time E-step, M-step and EM iteration per device, checked against the CPU oracle",
                       setup_bench, 60);
}  // namespace mixle::host
