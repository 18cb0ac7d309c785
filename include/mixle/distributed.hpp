// Distributed fitting across processes: under torchrun, mpirun/srun, `mixle launch`, or as one
// process. Each rank reads only its row range of the data file, accumulates its statistics
// locally, and one all-reduce per iteration gives every rank the same statistics, so every rank
// computes the same model. Rank 0 writes outputs.
#pragma once

#include <mixle/data.hpp>
#include <mixle/fit.hpp>

#include <chrono>
#include <exception>
#include <functional>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace mixle {

struct DistributedOptions {
  /// Communicator: auto (torchrun → gloo, or nccl for CUDA devices; mpirun → mpi; one process →
  /// single), single, gloo, mpi or nccl.
  std::string comm = "auto";
  /// Deadline of joining the group and of every collective: a lost or hung rank makes every
  /// other rank fail within it, naming the rank.
  std::chrono::milliseconds timeout{60'000};
  /// Rank 0 writes checkpoint.json here every `checkpoint_every` iterations (atomically).
  std::string checkpoint_dir;
  int checkpoint_every = 1;
  /// Continue from DIR/checkpoint.json (any world size). Under torchrun, a restart
  /// (TORCHELASTIC_RESTART_COUNT > 0) resumes from checkpoint_dir automatically.
  std::string resume_dir;
  /// Optional Resources JSON (mixle resources --out / --calibrate) with one device per rank:
  /// rows are split in proportion to their throughput. Default: equal shares.
  std::string resources_file;
  /// Rank 0 writes one StepReceipt JSON line per iteration here (rewritten atomically).
  std::string receipts_file;
  /// Ranks per component group (component-sharded execution, docs/sharding.md): G ≥ 2 splits
  /// the components over G ranks (world = data groups × G, so G must divide the world size);
  /// 1 = data parallel (the model on every rank); 0 = automatic: data parallel unless
  /// `resources_file` says the model does not fit one device (auto_parallel_estimator).
  int shard_components = 0;
  /// Called on this rank with its error as soon as the fit fails once the group has formed —
  /// before the communicator's teardown, which on rank 0 may wait for the peers to leave. A
  /// launcher that stops the group when a peer exits may kill this rank during that wait; report
  /// the reason here (the CLI prints it) so it is not lost. The error is rethrown afterwards.
  std::function<void(const std::exception& error)> on_error;
  /// When not empty, the launch variables are read from here instead of the process environment
  /// (RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT, …, as torchrun
  /// sets them): for hosts that start ranks themselves in processes they share with other work,
  /// such as Dask or Spark tasks (the Python package's mixle.dask does).
  std::map<std::string, std::string> launch_environment;
  /// Rank 0 with MASTER_PORT 0 (a rendezvous communicator: gloo, nccl): the rendezvous store
  /// binds a port the OS picks — no fixed port, no race for one — and this is called with it
  /// before the group forms; publish it to the other ranks, which are started with that
  /// MASTER_PORT. Without it, MASTER_PORT 0 is refused.
  std::function<void(int port)> on_store_port;
};

struct DistributedFitResult {
  FitResult fit;
  int rank = 0;
  int world_size = 1;
  std::string comm;           // the communicator used
  std::string device;         // this rank's compute device ("cpu", "cuda:0", …)
  std::size_t first_row = 0;  // this rank's rows: [first_row, first_row + local_rows)
  std::size_t local_rows = 0;
  std::uint64_t collective_bytes = 0;  // payload bytes this rank handed to collectives
  double collective_seconds = 0.0;     // wall time in the statistics all-reduces (waits included)
  int resumed_from_iteration = 0;      // 0 = not resumed
  /// How the run was parallelised ("data parallel", "component sharded: …") and why.
  std::string parallel;
  /// How this rank held its rows under FitOptions::memory_budget: "resident (…)" or "streamed
  /// from the file in chunks of N rows (…)" (docs/streaming.md, "Memory").
  std::string rows_memory;
  int shard_components = 1;                 // G (1 = data parallel)
  std::size_t component_begin = 0;          // this rank's components [component_begin, component_end)
  std::size_t component_end = 0;            //   (sharded only)
  std::uint64_t model_parameter_bytes = 0;  // the whole model's parameters (float64 bytes)
  /// Per rank (index = rank): parameter and statistic bytes it held resident during EM —
  /// its shard's when sharded, the whole model's otherwise (transient buffers not included).
  std::vector<std::uint64_t> resident_parameter_bytes;
  std::vector<std::uint64_t> resident_statistic_bytes;
  bool is_rank0() const noexcept { return rank == 0; }
};

/// Fits the data in `path` across the processes of this job (see DistributedOptions). Every
/// rank must call it with the same arguments. Throws like fit(), plus CommunicationError when a
/// peer is lost; on any failure writes TORCHELASTIC_ERROR_FILE when set.
DistributedFitResult fit_distributed(const std::string& path, const ReadOptions& read, const FitOptions& options,
                                     const DistributedOptions& dist);

/// Fits rows that every rank holds in memory: rank r passes its own rows `local` (any count,
/// zero included; the same columns on every rank), and together they are the data set in rank
/// order — rank 0's rows first. Runs data parallel (shard_components 0 or 1; resources_file
/// empty) with the checkpoints, resume and receipts of the file-based fit; every rank returns
/// the same model, equal to a one-process fit of all the rows (initialisation is keyed by the
/// global row index). `local` may view caller memory (Dataset::view); it must stay alive and
/// unchanged during the call.
DistributedFitResult fit_distributed(const Dataset& local, const FitOptions& options, const DistributedOptions& dist);

}  // namespace mixle
