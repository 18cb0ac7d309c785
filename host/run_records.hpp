// What rank 0 writes while a distributed fit runs — a checkpoint every `checkpoint_every`
// iterations and one StepReceipt per iteration (docs/distributed.md) — written once for the
// data-parallel and the component-sharded fit.
#pragma once

#include "engine/em.hpp"
#include "host/checkpoint.hpp"

#include <mixle/distributed.hpp>
#include <mixle/fit.hpp>
#include <mixle/model.hpp>
#include <mixle/plan/contracts.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace mixle::host {

/// The facts of a run that every receipt repeats.
struct RunFacts {
  bool rank0 = false;         // only rank 0 writes
  std::size_t data_rows = 0;  // of the whole file (checkpoints check it on resume)
  int world_size = 1;
  int data_parallel_size = 1;       // ranks that hold different rows
  std::int64_t local_examples = 0;  // this rank's rows
  int shard_components = 0;         // ranks per component group; 0: not sharded
  std::string precision;
  std::string comm;                              // the communicator's backend name
  std::vector<plan::DistributedUpdate> updates;  // the collectives of one EM step
};

/// Bytes each of RunFacts::updates has handed to its communicator since the fit began, in the
/// updates' order (each update has a communicator of its own, whose count this is).
using UpdateBytes = std::vector<std::uint64_t>;

class RunRecords {
 public:
  /// `resumed`: the checkpoint a resumed fit continues (its restart, history and best restart
  /// carry on); `update_bytes`: the updates' counts before the first iteration.
  RunRecords(const DistributedOptions& dist, RunFacts facts, const Checkpoint* resumed, UpdateBytes update_bytes);

  /// After every restart: the best result so far, which later checkpoints carry (rank 0 needs
  /// its global model).
  void set_best(const FitResult& best);

  /// Whether iteration `iteration` writes a checkpoint: the caller then passes the global model
  /// to record() (assembling it may be a collective, so every rank asks).
  bool checkpoint_due(int iteration) const noexcept;

  /// After iteration `it` of restart `restart`, on every rank. `global`: the global model after
  /// the M-step, needed on rank 0 when checkpoint_due. `update_bytes` and, when the path times
  /// them, `collective_seconds` are totals since the fit began; the receipt gets this
  /// iteration's share: each update's bytes, and their sum as the step's collective bytes.
  void record(int restart, const engine::IterationInfo& it, const Model* global, const UpdateBytes& update_bytes,
              std::optional<double> collective_seconds = std::nullopt);

 private:
  const DistributedOptions& dist_;
  RunFacts facts_;
  std::vector<double> history_;  // of the current restart
  int history_restart_ = 0;
  std::optional<FitResult> best_;
  UpdateBytes bytes_before_;
  double seconds_before_ = 0.0;
  std::vector<std::string> receipts_;
};

}  // namespace mixle::host
