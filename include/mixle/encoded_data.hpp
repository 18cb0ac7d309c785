// Encoded-data handles: data made ready for one backend, offering the few coarse operations EM
// needs (the reference API's encoded-data contract). `mixle::fit` runs its EM loop against this
// interface whatever the backend; a host program registers its own backend by name and then fits
// through it with FitOptions::backend = that name (docs/engine.md, "Encoded-data handles").
#pragma once

#include <mixle/data.hpp>
#include <mixle/estimator.hpp>
#include <mixle/fit.hpp>
#include <mixle/model.hpp>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace mixle {

/// The statistics monoid: one flat float64 buffer. values[0] is Σ w·log p(x), values[1] Σ w (the
/// rows), values[2 + k] component k's mass; each part's sufficient statistics follow (their
/// layout is the engine's; a backend only adds buffers of the same model together).
struct Statistics {
  std::vector<double> values;

  static Statistics zero(std::size_t size) { return Statistics{std::vector<double>(size, 0.0)}; }
  /// Monoid combine (element-wise add); sizes must match.
  void combine(const Statistics& other);
  double rows() const { return values.at(1); }
  double loglik_sum() const { return values.at(0); }
};

/// Labels a block of rows whose first row has global index `first_row` (initialisation's hard
/// or random assignments): label[r] < K puts row r in that component; K (what label holds on
/// entry) leaves it out.
using Assigner = std::function<void(const Dataset& rows, std::size_t first_row, std::size_t K, std::size_t* label)>;

/// Visits a chunk of this rank's rows whose first row has global index `first_row`.
using RowVisitor = std::function<void(const Dataset& rows, std::size_t first_row)>;

class EncodedData {
 public:
  virtual ~EncodedData() = default;
  /// Registry name of the backend that made this handle ("local", "distributed", …).
  virtual std::string backend() const = 0;
  /// Rows and columns of the whole dataset (all ranks together).
  virtual std::size_t rows() const = 0;
  virtual std::size_t columns() const = 0;

  /// Σ of the rows' sample weights (Dataset::weights; all ranks) — rows() when unweighted.
  virtual double total_weight() { return static_cast<double>(rows()); }

  /// Checks that the data obeys each of the model's parts' value rules (all rows, all ranks);
  /// throws InvalidInput naming the file, row and column.
  virtual void check(const Model& model) = 0;
  /// Per-column maximum over all rows (to size categorical parts).
  virtual std::vector<double> column_max() = 0;

  /// E-step over all rows: reduced statistics (identical on every rank).
  virtual Statistics stream_accumulate(const Model& model, const EstimatorOptions& options) = 0;
  /// Reduced statistics of hard assignments (float64, zero shift); rows left out count in the
  /// header's rows (or weight) only.
  virtual Statistics accumulate_assigned(const Model& shape, const Assigner& assign) = 0;
  /// Calls `visit` on this rank's rows, a chunk at a time in row order, then sums `sums` over
  /// all ranks (identical on every rank afterwards; a rank whose visit threw is named on all).
  virtual void fold_rows(std::vector<double>& sums, const RowVisitor& visit) = 0;
  /// A deterministic sample of about `target` rows chosen by `seed` (the same rows on every
  /// rank, whatever the world size).
  virtual Dataset sample(std::uint64_t seed, std::size_t target) = 0;

  /// (rows, Σ log p(x)) under `model`.
  std::pair<double, double> log_density_sum(const Model& model, const EstimatorOptions& options);
  /// One EM iteration: stream_accumulate under `prev`, then the M-step — the next model, with the
  /// E-step's rows and loglik_sum. The EM loop of `fit` steps through this call, so a backend may
  /// override it (to run the M-step where its statistics are, say); an override returns what the
  /// base returns: the next model and the evidence of `prev`.
  virtual MStepResult estimate(const Model& prev, const EstimatorOptions& options);
  /// The reference's initialize(rng, p): each row kept with probability p (seeded per global
  /// row, so any world size keeps the same rows), assigned to a uniformly drawn component,
  /// then one M-step. Throws InvalidInput when a component receives no row.
  Model initialize(const Model& shape, std::uint64_t seed, double p, const EstimatorOptions& options);
};

/// Options that control how data is encoded (the reference's encoded_data controls that apply
/// to a native engine; docs/engine.md, "Encoded-data handles", says what each does here).
struct EncodedDataOptions {
  std::string backend = "local";
  std::string device = "cpu";  // auto | cpu | cuda | cuda:i
  int threads = 0;             // CPU threads (0: OpenMP default)
  int num_workers = 0;         // component-parallel workers (0: hardware threads)
  std::string comm = "auto";   // the distributed backend's communicator: auto | single | gloo | mpi | nccl
  std::string prune = "auto";  // exact pruning of the CPU E-step: auto | off (docs/numerics.md §8)

  bool is_default() const;
};

using EncodedDataFactory = std::unique_ptr<EncodedData> (*)(const Dataset& data, const EncodedDataOptions& options);

/// Registers a backend under `name` and `aliases` (case-insensitive). Registering a name that
/// is taken by a different factory throws InvalidInput unless `override` (which may replace a
/// built-in); registering the identical (name, factory, aliases) again is a no-op. The built-ins:
/// local (in_process, single); distributed (torchrun, mpi): this process's rows as its rank's
/// share of a process group joined from the launcher's environment (a world of one without
/// one); component_parallel (model_parallel, mp_model); component_sharded, whose shards exist
/// only while `fit` runs — it fits a Dataset, and encoding it is refused.
void register_encoded_data_backend(const std::string& name, EncodedDataFactory factory,
                                   const std::vector<std::string>& aliases = {}, bool override = false);
/// Registered backend names (canonical, lower case).
std::vector<std::string> encoded_data_backends();

/// Either raw data or an already-encoded handle.
using DataSource = std::variant<Dataset, std::shared_ptr<EncodedData>>;
bool is_encoded_data_handle(const DataSource& source) noexcept;

/// Encodes `source` with the backend named in `options` (unknown names: InvalidInput listing the
/// registered ones). An already-encoded handle is returned as is — and passing any non-default
/// control with it throws EncodedDataControlConflict naming those controls.
std::shared_ptr<EncodedData> encoded_data(const DataSource& source, const EncodedDataOptions& options = {});

/// Fits a mixture to the rows an encoded handle holds, through that handle: the EM loop of
/// fit(Dataset, options). The handle already fixed how its rows are encoded, so options.backend,
/// device, threads and num_workers must keep their defaults (else EncodedDataControlConflict),
/// and options.missing must be "error" (dropping or marginalising rows needs the raw rows).
FitResult fit(const std::shared_ptr<EncodedData>& handle, const FitOptions& options);

}  // namespace mixle
