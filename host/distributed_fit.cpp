// fit_distributed (include/mixle/distributed.hpp): launch environment → communicator → this
// rank's rows → the shared fit driver, with checkpoints, resume and receipts on rank 0.
#include "engine/compute.hpp"
#include "engine/distributed_handle.hpp"
#include "engine/encoded_data.hpp"
#include "host/checkpoint.hpp"
#include "host/fit_driver.hpp"
#include "host/launch_env.hpp"

#include <mixle/distributed.hpp>
#include <mixle/error.hpp>
#include <mixle/plan/placement.hpp>
#include <mixle/plan/resources.hpp>
#include <mixle/plan/step_receipt.hpp>

#include <algorithm>
#include <cmath>
#include <memory>

namespace mixle {
namespace {

/// Split points of `rows` over the ranks: plan() over one device per rank (equal throughput, or
/// the calibrated throughputs of a Resources file), then aligned to the kernels' row blocks.
std::vector<engine::RowRange> rank_row_ranges(std::size_t rows, std::size_t cols, int world,
                                              const std::string& resources_file) {
  std::vector<plan::DeviceSpec> devices;
  if (!resources_file.empty()) {
    const plan::Resources given = plan::Resources::load(resources_file);
    if (given.size() != static_cast<std::size_t>(world))
      throw InvalidInput(resources_file + ": has " + std::to_string(given.size()) + " devices but the job has " +
                         std::to_string(world) + " ranks; give one device per rank (in rank order)");
    devices = given.devices();
  } else {
    for (int r = 0; r < world; ++r) {
      plan::DeviceSpec d;
      d.name = "rank:" + std::to_string(r);
      d.global_rank = r;
      devices.push_back(d);
    }
  }
  plan::PlanOptions options;
  options.rows = rows;
  options.columns = std::max<std::size_t>(cols, 1);
  const plan::Placement placement = plan::plan(plan::Resources(devices), options);
  // Shards come one per device; order them by the device's position (= rank).
  std::vector<std::size_t> bounds(static_cast<std::size_t>(world) + 1, rows);
  bounds[0] = 0;
  if (placement.shards.size() == static_cast<std::size_t>(world)) {
    std::vector<std::pair<std::size_t, std::size_t>> by_rank;  // (rank, size)
    for (const auto& s : placement.shards) {
      const auto it = std::find_if(devices.begin(), devices.end(), [&](const plan::DeviceSpec& d) { return d.name == s.device.name; });
      by_rank.emplace_back(static_cast<std::size_t>(it - devices.begin()), s.size());
    }
    std::sort(by_rank.begin(), by_rank.end());
    std::size_t at = 0;
    for (int r = 0; r < world; ++r) bounds[static_cast<std::size_t>(r) + 1] = at += by_rank[static_cast<std::size_t>(r)].second;
  } else {
    for (int r = 1; r < world; ++r) bounds[static_cast<std::size_t>(r)] = rows * static_cast<std::size_t>(r) / static_cast<std::size_t>(world);
  }
  return engine::align_row_ranges(bounds, rows);
}

std::string device_for_rank(const std::string& device, const host::LaunchEnv& env) {
  // LOCAL_RANK picks the GPU (DESIGN.md §6).
  if (device == "cuda" || (device == "auto" && engine::cuda_device_count() > 0))
    return "cuda:" + std::to_string(env.local_rank);
  return device;
}

}  // namespace

DistributedFitResult fit_distributed(const std::string& path, const ReadOptions& read, const FitOptions& options,
                                     const DistributedOptions& dist) {
  const host::LaunchEnv env = host::detect_launch_env();
  try {
    const std::string device = device_for_rank(options.device, env);
    const bool on_device = device.rfind("cuda", 0) == 0;
    const comms::CommKind kind = host::resolve_comm(dist.comm, env, on_device);
    std::shared_ptr<comms::Communicator> comm = host::communicator_from_env(env, kind, dist.timeout);

    // Each rank reads only its rows (npy/raw: mapped; CSV: other lines skipped unparsed).
    const DataInfo info = probe_data(path, read);
    const auto ranges = rank_row_ranges(info.rows, info.cols, comm->size(), dist.resources_file);
    const engine::RowRange mine = ranges[static_cast<std::size_t>(comm->rank())];
    Dataset local;
    if (mine.end > mine.begin) {
      ReadOptions r = read;
      r.row_begin = mine.begin;
      r.row_end = mine.end;
      local = read_data(path, r);
    } else {
      local = Dataset::from_vector(std::vector<double>{}, 0, info.cols);
    }
    engine::DistributedEncodedData handle(local, info.rows, mine.begin, *comm,
                                          engine::make_compute(device, options.threads));

    // Resume: explicitly, or automatically after a torchrun restart.
    std::string resume_dir = dist.resume_dir;
    if (resume_dir.empty() && env.restart_count > 0 && !dist.checkpoint_dir.empty()) resume_dir = dist.checkpoint_dir;
    std::optional<host::Checkpoint> checkpoint;
    if (!resume_dir.empty()) {
      checkpoint = host::load_checkpoint(resume_dir);
      if (!checkpoint && !dist.resume_dir.empty())
        throw InvalidInput("--resume " + resume_dir + ": no checkpoint.json there");
      if (checkpoint && checkpoint->data_rows != info.rows)
        throw InvalidInput(host::checkpoint_path(resume_dir) + ": written for " + std::to_string(checkpoint->data_rows) +
                           " data rows, but " + path + " has " + std::to_string(info.rows));
    }
    host::FitHooks hooks;
    if (checkpoint) {
      hooks.resume_model = &checkpoint->model;
      hooks.start_iteration = checkpoint->iteration;
      hooks.prior_mean_loglik = checkpoint->mean_loglik;
    }
    std::vector<std::string> receipts;
    std::uint64_t bytes_before = comm->collective_bytes();
    double collective_before = 0.0;
    const std::string precision = options.precision;
    std::vector<double> history = hooks.prior_mean_loglik;  // of the current restart
    int history_restart = 0;
    hooks.after_iteration = [&](int restart, const engine::IterationInfo& it) {
      if (restart != history_restart) history.clear(), history_restart = restart;
      history.push_back(it.mean_loglik);
      const std::uint64_t bytes = comm->collective_bytes();
      const double collective = handle.collective_seconds();
      if (!env.is_rank0()) {
        bytes_before = bytes;
        collective_before = collective;
        return;
      }
      if (!dist.checkpoint_dir.empty() && dist.checkpoint_every > 0 && it.iteration % dist.checkpoint_every == 0) {
        host::Checkpoint c;
        c.iteration = it.iteration;
        c.restart = restart;
        c.data_rows = info.rows;
        c.world_size = comm->size();
        c.model = *it.model;
        c.mean_loglik = history;
        host::save_checkpoint(dist.checkpoint_dir, c);
      }
      if (!dist.receipts_file.empty()) {
        plan::StepReceipt r;
        r.step = it.iteration - 1;
        r.loss = std::max(0.0, -it.mean_loglik);  // receipts require loss ≥ 0; the exact value is in extra
        r.local_examples = static_cast<std::int64_t>(handle.local_rows());
        r.data_parallel_size = comm->size();
        r.optimizer = "em";
        r.precision = precision;
        r.collective_bytes = static_cast<std::int64_t>(bytes - bytes_before);
        r.global_examples_observed = static_cast<std::int64_t>(it.rows);
        r.extra["mean_loglik"] = it.mean_loglik;
        r.extra["seconds"] = it.seconds;
        r.extra["collective_seconds"] = collective - collective_before;
        r.extra["restart"] = static_cast<std::int64_t>(restart);
        r.extra["comm"] = std::string(comm->backend());
        r.validate();
        receipts.push_back(r.to_json_line());
        std::string all;
        for (const auto& line : receipts) all += line + "\n";
        write_file_atomic(dist.receipts_file, all);
      }
      bytes_before = bytes;
      collective_before = collective;
    };
    DistributedFitResult result;
    result.fit = host::fit_handle(handle, options, hooks);
    result.rank = comm->rank();
    result.world_size = comm->size();
    result.comm = std::string(comm->backend());
    result.first_row = mine.begin;
    result.local_rows = local.rows();
    result.collective_bytes = comm->collective_bytes();
    result.collective_seconds = handle.collective_seconds();
    result.resumed_from_iteration = checkpoint ? checkpoint->iteration : 0;
    return result;
  } catch (const std::exception& e) {
    host::write_error_file(env, e.what());
    throw;
  }
}

}  // namespace mixle
