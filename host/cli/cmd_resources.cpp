// `mixle resources`: describe the devices a run can use, as Resources JSON (docs/planning.md).
#include "host/cli/command.hpp"
#include "host/cli/option_checks.hpp"
#include "host/bench/bench.hpp"

#include <mixle/calibrate.hpp>

#include <filesystem>

#include "host/resources_discovery.hpp"
#include "plan/json_fields.hpp"

#include <mixle/error.hpp>
#include <mixle/plan/resources.hpp>

#include <iostream>

namespace mixle::host {
namespace {

struct ResourcesArgs {
  bool discover = false;
  bool from_torchrun = false;
  bool from_mpi = false;
  bool from_slurm = false;
  std::string from_dask;
  std::string from_spark;
  std::string out;
  std::size_t cpu_workers = 1;
  bool no_cuda = false;
  std::string precision;
  // --calibrate
  bool calibrate = false;
  std::string catalog;
  std::string family = "gaussian_diag";
  std::size_t rows = 65536, dims = 32, components = 64;
  int iters = 3;
};

/// Calibrates every device of `resources` on a synthetic case of the given size (one EM
/// iteration is the workload; mixle::calibrate_resources does the measuring and appends the
/// record to the catalog). A device that fails makes the command fail (exit 1) once the record
/// is appended; the Resources JSON is then not written.
plan::Resources calibrate(const plan::Resources& resources, const ResourcesArgs& a) {
  bench::BenchCase c;
  c.family = family_from_name(a.family);
  c.rows = a.rows;
  c.dims = a.dims;
  c.components = a.components;
  c.iters = a.iters;
  const bench::PreparedCase prepared = bench::prepare_case(c);
  CalibrateOptions options;
  options.workload = "em";
  options.sample_size = c.rows;  // the case prepared is the case timed and recorded
  options.repeats = c.iters;
  if (!a.precision.empty()) options.precision = a.precision;
  options.catalog_path = a.catalog;
  options.model_type = a.family;
  options.progress = [](const plan::DeviceCalibration& r) {
    std::cerr << "mixle:   " << r.device_name << ": "
              << (r.success ? std::to_string(static_cast<long long>(*r.throughput)) + " rows/s"
                            : "failed: " + r.error.value_or("?"))
              << "\n";
  };
  std::cerr << "mixle: calibrating " << resources.size() << " device(s) on " << a.family << " N=" << c.rows
            << " D=" << c.dims << " K=" << c.components << ", " << c.iters << " EM iteration(s) each …\n";
  try {
    plan::Resources calibrated = calibrate_resources(prepared.data, prepared.evaluated, resources, options);
    std::cerr << "mixle: appended a calibration record to " << a.catalog << "\n";
    return calibrated;
  } catch (const ResourceCalibrationError&) {
    std::cerr << "mixle: appended a calibration record to " << a.catalog << "\n";
    throw;
  }
}

plan::Resources build(const ResourcesArgs& a) {
  std::optional<std::string> precision;
  if (!a.precision.empty()) precision = a.precision;
  if (a.from_torchrun) {
    return plan::Resources::from_torchrun(process_environment(), launch_options_for_this_node(precision));
  }
  if (a.from_slurm) {
    return plan::Resources::from_slurm(process_environment(), launch_options_for_this_node(precision));
  }
  if (a.from_mpi) {
    // Every rank shares the node's memory; the total is split over the ranks.
    return plan::Resources::from_mpi(process_environment(),
                                     {.memory_bytes = usable_memory_bytes(), .precision = precision});
  }
  if (!a.from_dask.empty()) {
    return plan::Resources::from_dask(plan::detail::read_text(a.from_dask), precision);
  }
  if (!a.from_spark.empty()) {
    return plan::Resources::from_spark(plan::detail::read_text(a.from_spark), precision);
  }
  return plan::Resources::discover({.cpu_workers = a.cpu_workers, .include_cuda = !a.no_cuda, .precision = precision});
}

std::function<int()> setup_resources(CLI::App& app) {
  auto args = std::make_shared<ResourcesArgs>();
  auto* source = app.add_option_group("source", "Where the devices come from (default: --discover)");
  source->add_flag("--discover", args->discover,
                   "This machine: CPU slots from the affinity mask and cgroup memory, plus GPUs");
  source->add_flag("--from-torchrun", args->from_torchrun,
                   "The whole torchrun world (WORLD_SIZE, LOCAL_WORLD_SIZE, RANK, …)");
  source->add_flag("--from-mpi", args->from_mpi,
                   "MPI ranks (OMPI_COMM_WORLD_SIZE, PMI_SIZE, PMIX_SIZE, MPI_LOCALNRANKS)");
  source->add_flag("--from-slurm", args->from_slurm,
                   "The whole srun world (SLURM_NTASKS, SLURM_PROCID, SLURM_LOCALID, SLURM_NODEID)");
  source->add_option("--from-dask", args->from_dask, "A Dask client.scheduler_info() JSON file")
      ->check(CLI::ExistingFile);
  source
      ->add_option("--from-spark", args->from_spark,
                   "A JSON file {\"defaultParallelism\": P, \"executorMemory\": \"4g\"}")
      ->check(CLI::ExistingFile);
  source->require_option(0, 1);
  app.add_option("--out", args->out, "Write the JSON here (atomically) instead of stdout");
  app.add_option("--cpu-workers", args->cpu_workers, "CPU slots for --discover (default 1)")
      ->check(at_least(1, "the CPU slots to list, ≥ 1"));
  app.add_flag("--no-cuda", args->no_cuda, "--discover: leave GPUs out");
  app.add_option("--precision", args->precision, "Pin a compute precision (float32, float64, …)");
  auto* cal = app.add_option_group("calibrate", "Measure each device's throughput with mixle bench");
  cal->add_flag("--calibrate", args->calibrate,
                "Benchmark every device; throughput = measured rows/s per EM iteration");
  cal->add_option("--catalog", args->catalog,
                  "Calibration catalog to append to (default: beside --out, or ./mixle-calibration.json)");
  cal->add_option("--family", args->family, "Calibration workload family")->capture_default_str();
  cal->add_option("--rows", args->rows, "Calibration rows")
      ->check(at_least(1, "the rows benchmarked, ≥ 1"))
      ->capture_default_str();
  cal->add_option("--dims", args->dims, "Calibration columns")
      ->check(at_least(1, "the columns, ≥ 1"))
      ->capture_default_str();
  cal->add_option("--components", args->components, "Calibration components")
      ->check(at_least(1, "the components, ≥ 1"))
      ->capture_default_str();
  cal->add_option("--iters", args->iters, "Timed repetitions per device")
      ->check(at_least(1, "the timed repetitions, ≥ 1"))
      ->capture_default_str();
  return [args] {
    plan::Resources resources = build(*args);
    if (args->calibrate) {
      if (args->catalog.empty())
        args->catalog = args->out.empty()
                            ? "mixle-calibration.json"
                            : (std::filesystem::path(args->out).parent_path() / "mixle-calibration.json").string();
      resources = calibrate(resources, *args);
    }
    if (args->out.empty()) {
      std::cout << resources.to_json(2) << "\n";
    } else {
      resources.save(args->out);
      std::cerr << "mixle: wrote " << resources.size() << " device(s) to " << args->out << "\n";
    }
    return 0;
  };
}

}  // namespace
MIXLE_REGISTER_COMMAND("resources", "Describe the devices a run can use (Resources JSON)", setup_resources, 40);
}  // namespace mixle::host
