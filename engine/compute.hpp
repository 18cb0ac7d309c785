// A Compute runs the three passes over rows resident in this process, for a Model:
// the engine's only view of kernels. CPU always; CUDA when built (else NotCompiled("cuda")).
#pragma once

#include "engine/estimator.hpp"
#include "kernels/model_view.hpp"

#include <mixle/data.hpp>
#include <mixle/model.hpp>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace mixle::comms {
class Communicator;
}

namespace mixle::engine {

class Compute {
 public:
  virtual ~Compute() = default;
  /// "cpu", "cuda:0", …
  virtual std::string name() const = 0;

  /// Adds the E-step statistics of `rows` under `model` to `stats` (stat_layout(model).size
  /// float64 values, host). Moments are accumulated about shift_table(model, precision).
  virtual kernels::PassReport accumulate(const Model& model, const Dataset& rows, Precision precision,
                                         std::vector<double>& stats) = 0;

  /// Per-row log-likelihood (rows values; −inf for an impossible row, NaN for a NaN row, both
  /// also in the report) and responsibilities (rows × K), host float64; either may be null.
  virtual kernels::PassReport score(const Model& model, const Dataset& rows, Precision precision, double* loglik,
                                    double* resp) = 0;

  /// Folds given responsibilities (host, rows × K) into `stats`, float64, about zero shift.
  virtual void accumulate_given(const Model& model, const Dataset& rows, const double* resp,
                                std::vector<double>& stats) = 0;

  /// accumulate_given for one-hot responsibilities: row i wholly in component labels[i] (< K).
  /// This default builds the rows × K matrix; the CPU kernels read the labels themselves.
  virtual void accumulate_labelled(const Model& model, const Dataset& rows, const std::size_t* labels,
                                   std::vector<double>& stats);

  /// Adds the E-step statistics of `rows` under responsibilities normalised by a per-row
  /// normaliser computed elsewhere: r_k = exp(log w_k + log p(x|k) − log_norm[i]) for the
  /// components k of `model` (host float64, `rows` values). Component sharding passes the
  /// log-likelihood under the *whole* mixture while `model` holds only one shard of it (with the
  /// global weights), so the shard folds its share of the global posterior without ever storing
  /// rows × K responsibilities. Rows whose normaliser is not finite contribute nothing. Moments
  /// are about shift_table(model, precision); stats[0] and stats[1] are left unchanged (the
  /// caller owns the log-likelihood and row count). A Compute without it throws NotCompiled.
  virtual void accumulate_normalised(const Model& model, const Dataset& rows, Precision precision,
                                     const double* log_norm, std::vector<double>& stats);

  /// Bytes per row that score_keeping keeps for a `components`-component model at `precision`;
  /// 0 when this Compute does not keep log-densities (then the two calls below fall back to
  /// score and accumulate_normalised, recomputing the log-densities).
  virtual std::size_t kept_bytes_per_row(std::size_t components, Precision precision) const;
  /// score(model, rows, precision, loglik, nullptr) that also keeps every row's log-densities in
  /// `kept` (rows × kept_bytes_per_row bytes), for an accumulate_normalised_kept over the same
  /// rows and model — component sharding scores a chunk, exchanges, then folds it.
  virtual kernels::PassReport score_keeping(const Model& model, const Dataset& rows, Precision precision,
                                            double* loglik, std::vector<unsigned char>& kept);
  /// accumulate_normalised from the log-densities `kept` by score_keeping (bit-identical to
  /// recomputing them). Consumes `kept` (the CPU kernels turn it into responsibilities in
  /// place): fold once per score_keeping.
  virtual void accumulate_normalised_kept(const Model& model, const Dataset& rows, Precision precision,
                                          const double* log_norm, std::vector<unsigned char>& kept,
                                          std::vector<double>& stats);

  /// Sums `values` over the ranks of `comm`, in place, where the statistics already are. The
  /// first values must be exactly what this Compute's most recent call, an accumulate into a
  /// zero buffer, added; at most one value of the caller's (an error mark) may follow. The CUDA
  /// Compute keeps those statistics in a float64 device buffer with a spare slot: when `comm`
  /// works in device memory (nccl) it copies the trailing value in, all-reduces that buffer in
  /// place and copies the sums out, once. Returns false, doing nothing, where that does not
  /// apply (the default); the caller then all-reduces `values` on the host.
  virtual bool all_reduce_statistics(comms::Communicator& comm, std::vector<double>& values);
};

/// Exact pruning of the E-step (docs/numerics.md §8): `automatic` evaluates only the (row,
/// component) pairs a bound cannot prove zero, once a pass over the same rows has given each row
/// an anchor; `off` evaluates every pair. Both give the same bits.
enum class Prune { off, automatic };
/// Parses "off" | "auto"; throws InvalidInput naming the value and the accepted names.
Prune prune_from_name(const std::string& name);

/// The CPU kernels; `threads` 0 = OpenMP's default. `component_workers` > 1 threads each
/// block's work across component ranges instead of row tiles (bit-identical results).
std::unique_ptr<Compute> make_cpu_compute(int threads, int component_workers = 1, Prune prune = Prune::automatic);
/// The CUDA kernels on device `device`; throws NotCompiled("cuda") in a CPU-only build and
/// InvalidInput when the device does not exist.
std::unique_ptr<Compute> make_cuda_compute(int device);
/// Number of CUDA devices (0 in a CPU-only build or without a driver/device).
int cuda_device_count() noexcept;
/// The device `device` names: "auto" is "cuda:0" when `count_gpus()` (asked only for "auto")
/// finds a CUDA device and "cpu" otherwise; any other name is returned as given.
std::string resolve_device(std::string_view device, int (*count_gpus)() = cuda_device_count);
/// Parses "auto", "cpu", "cuda", "cuda:i": auto picks cuda:0 when a device is present.
std::unique_ptr<Compute> make_compute(const std::string& device, int threads, Prune prune = Prune::automatic);
/// The CUDA device a device name selects: 0 for "cuda", i for "cuda:i"; nullopt for any name that
/// is not a CUDA device ("cpu", "auto", …). Throws InvalidInput for "cuda:" followed by anything
/// but a non-negative decimal index.
std::optional<int> cuda_index(std::string_view device);

/// The bytes of the float32 copy a Compute on `device` ("cpu", "cuda:i", or "auto" as
/// make_compute resolves it) keeps of resident `rows` for passes at `precision`; 0 for none. Only
/// a GPU makes one, of float64 rows computed in float32, and only while it takes at most an
/// eighth of physical memory: its kernels read float32, so the copy halves what every pass
/// converts and sends; the CPU kernels convert each 128-row block as they read it, which costs
/// less than the copy saves. The one rule for the handle that makes the copy and the memory plan
/// that counts it.
std::uint64_t f32_copy_bytes(std::string_view device, Precision precision, const Dataset& rows);

}  // namespace mixle::engine
