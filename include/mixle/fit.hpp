// Fitting and scoring mixture models — everything `mixle fit`, `score` and `generate` do,
// without the CLI. All arrays are host memory; row-major; K = number of components.
#pragma once

#include <mixle/data.hpp>
#include <mixle/model.hpp>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace mixle {

enum class InitMethod {
  kmeanspp,  // k-means++ on a seeded sample, then one hard-assignment M-step (default)
  select,    // each row kept with probability init_p, assigned a random component, one M-step
  model,     // start from FitOptions::init_model
  kmeans,    // k-means++'s start, then Lloyd's iterations on all rows to convergence; one M-step
};

/// Progress of one EM iteration, passed to FitOptions::progress.
struct FitProgress {
  int restart = 0;    // 0-based index of the --n-init restart
  int iteration = 0;  // 1-based
  int max_iter = 0;
  double mean_loglik = 0.0;  // mean log-likelihood per row of the model evaluated this iteration
  double delta = 0.0;        // change from the previous iteration (NaN at iteration 1)
  double seconds = 0.0;      // wall time of this iteration
  double rows_per_second = 0.0;
  /// (row, component) pairs whose log-density this iteration's E-step evaluated, per row of this
  /// process: K where every pair was, fewer where exact pruning proved the others zero; 0 where
  /// the backend does not say.
  double pairs_per_row = 0.0;
};

struct FitOptions {
  std::size_t components = 0;  // K ≥ 1 (ignored with InitMethod::model)
  /// Part layout: a family name for all columns ("gaussian_diag") or a list such as
  /// "gaussian_diag:0-4,categorical:4-5:3,poisson:5-7" (see parse_layout).
  std::string layout = "gaussian_diag";
  int max_iter = 100;
  double tol = 1e-3;  // on |Δ mean log-likelihood per row|
  std::uint64_t seed = 0;
  InitMethod init = InitMethod::kmeanspp;
  double init_p = 0.1;              // InitMethod::select
  std::optional<Model> init_model;  // InitMethod::model
  /// Initial parameters that replace the initialisation's in every restart (scikit-learn's
  /// weights_init, means_init, precisions_init), each empty when not given; the others are
  /// initialised as `init` says (not with InitMethod::model). Weights: K values; means K×D and
  /// precisions — inverse covariances, K×D (diag), K (spherical), K×D×D (full), D×D (tied) —
  /// of the model's one Gaussian part; row-major.
  std::vector<double> init_weights, init_means, init_precisions;
  /// Restarts: restart 0 seeded with `seed`, restart r by a hash of (seed, r); the fit with the
  /// best final log-likelihood is kept (the first of equals: FitResult::best_restart; mean
  /// log-likelihoods within 1e-10 relative count as equal, so that the rounding of a sum over
  /// ranks cannot change which restart a distributed fit keeps).
  int n_init = 1;
  double reg_covar = 1e-6;     // added to variances / covariance diagonals
  double pseudo_count = 1e-3;  // categorical / bernoulli prior counts
  double rate_floor = 1e-6;    // poisson rate and exponential mean floor
  /// A component that captures no rows: "keep" (its parameters stay, weight 0 — scikit-learn's
  /// behaviour) or "reseed" (restarted once from the rows the model explains worst; not with
  /// component sharding). Either way FitResult::warnings names it.
  std::string empty = "keep";
  /// A row with NaN in a modelled column: "error" (refused, naming the row), "drop" (it takes
  /// no part in the fit; FitResult::dropped_rows counts it) or "marginalise" (its missing values
  /// are left out of its log-density and of their columns' statistics — for families whose
  /// log-density is a sum over columns, i.e. every family but gaussian_full and gaussian_tied;
  /// not with component sharding; FitResult::marginalised_rows counts such rows).
  std::string missing = "error";
  std::string precision = "fp32";  // fp32 | fp64 (CPU, CUDA) | tf32 (CUDA)
  std::string device = "cpu";      // auto | cpu | cuda | cuda:i
  /// Exact pruning of the E-step (docs/numerics.md §8): "auto" evaluates, from the second pass
  /// over the rows on, only the (row, component) pairs a bound cannot prove to have exactly zero
  /// responsibility (gaussian_diag and spherical models on the CPU); "off" evaluates every pair.
  /// Both give the same bits.
  std::string prune = "auto";
  int threads = 0;  // CPU threads, 0 = all available
  /// Bytes the rows of this process may take in memory (docs/streaming.md, "Memory"): rows of a
  /// float .npy or raw file that exceed it (with a float32 copy for fp32, when one would be
  /// made) are streamed from the file in chunks on every pass, with the same results. 0: half
  /// the memory this process may use (MemTotal and its cgroups' limits), shared by the ranks
  /// of its node. Applies to fits of a file and of a Dataset read from one (read_data).
  std::uint64_t memory_budget = 0;
  /// local, component_parallel (threaded components), component_sharded (each component shard's
  /// parameters and statistics on its own thread and device), … — docs/engine.md, docs/sharding.md
  std::string backend = "local";
  /// component_parallel: component threads (0 = all); component_sharded: shards (0 = one per
  /// CUDA device with device cuda/auto and ≥ 2 GPUs, else 2)
  int num_workers = 0;
  std::function<void(const FitProgress&)> progress;  // called after every iteration

