// `mixle fit`: fit a mixture to a data file and write the model JSON.
#include "host/cli/command.hpp"
#include "comms/comm_type.hpp"
#include "host/cli/data_args.hpp"
#include "host/cli/fit_summary.hpp"
#include "host/cli/option_checks.hpp"
#include "host/progress.hpp"

#include <mixle/error.hpp>
#include <mixle/family.hpp>
#include <mixle/distributed.hpp>
#include <mixle/fit.hpp>

#include "host/backend_shape.hpp"
#include "host/data/atomic_file.hpp"
#include "host/launch_env.hpp"

#include <charconv>
#include <chrono>

#include <nlohmann/json.hpp>

#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

namespace mixle::host {
namespace {

struct FitArgs {
  DataArgs data;
  std::string family = "gaussian_diag";
  std::string layout;
  std::string components;  // "K", or "A:B" with --select
  std::string select;      // bic | aic: pick K in A:B by this criterion
  std::string init = "kmeans++";
  std::string init_weights, init_means, init_precisions;  // files of given initial parameters
  std::string out;
  bool quiet = false;
  double timeout_s = 60.0;
  FitOptions options;
  DistributedOptions dist;
};

/// Seconds with microsecond resolution ("0.001234").
std::string seconds_text(double seconds) {
  char text[32];
  std::snprintf(text, sizeof text, "%.6f", seconds);
  return text;
}

/// -k: "K" → {K, K}; "A:B" → {A, B}, 1 ≤ A ≤ B. Anything else is a usage error in the option
/// checks' form: "--components: 0 is below 1; accepted: …".
std::pair<std::size_t, std::size_t> component_range(const std::string& text) {
  const std::string accepted = "; accepted: K or a range A:B of positive integers, A ≤ B";
  auto number = [&](const std::string& part) {
    long long v = 0;
    const auto [end, ec] = std::from_chars(part.data(), part.data() + part.size(), v);
    if (ec != std::errc() || end != part.data() + part.size() || part.empty())
      throw UsageError("--components: \"" + text + "\" is not K or A:B" + accepted);
    if (v < 1) throw UsageError("--components: " + text + " is below 1" + accepted);
    return static_cast<std::size_t>(v);
  };
  const auto colon = text.find(':');
  const std::size_t a = number(text.substr(0, colon));
  const std::size_t b = colon == std::string::npos ? a : number(text.substr(colon + 1));
  if (b < a) throw UsageError("--components: " + text + " runs backwards" + accepted);
  return {a, b};
}

/// One fit as the options say: through the distributed driver (any launcher, checkpoints,
/// receipts) or, for a single-process backend without a launcher, the local one. `where`
/// describes a distributed run. Returns an exit code when a failure was already reported.
std::optional<int> fit_once(FitArgs& args, const FitOptions& o, FitResult& result, std::string& where) {
  // Under a launcher every backend goes through the distributed driver, which runs what can
  // run in a process group (component threads inside each rank's share) and refuses the rest:
  // a single-process backend would make every rank fit the whole file.
  // The data-parallel backends run through the distributed path even as one process (a world
  // of size 1), so that checkpoints, resume and receipts work the same way.
  // Stepwise EM in one process keeps no checkpoints or receipts: the local driver runs it.
  const bool one_process = host::detect_launch_env().world_size <= 1;
  if ((host::backend_shape(o.backend) != host::BackendShape::data_parallel || o.batch_size > 0) && one_process) {
    if (!args.dist.checkpoint_dir.empty() || !args.dist.resume_dir.empty() || !args.dist.receipts_file.empty() ||
        args.dist.shard_components > 1)
      throw UsageError(
          o.batch_size > 0
              ? "--checkpoint-dir, --resume, --receipts and --shard-components are for full-batch EM, not --batch-size"
              : "--checkpoint-dir, --resume, --receipts and --shard-components need the local or distributed backend");
    result = fit(args.data.read(), o);
    return std::nullopt;
  }
  // A failing rank prints its error before its communicator's teardown: rank 0 then waits for
  // the peers, and a launcher that stops the group when one exits must not cut it short.
  bool reported = false;
  args.dist.on_error = [&reported](const std::exception& e) {
    const bool usage = dynamic_cast<const UsageError*>(&e) != nullptr;
    std::fprintf(stderr, "mixle: %s: %s\n", usage ? "usage error" : "error", e.what());
    std::fflush(stderr);
    reported = true;
  };
  DistributedFitResult d;
  try {
    d = fit_distributed(args.data.path, args.data.read_options(), o, args.dist);
  } catch (const Error& e) {
    if (!reported) throw;
    return dynamic_cast<const UsageError*>(&e) ? 2 : 1;  // printed already
  }
  result = d.fit;
  where = " on " + std::to_string(d.world_size) + " rank(s) (" + d.comm + ", " + d.device + ", this rank's rows [" +
          std::to_string(d.first_row) + ", " + std::to_string(d.first_row + d.local_rows) + "), " +
          std::to_string(d.collective_bytes) + " collective bytes" +
          // Timed by the data-parallel path; the component-sharded one leaves it 0.
          (d.collective_seconds > 0 ? " in " + seconds_text(d.collective_seconds) + " s" : "") +
          (d.resumed_from_iteration ? ", resumed after iteration " + std::to_string(d.resumed_from_iteration) : "") +
          ")";
  where += "\nparallel: " + d.parallel;
  where += "\nrows: " + d.rows_memory;
  where += "\nmodel parameter bytes: " + std::to_string(d.model_parameter_bytes);
  where += "\nresident parameter bytes per rank:";
  for (auto b : d.resident_parameter_bytes) where += " " + std::to_string(b);
  where += "\nresident statistic bytes per rank:";
  for (auto b : d.resident_statistic_bytes) where += " " + std::to_string(b);
  return std::nullopt;
}

/// A fit's information criteria from its own final log-likelihood (no second pass).
struct Criteria {
  std::size_t components = 0, parameters = 0;
  double mean_loglik = 0.0, bic = 0.0, aic = 0.0, seconds = 0.0;
  int iterations = 0;
};

Criteria criteria_of(const FitResult& r) {
  Criteria c;
  c.components = r.model.components();
  c.parameters = r.model.free_parameters();
  c.mean_loglik = r.final_mean_loglik;
  // With sample weights the fit's "rows" are its total weight (weights count as copies).
  const double loglik = r.final_mean_loglik * r.total_weight;
  c.bic = bic_from_loglik(loglik, c.parameters, r.total_weight);
  c.aic = aic_from_loglik(loglik, c.parameters);
  c.iterations = r.iterations;
  c.seconds = r.seconds;
  return c;
}

void print_selection(const std::vector<Criteria>& table, std::size_t chosen, const std::string& by) {
  std::printf("model selection by %s:\n%6s %16s %12s %18s %18s %10s %10s\n", by.c_str(), "K", "mean loglik",
              "parameters", "BIC", "AIC", "iterations", "seconds");
  for (std::size_t i = 0; i < table.size(); ++i) {
    const Criteria& c = table[i];
    std::printf("%6zu %16.6f %12zu %18.6f %18.6f %10d %10.3f%s\n", c.components, c.mean_loglik, c.parameters, c.bic,
                c.aic, c.iterations, c.seconds, i == chosen ? "  ← selected" : "");
  }
}

int run_fit(FitArgs& args) {
  FitOptions& o = args.options;
  for (const auto& [file, values] :
       {std::pair{&args.init_weights, &o.init_weights}, std::pair{&args.init_means, &o.init_means},
        std::pair{&args.init_precisions, &o.init_precisions}})
    if (!file->empty()) *values = read_data(*file).values();  // row-major: a full model's K×D×D as (K·D)×D
  if (args.init == "select") {
    o.init = InitMethod::select;
  } else if (args.init == "kmeans") {
    o.init = InitMethod::kmeans;
  } else if (args.init != "kmeans++") {  // kmeans++ is FitOptions' default
    o.init = InitMethod::model;
    o.init_model = load_model(args.init);
  }
  std::pair<std::size_t, std::size_t> range{0, 0};
  if (o.init != InitMethod::model) {
    if (args.components.empty()) throw UsageError("--components K is required (or --init MODEL.json)");
    range = component_range(args.components);
  } else if (!args.components.empty() && args.components.find(':') != std::string::npos) {
    throw UsageError("--components " + args.components +
                     ": a range needs an initialisation that draws K "
                     "components (kmeans++ or select), not a model file");
  }
  const bool selecting = range.second > range.first;
  if (!args.select.empty() && !selecting) throw UsageError("--select " + args.select + " needs a range -k A:B");
  if (selecting && !(o.init_weights.empty() && o.init_means.empty() && o.init_precisions.empty()))
    throw UsageError("--init-weights, --init-means and --init-precisions give one K's parameters; not with -k A:B");
  if (selecting &&
      (!args.dist.checkpoint_dir.empty() || !args.dist.resume_dir.empty() || !args.dist.receipts_file.empty()))
    throw UsageError("--checkpoint-dir, --resume and --receipts describe one fit; with -k A:B fit the chosen K again");
  const std::string by = args.select.empty() ? "bic" : args.select;
  o.layout = args.layout.empty() ? args.family : args.layout;
  args.dist.timeout = timeout_ms(args.timeout_s);

  // Only rank 0 prints progress and writes outputs (docs/design.md §8).
  const bool rank0 = host::detect_launch_env().is_rank0();
  // A fit can take hours: an output that could never be written fails now, not after it.
  if (rank0 && !args.out.empty()) host::AtomicFile probe(args.out);  // removed again, uncommitted
  args.data.use_csv_cache(args.quiet || !rank0);
  ProgressPrinter progress(!args.quiet && rank0);
  o.progress = [&](const FitProgress& p) { progress.iteration(p); };
  FitResult result;
  std::string where;
  std::vector<Criteria> table;
  std::size_t chosen = 0;
  for (std::size_t k = range.first; k <= std::max(range.second, range.first); ++k) {
    if (o.init != InitMethod::model) o.components = k;
    FitResult r;
    std::string w;
    if (const auto failed = fit_once(args, o, r, w)) return *failed;
    progress.finish();
    table.push_back(criteria_of(r));
    const auto score = [&](const Criteria& c) { return by == "aic" ? c.aic : c.bic; };
    if (table.size() == 1 || score(table.back()) < score(table[chosen])) {
      chosen = table.size() - 1;
      result = std::move(r);
      where = std::move(w);
    }
    if (o.init == InitMethod::model) break;
  }
  if (!rank0) return 0;
  for (const auto& w : result.warnings) std::fprintf(stderr, "mixle: warning: %s\n", w.c_str());
  if (selecting) print_selection(table, chosen, by);
  print_fit_summary(stdout, result, result.seconds, !args.data.weights.empty());
  if (!where.empty()) std::printf("distributed:%s\n", where.c_str());
  if (!args.out.empty()) {
    save_model(result.model, args.out);
    std::printf("model written to %s\n", args.out.c_str());
  }
  return 0;
}

std::function<int()> setup_fit(CLI::App& app) {
  auto args = std::make_shared<FitArgs>();
  args->data.add_to(app);
  args->data.add_cache_to(app);
  app.add_option("--weights", args->data.weights,
                 "Per-row sample weights (≥ 0, one per data row): .npy, one-column CSV, or raw float64");
  app.add_option("--family", args->family, "Family for all columns: " + family_names());
  app.add_option("--layout", args->layout,
                 "Mixed record layout, e.g. gaussian_diag:0-4,categorical:4-5:3,poisson:5-7 (overrides --family)");
  app.add_option("-k,--components", args->components,
                 "Number of components K, or a range A:B to fit each K and keep the one --select picks");
  app.add_option("--select", args->select, "With -k A:B: the criterion that picks K, bic (default) or aic")
      ->check(CLI::IsMember({"bic", "aic"}));
  app.add_option("--max-iter", args->options.max_iter, "Maximum EM iterations")
      ->check(at_least(1, "the most EM iterations of a restart, ≥ 1"))
      ->capture_default_str();
  app.add_option("--tol", args->options.tol, "Stop when |Δ mean log-likelihood| < tol")
      ->check(number_at_least(0, "a change of the mean log-likelihood ≥ 0 (0: run --max-iter iterations)"))
      ->capture_default_str();
  app.add_option("--seed", args->options.seed, "Random seed")->capture_default_str();
  app.add_option("--init", args->init,
                 "Initialisation: kmeans++ (on a sample), kmeans (Lloyd on all rows after kmeans++), select, or a "
                 "model JSON file")
      ->capture_default_str();
  app.add_option("--init-p", args->options.init_p, "select: probability that a row is kept")
      ->check(number_in(0, true, 1, "the probability that a row is kept, in (0, 1]"))
      ->capture_default_str();
  app.add_option("--init-weights", args->init_weights,
                 "Initial weights (K values, .npy or CSV), replacing the drawn ones");
  app.add_option("--init-means", args->init_means, "Initial means of the Gaussian part (K×D, .npy or CSV)");
  app.add_option("--init-precisions", args->init_precisions,
                 "Initial precisions (inverse covariances) of the Gaussian part: K×D diag, K spherical, (K·D)×D "
                 "full, D×D tied");
  app.add_option("--n-init", args->options.n_init, "Restarts; the best final fit is kept")
      ->check(at_least(1, "the restarts, ≥ 1"))
      ->capture_default_str();
  app.add_option("--empty", args->options.empty,
                 "A component that captures no rows: keep (weight 0, parameters unchanged) or reseed (restarted "
                 "once from the worst-explained rows)")
      ->check(CLI::IsMember({"keep", "reseed"}))
      ->capture_default_str();
  app.add_option("--missing", args->options.missing,
                 "A row with NaN in a modelled column: error (refused, naming the row), drop (left out of the fit, "
                 "counted and named in a warning) or marginalise (its missing values left out of its log-density and "
                 "statistics; every family but gaussian_full and gaussian_tied)")
      ->check(CLI::IsMember({"error", "drop", "marginalise"}))
      ->capture_default_str();
  auto* stepwise = app.add_option_group("stepwise", "Stepwise (mini-batch) EM, in one process (docs/streaming.md)");
  stepwise
      ->add_option("--batch-size", args->options.batch_size,
                   "Rows per step: after each batch the running statistics move by ρ_t toward the batch's and the "
                   "M-step runs (0 = full-batch EM)")
      ->check(at_least(0, "0 (full-batch EM) or the rows per step, ≥ 1"))
      ->capture_default_str();
  stepwise->add_option("--step-decay", args->options.step_decay, "α in ρ_t = (t + t0)^−α, in (0.5, 1]")
      ->check(number_in(0.5, true, 1, "α in (0.5, 1], where ρ_t = (t + t0)^−α converges"))
      ->capture_default_str();
  stepwise->add_option("--step-offset", args->options.step_offset, "t0 in ρ_t = (t + t0)^−α, ≥ 0")
      ->check(number_at_least(0, "t0 ≥ 0"))
      ->capture_default_str();
  stepwise->add_option("--epochs", args->options.epochs, "Passes over the rows (--tol between epochs ends earlier)")
      ->check(at_least(1, "the passes over the rows, ≥ 1"))
      ->capture_default_str();
  stepwise->add_flag("--shuffle", args->options.shuffle, "Visit the batches in a new order each epoch (from --seed)");
  stepwise
      ->add_option("--full-batch-iterations", args->options.full_batch_iterations,
                   "Full-batch EM iterations after the epochs")
      ->check(at_least(0, "the full-batch iterations after the epochs, ≥ 0"))
      ->capture_default_str();
  app.add_option("--reg-covar", args->options.reg_covar, "Added to variances and covariance diagonals")
      ->check(number_at_least(0, "a variance ≥ 0"))
      ->capture_default_str();
  app.add_option("--pseudo-count", args->options.pseudo_count, "Categorical/bernoulli prior count")
      ->check(number_at_least(0, "a prior count ≥ 0"))
      ->capture_default_str();
  app.add_option("--rate-floor", args->options.rate_floor, "Poisson rate / exponential mean floor")
      ->check(number_above(0, "a floor > 0"))
      ->capture_default_str();
  app.add_option("--precision", args->options.precision, "Compute precision: fp32, fp64, tf32 (CUDA)")
      ->capture_default_str();
  app.add_option("--device", args->options.device, "auto, cpu, cuda, cuda:i")->capture_default_str();
  app.add_option("--prune", args->options.prune,
                 "Exact pruning of the E-step: auto (from the second pass on, only the row-component pairs a bound "
                 "cannot prove zero are evaluated; same bits), off (every pair)")
      ->check(CLI::IsMember({"auto", "off"}))
      ->capture_default_str();
  app.add_option("--threads", args->options.threads, "CPU threads (0 = all)")
      ->check(at_least(0, "CPU threads, or 0 for all"))
      ->capture_default_str();
  app.add_option("--memory-budget", args->options.memory_budget,
                 "Bytes this process's rows may take (e.g. 256M, 4G): rows of a float .npy or raw file beyond it "
                 "are streamed from the file in chunks on every pass, with the same result (0 = half the usable "
                 "memory, shared by the node's ranks)")
      ->transform(CLI::AsSizeValue(false))
      ->capture_default_str();
  app.add_option("--backend", args->options.backend, "Encoded-data backend (local, component_parallel, …)")
      ->capture_default_str();
  app.add_option("--workers", args->options.num_workers, "component_parallel backend: component threads (0 = all)")
      ->check(at_least(0, "component threads, or 0 for all"));
  app.add_option("-o,--out", args->out, "Write the fitted model JSON here (atomically)");
  app.add_option("--receipts", args->dist.receipts_file, "Rank 0 writes one JSON StepReceipt per iteration here");
  app.add_flag("-q,--quiet", args->quiet, "No progress on stderr");
  auto* dist = app.add_option_group("distributed", "Across processes (torchrun, mpirun, srun, mixle launch)");
  dist->add_option("--comm", args->dist.comm, "Communicator: auto, or one of " + comms::comm_type_names())
      ->check(CLI::Validator(
          [](std::string& name) {
            return name == "auto" || comms::find_comm_type(name)
                       ? std::string()
                       : "unknown communicator '" + name + "'; accepted: auto, " + comms::comm_type_names();
          },
          "COMM"))
      ->capture_default_str();
  dist->add_option("--timeout", args->timeout_s, "Seconds before a lost or hung rank fails the run")
      ->check(timeout_seconds())
      ->capture_default_str();
  dist->add_option("--checkpoint-dir", args->dist.checkpoint_dir, "Rank 0 writes checkpoint.json here");
  dist->add_option("--checkpoint-every", args->dist.checkpoint_every, "Iterations between checkpoints")
      ->check(at_least(1, "the iterations between checkpoints, ≥ 1"))
      ->capture_default_str();
  dist->add_option("--resume", args->dist.resume_dir, "Continue from DIR/checkpoint.json (any world size)");
  dist->add_option("--resources", args->dist.resources_file,
                   "Resources JSON, one device per rank: rows split by throughput; components sharded when the model "
                   "does not fit one device");
  dist->add_option("--shard-components", args->dist.shard_components,
                   "Ranks per component group G: each holds 1/G of the components (world = data groups × G); "
                   "1 = data parallel; 0 = automatic from --resources")
      ->capture_default_str();

  return [args]() -> int { return run_fit(*args); };
}

}  // namespace
MIXLE_REGISTER_COMMAND("fit", "Fit a mixture model to a data file by EM", setup_fit, 10);
}  // namespace mixle::host
