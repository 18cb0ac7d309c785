// Checkpoints and receipts of a distributed fit (host/run_records.hpp).
#include "host/run_records.hpp"

#include <mixle/data.hpp>
#include <mixle/error.hpp>
#include <mixle/plan/step_receipt.hpp>

#include <algorithm>
#include <functional>
#include <numeric>

namespace mixle::host {

RunRecords::RunRecords(const DistributedOptions& dist, RunFacts facts, const Checkpoint* resumed,
                       UpdateBytes update_bytes)
    : dist_(dist), facts_(std::move(facts)), bytes_before_(std::move(update_bytes)) {
  if (bytes_before_.size() != facts_.updates.size())
    throw Error("RunRecords: " + std::to_string(bytes_before_.size()) + " byte counts for " +
                std::to_string(facts_.updates.size()) + " updates");
  if (resumed) {
    history_ = resumed->mean_loglik;
    history_restart_ = resumed->restart;
    best_ = resumed->best;
  }
}

void RunRecords::set_best(const FitResult& best) {
  if (facts_.rank0) best_ = best;
}

bool RunRecords::checkpoint_due(int iteration) const noexcept {
  return !dist_.checkpoint_dir.empty() && dist_.checkpoint_every > 0 && iteration % dist_.checkpoint_every == 0;
}

void RunRecords::record(int restart, const engine::IterationInfo& it, const Model* global,
                        const UpdateBytes& update_bytes, std::optional<double> collective_seconds) {
  if (restart != history_restart_) history_.clear(), history_restart_ = restart;
  history_.push_back(it.mean_loglik);
  UpdateBytes step(update_bytes.size());
  std::transform(update_bytes.begin(), update_bytes.end(), bytes_before_.begin(), step.begin(), std::minus<>());
  const std::uint64_t bytes = std::reduce(step.begin(), step.end(), std::uint64_t{0});
  const double seconds = collective_seconds.value_or(0.0) - seconds_before_;
  bytes_before_ = update_bytes;
  seconds_before_ = collective_seconds.value_or(0.0);
  if (!facts_.rank0) return;
  if (checkpoint_due(it.iteration)) {
    if (!global)
      throw Error("RunRecords: a checkpoint is due at iteration " + std::to_string(it.iteration) +
                  " but no global model was given");
    Checkpoint c;
    c.iteration = it.iteration;
    c.restart = restart;
    c.data_rows = facts_.data_rows;
    c.world_size = facts_.world_size;
    c.model = *global;
    c.mean_loglik = history_;
    c.best = best_;  // the best of the restarts before this one (after_restart sets it after each)
    save_checkpoint(dist_.checkpoint_dir, c);
  }
  if (dist_.receipts_file.empty()) return;
  plan::StepReceipt r;
  r.step = it.iteration - 1;
  r.loss = std::max(0.0, -it.mean_loglik);  // receipts require loss ≥ 0; the exact value is in extra
  r.local_examples = facts_.local_examples;
  r.data_parallel_size = facts_.data_parallel_size;
  r.optimizer = "em";
  r.precision = facts_.precision;
  r.collective_bytes = static_cast<std::int64_t>(bytes);
  // Examples are rows; with sample weights the total weight they carry is reported beside them.
  r.global_examples_observed = static_cast<std::int64_t>(facts_.data_rows);
  r.extra["total_weight"] = it.rows;
  r.extra["mean_loglik"] = it.mean_loglik;
  r.extra["seconds"] = it.seconds;
  if (collective_seconds) r.extra["collective_seconds"] = seconds;
  r.extra["restart"] = static_cast<std::int64_t>(restart);
  if (it.pairs_per_row > 0) r.extra["pairs_per_row"] = it.pairs_per_row;  // rank 0's rows
  r.extra["comm"] = facts_.comm;
  if (facts_.shard_components > 0) r.extra["shard_components"] = static_cast<std::int64_t>(facts_.shard_components);
  // Each DistributedUpdate of the step, flattened (a receipt's extra holds scalars):
  // update.<node>.{payload, collective, mesh_axes, state_layout, exact, contract_exact, bytes}.
  for (std::size_t i = 0; i < facts_.updates.size(); ++i) {
    const plan::DistributedUpdate& u = facts_.updates[i];
    const std::string key = "update." + u.node_id + ".";
    r.extra[key + "bytes"] = static_cast<std::int64_t>(step[i]);
    std::string axes;
    for (plan::ParallelAxis a : u.mesh_axes) axes += (axes.empty() ? "" : ",") + std::string(plan::axis_name(a));
    r.extra[key + "payload"] = std::string(plan::payload_name(u.payload));
    r.extra[key + "collective"] = std::string(plan::collective_name(u.collective));
    r.extra[key + "mesh_axes"] = axes;
    r.extra[key + "state_layout"] = std::string(plan::state_layout_name(u.state_layout));
    r.extra[key + "exact"] = u.exact;
    r.extra[key + "contract_exact"] = u.contract_exact;
  }
  r.validate();
  receipts_.push_back(r.to_json_line());
  std::string all;
  for (const auto& line : receipts_) all += line + "\n";
  write_file_atomic(dist_.receipts_file, all);
}

}  // namespace mixle::host