  /// Stepwise (mini-batch) EM — docs/streaming.md. batch_size > 0 rows per step turns it on
  /// (0: full-batch EM, the default): after each batch the running statistics become
  /// (1 − ρ_t)·S + ρ_t·Ŝ_batch (Ŝ scaled to the whole data's weight), ρ_t = (t + step_offset)^−α
  /// with α = step_decay, and the M-step runs. local or component_parallel backend, in one
  /// process or (fit_distributed) on data-parallel ranks, every family; not with empty =
  /// "reseed", missing = "marginalise", component sharding, checkpoints or receipts.
  std::size_t batch_size = 0;
  double step_decay = 0.6;   // α ∈ (0.5, 1]
  double step_offset = 2.0;  // t0 ≥ 0
  /// Stepwise passes over the rows (≥ 1); `tol` between two epochs' mean log-likelihoods ends them
  /// earlier. FitResult::iterations and mean_loglik then count epochs (then full-batch iterations).
  int epochs = 10;
  bool shuffle = false;  // visit the batches in a new order each epoch, drawn from (seed, epoch)
  /// Full-batch EM iterations after the stepwise epochs (≥ 0), ending earlier when converged.
  int full_batch_iterations = 0;
};

struct FitResult {
  Model model;
  std::vector<double> mean_loglik;        // per iteration of the kept restart
  std::vector<double> iteration_seconds;  // wall time of each of those iterations (E + M step)
  double init_seconds = 0.0;              // wall time of that restart's initial model (0: resumed)
  int iterations = 0;
  bool converged = false;
  double final_mean_loglik = 0.0;  // of the returned model (one extra E-step)
  std::vector<std::string> warnings;
  double seconds = 0.0;               // all restarts
  std::size_t rows = 0;               // rows fitted (all ranks), dropped ones not counted
  std::size_t dropped_rows = 0;       // rows with a missing value that FitOptions::missing = "drop" left out
  std::size_t marginalised_rows = 0;  // rows whose missing values FitOptions::missing = "marginalise" left out
  double total_weight = 0.0;          // Σ of the rows' sample weights (= rows when unweighted)
  int best_restart = 0;
};

/// Fits a mixture to `data`. Validates the options and the data against the model layout
/// before any EM work; throws InvalidInput (bad data/options, naming the row/column/field),
/// ImpossibleEvidence, NotCompiled (e.g. device "cuda" in a CPU-only build).
FitResult fit(const Dataset& data, const FitOptions& options);

/// Per-row log-likelihood log p(x_i) (rows values).
std::vector<double> score_samples(const Model& model, const Dataset& data, const std::string& device = "cpu",
                                  int threads = 0, const std::string& precision = "fp64");
/// Responsibilities p(k | x_i), rows × K row-major.
std::vector<double> predict_proba(const Model& model, const Dataset& data, const std::string& device = "cpu",
                                  int threads = 0, const std::string& precision = "fp64");
/// Most responsible component per row.
std::vector<std::int64_t> predict(const Model& model, const Dataset& data, const std::string& device = "cpu",
                                  int threads = 0, const std::string& precision = "fp64");

/// Bayesian and Akaike information criteria of `model` on `data` (lower is better):
/// BIC = −2 Σ log p + p·ln N, AIC = −2 Σ log p + 2p, p = model.free_parameters().
double bic(const Model& model, const Dataset& data);
double aic(const Model& model, const Dataset& data);
/// The same criteria from a log-likelihood sum already known (a fit's final one, or a score);
/// `rows` is N, or the total sample weight of a weighted fit.
double bic_from_loglik(double loglik_sum, std::size_t free_parameters, double rows);
double aic_from_loglik(double loglik_sum, std::size_t free_parameters);

/// Draws `rows` rows from `model` (float64, rows × model.columns()), and each row's component
/// in `labels` when given. Deterministic for a seed.
Dataset sample(const Model& model, std::size_t rows, std::uint64_t seed, std::vector<std::int64_t>* labels = nullptr);

}  // namespace mixle
