// fit_distributed (include/mixle/distributed.hpp): launch environment → communicator → this
// rank's rows → the shared fit driver, with checkpoints, resume and receipts on rank 0.
#include "engine/auto_parallel.hpp"
#include "engine/component_parallel.hpp"
#include "engine/component_sharded.hpp"
#include "engine/compute.hpp"
#include "engine/distributed_handle.hpp"
#include "engine/encoded_data.hpp"
#include "engine/error_marks.hpp"
#include "engine/estimator.hpp"
#include "engine/model_summary.hpp"
#include "host/backend_shape.hpp"
#include "host/checkpoint.hpp"
#include "host/distributed_backend.hpp"
#include "host/fit_driver.hpp"
#include "host/launch_env.hpp"
#include "host/missing_values.hpp"
#include "host/rows_memory.hpp"
#include "host/run_records.hpp"
#include "host/stepwise_fit.hpp"

#include <mixle/distributed.hpp>
#include <mixle/error.hpp>
#include <mixle/plan/attestation.hpp>
#include <mixle/plan/backend_registry.hpp>
#include <mixle/plan/contracts.hpp>
#include <mixle/plan/parallel_plan.hpp>
#include <mixle/plan/placement.hpp>
#include <mixle/plan/resources.hpp>

#include <algorithm>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace mixle {
namespace {

/// The devices of a Resources file in rank order: by `global_rank` when every device states one
/// (each of 0 … ranks−1 exactly once), else in the file's order. A file that states ranks for
/// some devices and not others, or ranks that do not cover the job, is refused by name.
std::vector<plan::DeviceSpec> devices_by_rank(const plan::Resources& given, const std::string& file, int ranks) {
  if (given.size() != static_cast<std::size_t>(ranks))
    throw InvalidInput(file + ": has " + std::to_string(given.size()) + " devices but the job has " +
                       std::to_string(ranks) + " ranks; give one device per rank (in rank order, or with global_rank)");
  const auto& all = given.devices();
  const auto stated = std::count_if(all.begin(), all.end(), [](const plan::DeviceSpec& d) { return d.global_rank; });
  if (stated == 0) return all;
  if (stated != ranks)
    throw InvalidInput(file + ": " + std::to_string(stated) + " of " + std::to_string(ranks) +
                       " devices state a global_rank; accepted: all of them (matched by rank) or none (file order)");
  std::vector<plan::DeviceSpec> out(all.size());
  std::vector<bool> seen(all.size(), false);
  for (const plan::DeviceSpec& d : all) {
    const std::int64_t r = *d.global_rank;
    if (r < 0 || r >= ranks || seen[static_cast<std::size_t>(r)])
      throw InvalidInput(file + ": device '" + d.name + "' has global_rank " + std::to_string(r) +
                         "; accepted: each of 0 … " + std::to_string(ranks - 1) + " exactly once");
    seen[static_cast<std::size_t>(r)] = true;
    out[static_cast<std::size_t>(r)] = d;
  }
  return out;
}

/// Split points of `rows` over the ranks (or, sharded, over the data groups: `stride` = G ranks
/// per group, group d on rank d·G's device): plan() over one device per group (equal
/// throughput, or the devices of a Resources file, with the model's bytes when `model` is
/// given, so that a device too small is refused naming it), aligned to the row blocks. A device
/// plan() cuts into several pieces (its share does not fit its memory at once) gets their sum:
/// its rank streams them as one range.
std::vector<engine::RowRange> rank_row_ranges(std::size_t rows, std::size_t cols, int ranks,
                                              const std::string& resources_file,
                                              const std::optional<plan::ModelSummary>& model, int stride = 1) {
  const int world = ranks / stride;  // row groups
  std::vector<plan::DeviceSpec> devices;
  if (!resources_file.empty()) {
    const auto ranked = devices_by_rank(plan::Resources::load(resources_file), resources_file, ranks);
    for (int g = 0; g < world; ++g) devices.push_back(ranked[static_cast<std::size_t>(g * stride)]);
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
  options.model = model;
  const plan::Placement placement = plan::plan(plan::Resources(devices), options);
  std::vector<std::size_t> share(static_cast<std::size_t>(world), 0);
  for (const auto& s : placement.shards) {
    const auto it = std::find_if(devices.begin(), devices.end(),
                                 [&](const plan::DeviceSpec& d) { return d.name == s.device.name; });
    share[static_cast<std::size_t>(it - devices.begin())] += s.size();
  }
  // The split point after each rank but the last.
  std::vector<std::size_t> splits;
  std::size_t at = 0;
  for (int r = 0; r + 1 < world; ++r) splits.push_back(at += share[static_cast<std::size_t>(r)]);
  return engine::align_row_ranges(splits, rows);
}

/// What a rank computes with, by FitOptions::backend: its device's compute (local and its
/// aliases; distributed, torchrun and mpi name the same thing), or component threads inside
/// the rank's share of rows (component_parallel and its aliases; CPU only). A backend that
/// holds every row in one process cannot run inside a process group.
bool component_threads(const std::string& backend) {
  switch (host::backend_shape(backend)) {
    case host::BackendShape::data_parallel: return false;
    case host::BackendShape::component_threads: return true;
    case host::BackendShape::component_sharded:
      throw UsageError(
          "backend component_sharded runs its shards as threads of one process; across processes give the "
          "shard count instead (--shard-components G, DistributedOptions::shard_components)");
    case host::BackendShape::registered: break;
  }
  throw InvalidInput("backend '" + backend +
                     "' cannot run inside a process group; accepted: local (or distributed, torchrun, mpi), or "
                     "component_parallel (component threads inside each rank)");
}

/// This rank's compute: the device's, or `num_workers` component threads on the CPU.
std::unique_ptr<engine::Compute> rank_compute(const FitOptions& options, const std::string& device) {
  const engine::Prune prune = engine::prune_from_name(options.prune);
  if (!component_threads(options.backend)) return engine::make_compute(device, options.threads, prune);
  // The workers are capped at K where K is known (the M-step's model); here it is not yet.
  return engine::make_cpu_compute(1, engine::resolve_workers(options.num_workers), prune);
}

/// Every rank's resident parameter and statistic bytes, gathered on every rank (one all-gather).
void gather_resident(comms::Communicator& comm, std::uint64_t parameter_bytes, std::uint64_t statistic_bytes,
                     DistributedFitResult& result) {
  const std::vector<double> mine{static_cast<double>(parameter_bytes), static_cast<double>(statistic_bytes)};
  std::vector<double> all(2 * static_cast<std::size_t>(comm.size()));
  comm.all_gather(std::span<const double>(mine), std::span<double>(all));
  for (int r = 0; r < comm.size(); ++r) {
    result.resident_parameter_bytes.push_back(static_cast<std::uint64_t>(all[2 * static_cast<std::size_t>(r)]));
    result.resident_statistic_bytes.push_back(static_cast<std::uint64_t>(all[2 * static_cast<std::size_t>(r) + 1]));
  }
}

/// The checkpoint to resume from: explicitly, or automatically after a torchrun restart.
std::optional<host::Checkpoint> resume_checkpoint(const DistributedOptions& dist, const host::LaunchEnv& env,
                                                  std::size_t data_rows, const std::string& source) {
  std::string resume_dir = dist.resume_dir;
  if (resume_dir.empty() && env.restart_count > 0 && !dist.checkpoint_dir.empty()) resume_dir = dist.checkpoint_dir;
  std::optional<host::Checkpoint> checkpoint;
  if (resume_dir.empty()) return checkpoint;
  checkpoint = host::load_checkpoint(resume_dir);
  if (!checkpoint && !dist.resume_dir.empty())
    throw InvalidInput("--resume " + resume_dir + ": no checkpoint.json there");
  if (checkpoint && checkpoint->data_rows != data_rows)
    throw InvalidInput(host::checkpoint_path(resume_dir) + ": written for " + std::to_string(checkpoint->data_rows) +
                       " data rows, but " + source + " has " + std::to_string(data_rows));
  return checkpoint;
}

/// The run's contracts (docs/distributed.md, "Contracts"), checked before any row is read: the
/// mesh the launcher declared (its world size) as a ParallelPlan — data groups on dp_replicate,
/// component shards on tp — the communicator's coordinate attested in it (a group that formed
/// with another size or rank than the launcher said fails here, naming both), and the
/// capabilities registered for the communicator, which must execute that plan at this
/// precision. Returns the DistributedUpdates each EM step makes, which every receipt records.
std::vector<plan::DistributedUpdate> run_contracts(const host::LaunchEnv& env, const comms::Communicator& comm,
                                                   int shards, const FitOptions& options) {
  const plan::ParallelPlan mesh({.dp_replicate = env.world_size / shards, .tp = shards});
  plan::attest_worker_coordinate(mesh, comm.size(), comm.rank());
  // The capabilities name precisions as the engine does (fp32, fp64, tf32): "float32" is fp32.
  const std::string precision = engine::precision_name(engine::precision_from_name(options.precision));
  plan::get_training_backend(std::string(comm.type()))->capabilities().validate(mesh, precision);
  std::vector<plan::DistributedUpdate> updates;
  if (shards > 1) {
    plan::DistributedUpdate rows;  // each shard's per-row log-likelihoods, gathered in its component group
    rows.node_id = "shard_log_likelihoods";
    rows.payload = plan::PayloadKind::activation;
    rows.collective = plan::CollectiveKind::all_gather;
    rows.mesh_axes = {plan::ParallelAxis::tp};
    rows.state_layout = plan::StateLayout::sharded;
    rows.contract_exact = true;  // gathered, not summed: every rank combines the same bytes
    rows.validate();
    updates.push_back(rows);
  }
  plan::DistributedUpdate statistics = plan::em_statistics_update(mesh);
  if (shards > 1) statistics.state_layout = plan::StateLayout::sharded;  // each shard's own statistics
  updates.push_back(statistics);
  if (shards > 1) {
    // The step's non-empty mass, log-likelihood, rows and error marks: sufficient statistics,
    // all-reduced, replicated (DistributedUpdate's defaults).
    plan::DistributedUpdate scalars;
    scalars.node_id = "em_scalars";
    if (mesh.size(plan::ParallelAxis::dp_replicate) > 1) scalars.mesh_axes.push_back(plan::ParallelAxis::dp_replicate);
    scalars.mesh_axes.push_back(plan::ParallelAxis::tp);
    scalars.contract_exact = true;
    scalars.validate();
    updates.push_back(scalars);
  }
  return updates;
}

/// The RunRecords of this rank: rank 0 writes, every rank keeps the counters.
host::RunRecords run_records(const DistributedOptions& dist, const host::LaunchEnv& env,
                             const comms::Communicator& comm, std::size_t data_rows, const FitOptions& options,
                             int data_parallel_size, std::size_t local_rows, int shard_components,
                             const std::optional<host::Checkpoint>& checkpoint, host::UpdateBytes update_bytes,
                             std::vector<plan::DistributedUpdate> updates) {
  host::RunFacts facts;
  facts.rank0 = env.is_rank0();
  facts.data_rows = data_rows;
  facts.world_size = comm.size();
  facts.data_parallel_size = data_parallel_size;
  facts.local_examples = static_cast<std::int64_t>(local_rows);
  facts.shard_components = shard_components;
  facts.precision = options.precision;
  facts.comm = std::string(comm.type());
  facts.updates = std::move(updates);
  return host::RunRecords(dist, std::move(facts), checkpoint ? &*checkpoint : nullptr, std::move(update_bytes));
}

/// The fit driver's hooks for `checkpoint` (resume: its restart, iteration, history and the best
/// restart before it) and for `records` (the best restart so far, for later checkpoints).
host::FitHooks resume_hooks(const std::optional<host::Checkpoint>& checkpoint, host::RunRecords& records) {
  host::FitHooks hooks;
  if (checkpoint) {
    hooks.resume_model = &checkpoint->model;
    hooks.start_restart = checkpoint->restart;
    hooks.start_iteration = checkpoint->iteration;
    hooks.prior_mean_loglik = checkpoint->mean_loglik;
    if (checkpoint->best) hooks.prior_best = &*checkpoint->best;
  }
  hooks.after_restart = [&records](const FitResult& best) { records.set_best(best); };
  return hooks;
}

/// Where this rank ran: its place in the group, its device and its rows
/// [first_row, first_row + local_rows), and the iteration it resumed after (0: not resumed).
void describe_rank(DistributedFitResult& result, const comms::Communicator& comm, const std::string& device,
                   std::size_t first_row, std::size_t local_rows, const std::optional<host::Checkpoint>& checkpoint) {
  result.rank = comm.rank();
  result.world_size = comm.size();
  result.comm = std::string(comm.type());
  result.device = device;
  result.first_row = first_row;
  result.local_rows = local_rows;
  result.resumed_from_iteration = checkpoint ? checkpoint->iteration : 0;
}

/// This rank's rows of `path`: rows [mine.begin, mine.end), or none.
Dataset read_rows(const std::string& path, const ReadOptions& read, const DataInfo& info, engine::RowRange mine) {
  if (mine.end <= mine.begin) return Dataset::from_vector(std::vector<double>{}, 0, info.cols);
  ReadOptions r = read;
  r.row_begin = mine.begin;
  r.row_end = mine.end;
  return read_data(path, r);
}

/// How this rank holds its rows `local` (host::plan_rows_memory), planned on every rank: a rank
/// that cannot keep a given budget stops them all, naming itself (one all-reduce). A sharded
/// fit (`sharded`) keeps its rows resident: a given budget they exceed is refused.
host::RowsMemory plan_on_ranks(const Dataset& local, const FitOptions& options, const host::LaunchEnv& env,
                               comms::Communicator& comm, bool sharded) {
  host::RowsMemory memory;
  std::vector<double> none;
  engine::all_reduce_with_marks(
      comm, none, [&] { memory = host::plan_rows_memory(local, options, env.local_world_size, sharded); },
      "planning the rows' memory");
  return memory;
}

/// `--missing drop` or `marginalise` on this rank's rows `local`; the count and the first rows
/// listed are every counted rank's (in rank order), the same on all; the rows to marginalise stay
/// this rank's. Where several ranks hold the same rows (the component groups of a sharded fit's
/// data group), only one of them is `counted`, so each row counts once. A collective whenever the
/// policy is not error.
host::DroppedRows missing_on_ranks(const Dataset& local, const FitOptions& options, comms::Communicator& comm,
                                   bool counted = true) {
  if (host::missing_policy_from_name(options.missing) == host::MissingPolicy::error)
    return host::DroppedRows{local, 0, {}, {}};
  host::DroppedRows kept = host::handle_missing_rows(local, options);
  // Per rank: its rows, the rows it dropped, and the first of those (−1 past the end).
  constexpr std::size_t kSlot = 2 + host::kDroppedListed;
  std::vector<double> mine(kSlot, -1.0), all(kSlot * static_cast<std::size_t>(comm.size()));
  mine[0] = counted ? static_cast<double>(local.rows()) : 0.0;
  mine[1] = counted ? static_cast<double>(kept.count) : 0.0;
  if (counted)
    for (std::size_t i = 0; i < kept.first.size(); ++i) mine[2 + i] = static_cast<double>(kept.first[i]);
  comm.all_gather(std::span<const double>(mine), std::span<double>(all));
  double rows = 0.0;
  kept.count = 0;
  kept.first.clear();
  for (std::size_t r = 0; r < static_cast<std::size_t>(comm.size()); ++r) {
    rows += all[r * kSlot];
    kept.count += static_cast<std::size_t>(all[r * kSlot + 1]);
    for (std::size_t i = 2; i < kSlot && all[r * kSlot + i] >= 0.0; ++i)
      if (kept.first.size() < host::kDroppedListed) kept.first.push_back(static_cast<std::size_t>(all[r * kSlot + i]));
  }
  host::refuse_all_missing(kept.count, static_cast<std::size_t>(rows), local.source(), options, " (of every rank)");
  return kept;
}

/// Component-sharded fit (engine/component_sharded.hpp, docs/sharding.md) on a world of
/// data groups × `groups` ranks, through the shared fit driver: its handle is a data-parallel
/// one whose rows sit on component group 0 only, so validation, initialisation and restarts are
/// the unsharded fit's (the same initial model); each restart then runs sharded EM, every rank
/// keeping only its shard. Rank 0 gathers the global model for checkpoints and the result;
/// other ranks return an empty model.
DistributedFitResult fit_sharded(const std::string& path, const ReadOptions& read, const FitOptions& options,
                                 const DistributedOptions& dist, const host::LaunchEnv& env,
                                 const std::shared_ptr<comms::Communicator>& comm, const DataInfo& info,
                                 const std::string& device, int groups, const std::string& reason) {
  engine::refuse_reseed(engine::empty_policy_from_name(options.empty));
  host::refuse_marginalise_sharded(options);
  if (options.batch_size > 0)
    throw InvalidInput("stepwise EM (batch_size " + std::to_string(options.batch_size) + ") runs data parallel; this " +
                       "fit is component-sharded (" + reason +
                       "): fit it full-batch, or give each rank the whole model");
  const engine::ShardMesh mesh = engine::make_shard_mesh(comm->size(), comm->rank(), groups);
  std::vector<plan::DistributedUpdate> updates = run_contracts(env, *comm, groups, options);  // before any row is read
  const auto ranges = rank_row_ranges(info.rows, info.cols, comm->size(), dist.resources_file, std::nullopt, groups);
  const engine::RowRange mine = ranges[static_cast<std::size_t>(mesh.data_group())];
  const Dataset rows = read_rows(path, read, info, mine);
  const host::RowsMemory memory = plan_on_ranks(rows, options, env, *comm, /*sharded=*/true);
  // The G ranks of a data group hold the same rows: its component group 0 counts them.
  const host::DroppedRows kept = missing_on_ranks(rows, options, *comm, mesh.component_group() == 0);
  const Dataset& local = kept.data;
  const std::optional<host::Checkpoint> checkpoint = resume_checkpoint(dist, env, info.rows, path);
  const bool first_group = mesh.component_group() == 0;
  engine::DistributedEncodedData init_handle(
      first_group ? local : Dataset::from_vector(std::vector<double>{}, 0, info.cols), info.rows, mine.begin, *comm,
      rank_compute(options, device));
  host::hold_rows(init_handle, memory);
  std::unique_ptr<plan::Resources> resources;
  if (!dist.resources_file.empty())
    resources = std::make_unique<plan::Resources>(plan::Resources::load(dist.resources_file));

  // Built at the first restart, when K is known (every restart has the same K).
  std::vector<engine::RowRange> components;
  engine::RowRange own;
  std::unique_ptr<engine::ShardedEstimator> sharded;
  std::uint64_t shard_parameter_bytes = 0, shard_statistic_bytes = 0, model_parameter_bytes = 0;
  // The updates' communicators: the component group's and the data groups' (split below, at
  // the first restart: nothing counted yet) and the world's.
  host::RunRecords records = run_records(dist, env, *comm, info.rows, options, mesh.data_groups, local.rows(), groups,
                                         checkpoint, {0, 0, comm->collective_bytes()}, std::move(updates));
  host::FitHooks hooks = resume_hooks(checkpoint, records);
  hooks.after_iteration = [&](int restart, const engine::IterationInfo& it) {
    Model global;  // assembling it is a collective: every rank takes part, rank 0 writes it
    if (records.checkpoint_due(it.iteration)) global = engine::gather_global_model(*it.model, components, mesh, *comm);
    const engine::ShardedEstimator::Bytes bytes = sharded->bytes();
    records.record(restart, it, &global, {bytes.gathered, bytes.reduced, bytes.world});
  };
  hooks.run_restart = [&](Model initial, const engine::EmOptions& em, double& final_rows, double& final_loglik) {
    if (!sharded) {
      components = engine::component_ranges(initial.components(), groups, resources.get());
      own = components[static_cast<std::size_t>(mesh.component_group())];
      sharded = std::make_unique<engine::ShardedEstimator>(
          local, mine.begin, ranges, mesh, engine::largest_range(components), *comm, rank_compute(options, device));
    }
    Model shard = engine::slice_components(initial, own.begin, own.end);
    initial = Model{};  // the global initial model is not kept beside the shard
    engine::EmResult r = engine::run_sharded_em(*sharded, std::move(shard), own.begin, em);
    r.warnings = engine::gather_warnings(r.warnings, *comm);                 // every shard's empty components
    const engine::ShardEStep last = sharded->e_step(r.model, em.estimator);  // the final model's log-likelihood
    final_rows = last.rows;
    final_loglik = last.loglik;
    shard_parameter_bytes = engine::model_parameter_bytes(r.model);
    shard_statistic_bytes = static_cast<std::uint64_t>(engine::stat_layout(r.model).size) * sizeof(double);
    // Each component has as many parameters; a shard holds at least one (component_ranges).
    model_parameter_bytes = shard_parameter_bytes / r.model.components() * components.back().end;
    r.model = engine::gather_global_model(r.model, components, mesh, *comm);
    return r;
  };
  DistributedFitResult result;
  result.fit = host::fit_handle(init_handle, options, hooks);
  host::note_missing_rows(result.fit, options, kept.count, kept.first);
  result.model_parameter_bytes = model_parameter_bytes;
  gather_resident(*comm, shard_parameter_bytes, shard_statistic_bytes, result);
  describe_rank(result, *comm, device, mine.begin, local.rows(), checkpoint);
  result.collective_bytes = sharded->collective_bytes();
  result.shard_components = groups;
  result.component_begin = own.begin;
  result.component_end = own.end;
  result.parallel = engine::parallel_summary(mesh.data_groups, groups, reason);
  result.rows_memory = memory.summary();
  return result;
}

/// Stepwise EM's batches on this rank: global batch b is rows [b·B, (b+1)·B) of the data; its
/// handle holds this rank's part of them (often none) and all-reduces the batch's statistics.
/// Every batch runs on `compute`, the whole data's (one set of device buffers, not one per batch).
std::vector<std::shared_ptr<EncodedData>> rank_batches(const Dataset& local, std::size_t data_rows,
                                                       std::size_t first_row, const FitOptions& options,
                                                       comms::Communicator& comm,
                                                       const std::shared_ptr<engine::Compute>& compute,
                                                       const host::RowsMemory& memory) {
  std::vector<std::shared_ptr<EncodedData>> batches;
  const std::size_t mine_end = first_row + local.rows();
  for (std::size_t begin = 0; begin < data_rows; begin += options.batch_size) {
    const std::size_t end = std::min(data_rows, begin + options.batch_size);
    const std::size_t lo = std::clamp(begin, first_row, mine_end), hi = std::clamp(end, first_row, mine_end);
    batches.push_back(std::make_shared<engine::DistributedEncodedData>(local.slice(lo - first_row, hi - first_row),
                                                                       end - begin, lo, comm, compute));
    host::hold_rows(*batches.back(), memory);
  }
  return batches;
}

/// Data-parallel fit of this rank's rows `local`, rows [first_row, first_row + local.rows()) of
/// `data_rows` (`source` names them in messages), through the shared fit driver.
DistributedFitResult fit_data_parallel(const Dataset& local, std::size_t data_rows, std::size_t first_row,
                                       const std::string& source, const FitOptions& options,
                                       const DistributedOptions& dist, const host::LaunchEnv& env,
                                       comms::Communicator& comm, const std::string& device, const std::string& reason,
                                       std::vector<plan::DistributedUpdate> updates) {
  const host::RowsMemory memory = plan_on_ranks(local, options, env, comm, /*sharded=*/false);
  host::DroppedRows kept = missing_on_ranks(local, options, comm);
  engine::DistributedEncodedData handle(kept.data, data_rows, first_row, comm, rank_compute(options, device));
  handle.set_incomplete_rows(std::move(kept.incomplete), options.threads);
  host::hold_rows(handle, memory);
  DistributedFitResult result;
  std::optional<host::Checkpoint> checkpoint;
  if (options.batch_size > 0) {  // no checkpoints or receipts (in_process_group refused them)
    result.fit = host::fit_stepwise_batches(
        handle, rank_batches(kept.data, data_rows, first_row, options, comm, handle.shared_compute(), memory), options);
  } else {
    checkpoint = resume_checkpoint(dist, env, data_rows, source);
    host::RunRecords records = run_records(dist, env, comm, data_rows, options, comm.size(), handle.local_rows(), 0,
                                           checkpoint, {comm.collective_bytes()}, std::move(updates));
    host::FitHooks hooks = resume_hooks(checkpoint, records);
    hooks.after_iteration = [&](int restart, const engine::IterationInfo& it) {
      records.record(restart, it, it.model, {comm.collective_bytes()}, handle.collective_seconds());
    };
    result.fit = host::fit_handle(handle, options, hooks);
  }
  host::note_missing_rows(result.fit, options, kept.count, kept.first);
  describe_rank(result, comm, device, first_row, local.rows(), checkpoint);
  result.collective_bytes = comm.collective_bytes();
  result.collective_seconds = handle.collective_seconds();
  result.parallel = engine::parallel_summary(comm.size(), 1, reason);
  result.rows_memory = memory.summary();
  if (options.batch_size > 0)
    result.parallel += ", stepwise EM (batches of " + std::to_string(options.batch_size) + " rows)";
  if (component_threads(options.backend))
    result.parallel += ", component threads in each rank (" +
                       std::to_string(engine::resolve_workers(options.num_workers, result.fit.model.components())) +
                       " workers)";
  result.model_parameter_bytes = engine::model_parameter_bytes(result.fit.model);
  gather_resident(comm, result.model_parameter_bytes,
                  static_cast<std::uint64_t>(engine::stat_layout(result.fit.model).size) * sizeof(double), result);
  return result;
}

/// Where this rank's rows lie among every rank's: rank r holds the global rows that follow
/// those of ranks 0 … r−1.
struct RankRows {
  std::size_t data_rows = 0, first_row = 0;
};

/// Every rank's row and column counts, in rank order (one all-gather). Throws InvalidInput,
/// with the same text on every rank, when the ranks' columns differ or no rank has a row.
RankRows gather_rank_rows(const Dataset& local, comms::Communicator& comm) {
  const std::vector<double> mine{static_cast<double>(local.rows()), static_cast<double>(local.cols())};
  std::vector<double> all(2 * static_cast<std::size_t>(comm.size()));
  comm.all_gather(std::span<const double>(mine), std::span<double>(all));
  RankRows out;
  bool same_columns = true;
  std::string columns;  // "rank 0: 5, rank 1: 4", the same text on every rank
  for (int r = 0; r < comm.size(); ++r) {
    const auto rows = static_cast<std::size_t>(all[2 * static_cast<std::size_t>(r)]);
    const auto cols = static_cast<std::size_t>(all[2 * static_cast<std::size_t>(r) + 1]);
    same_columns = same_columns && cols == static_cast<std::size_t>(all[1]);
    columns += (r ? ", rank " : "rank ") + std::to_string(r) + ": " + std::to_string(cols);
    if (r < comm.rank()) out.first_row += rows;
    out.data_rows += rows;
  }
  if (!same_columns)
    throw InvalidInput("the ranks passed rows of different widths (columns per rank: " + columns +
                       "); every rank must pass the same columns");
  if (out.data_rows == 0) throw InvalidInput("no rows: every rank passed 0 rows");
  return out;
}

/// Runs `body` with this rank's communicator: errors once the group has formed are reported
/// while it still exists (dist.on_error), and every error goes to TORCHELASTIC_ERROR_FILE.
template <class Body>
DistributedFitResult in_process_group(const FitOptions& options, const DistributedOptions& dist, Body&& body) {
  // 0 or less would write no checkpoint at all: a run that asked for them would learn so only
  // when it had to resume.
  if (!dist.checkpoint_dir.empty() && dist.checkpoint_every < 1)
    throw UsageError("--checkpoint-every " + std::to_string(dist.checkpoint_every) + " with --checkpoint-dir " +
                     dist.checkpoint_dir + ": accepted: the iterations between checkpoints, ≥ 1");
  if (options.batch_size > 0) {
    host::validate_stepwise(options);
    if (!dist.checkpoint_dir.empty() || !dist.resume_dir.empty() || !dist.receipts_file.empty() ||
        dist.shard_components > 1)
      throw UsageError("batch_size " + std::to_string(options.batch_size) +
                       ": checkpoints, resume, receipts and component sharding are for full-batch EM, not stepwise EM");
  }
  const auto& given = dist.launch_environment;
  const host::LaunchEnv env =
      given.empty() ? host::detect_launch_env()
                    : host::detect_launch_env([&given](const std::string& name) -> std::optional<std::string> {
                        const auto it = given.find(name);
                        if (it == given.end()) return std::nullopt;
                        return it->second;
                      });
  try {
    std::string device;
    if (component_threads(options.backend)) {
      if (options.device != "cpu" && options.device != "auto")
        throw InvalidInput("the component_parallel backend threads components on the CPU; device \"" + options.device +
                           "\" is not supported with it (use the local backend for CUDA)");
      device = "cpu";
    } else {
      device = host::rank_device(options.device, env.local_rank, engine::cuda_device_count());
    }
    const bool on_device = device.starts_with("cuda");
    const std::string backend = host::resolve_comm(dist.comm, env, on_device);
    std::shared_ptr<comms::Communicator> comm =
        host::communicator_from_env(env, backend, dist.timeout, dist.on_store_port);
    try {
      return body(env, comm, device);
    } catch (const std::exception& e) {
      host::write_error_file(env, e.what());
      if (dist.on_error) dist.on_error(e);
      throw;
    }
  } catch (const std::exception& e) {
    host::write_error_file(env, e.what());
    throw;
  }
}
}  // namespace

DistributedFitResult fit_distributed(const std::string& path, const ReadOptions& read, const FitOptions& options,
                                     const DistributedOptions& dist) {
  return in_process_group(
      options, dist,
      [&](const host::LaunchEnv& env, const std::shared_ptr<comms::Communicator>& comm, const std::string& device) {
        // Each rank reads only its rows (npy/raw: mapped; CSV: other lines skipped unparsed).
        const DataInfo info = probe_data(path, read);
        // Plain data parallel, or component-sharded: explicitly (--shard-components G), or when the
        // Resources file says the model does not fit one device (auto_parallel_estimator).
        if (dist.shard_components < 0)
          throw UsageError("--shard-components " + std::to_string(dist.shard_components) +
                           ": accepted 0 (automatic), 1 (data parallel) or G ≥ 2 ranks per component group");
        int groups = dist.shard_components;  // 0 (automatic): data parallel unless Resources say otherwise
        std::string reason;
        if (groups == 0 && !dist.resources_file.empty()) {
          const engine::ParallelChoice choice =
              engine::auto_parallel_estimator(host::estimator_options(options), engine::summarise(options, info.cols),
                                              plan::Resources::load(dist.resources_file), info.rows, 1, comm->size());
          groups = choice.shard_components;
          reason = choice.reason;
        } else if (groups > 0) {
          reason = "--shard-components " + std::to_string(groups);
        }
        if (groups > 1) return fit_sharded(path, read, options, dist, env, comm, info, device, groups, reason);
        std::vector<plan::DistributedUpdate> updates = run_contracts(env, *comm, 1, options);  // before any row is read
        // The model's bytes count where devices state their memory (a Resources file).
        const auto ranges = rank_row_ranges(
            info.rows, info.cols, comm->size(), dist.resources_file,
            dist.resources_file.empty() ? std::nullopt : std::optional(engine::summarise(options, info.cols)));
        const engine::RowRange mine = ranges[static_cast<std::size_t>(comm->rank())];
        return fit_data_parallel(read_rows(path, read, info, mine), info.rows, mine.begin, path, options, dist, env,
                                 *comm, device, reason, std::move(updates));
      });
}

DistributedFitResult fit_distributed(const Dataset& local, const FitOptions& options, const DistributedOptions& dist) {
  return in_process_group(
      options, dist,
      [&](const host::LaunchEnv& env, const std::shared_ptr<comms::Communicator>& comm, const std::string& device) {
        if (dist.shard_components > 1 || dist.shard_components < 0)
          throw InvalidInput("shard_components = " + std::to_string(dist.shard_components) +
                             ": a fit of rows each rank holds in memory runs data parallel (0 or 1); component "
                             "sharding reads its rows from a file (fit_distributed(path, …))");
        if (!dist.resources_file.empty())
          throw InvalidInput(
              "resources_file: each rank passes its own rows here, so there is no row split to plan; "
              "leave it empty");
        const RankRows rows = gather_rank_rows(local, *comm);
        return fit_data_parallel(local, rows.data_rows, rows.first_row, "the ranks' rows", options, dist, env, *comm,
                                 device, "", run_contracts(env, *comm, 1, options));
      });
}

namespace host {

std::unique_ptr<EncodedData> distributed_encoded_data(const Dataset& rows, const EncodedDataOptions& options) {
  const LaunchEnv env = detect_launch_env();
  const std::string device = rank_device(options.device, env.local_rank, engine::cuda_device_count());
  std::shared_ptr<comms::Communicator> comm = communicator_from_env(
      env, resolve_comm(options.comm, env, device.starts_with("cuda")), DistributedOptions{}.timeout);
  const RankRows placed = gather_rank_rows(rows, *comm);
  auto handle = std::make_unique<engine::DistributedEncodedData>(
      rows, placed.data_rows, placed.first_row, *comm,
      engine::make_compute(device, options.threads, engine::prune_from_name(options.prune)));
  handle->own(std::move(comm));
  return handle;
}

FitResult fit_rank_rows(const Dataset& rows, const FitOptions& options) {
  return fit_distributed(rows, options, {}).fit;
}

}  // namespace host
}  // namespace mixle
