// `mixle score`: per-row log-likelihood, responsibilities or labels of data under a model, or
// one number for all rows (mean log-likelihood, BIC, AIC). Under a launcher each rank scores its
// share of the rows (host/cli/score_ranks.hpp).
#include "host/cli/command.hpp"
#include "host/cli/data_args.hpp"
#include "host/cli/option_checks.hpp"
#include "host/cli/score_ranks.hpp"
#include "host/launch_env.hpp"

#include <mixle/error.hpp>
#include <mixle/fit.hpp>

#include <cstdio>
#include <memory>

namespace mixle::host {
namespace {

std::function<int()> setup_score(CLI::App& app) {
  auto a = std::make_shared<ScoreArgs>();
  a->data.add_to(app);
  a->data.add_cache_to(app);
  app.add_option("-m,--model", a->model, "Model JSON")->required();
  app.add_option("-o,--out", a->out, "Output .npy or .csv (atomically written); per-row outputs need it");
  app.add_option("--what", a->what,
                 "loglik (N), resp (N×K) or labels (N) per row; loglik-mean, bic or aic: one number, printed")
      ->check(CLI::IsMember({"loglik", "resp", "labels", "loglik-mean", "bic", "aic"}))
      ->capture_default_str();
  app.add_option("--device", a->device, "auto, cpu, cuda, cuda:i")->capture_default_str();
  app.add_option("--precision", a->precision, "fp32 or fp64")->capture_default_str();
  app.add_option("--threads", a->threads, "CPU threads (0 = all)")->check(at_least(0, "CPU threads, or 0 for all"));
  app.add_option("--timeout", a->timeout_s,
                 "Under a launcher: seconds a rank waits for the group to form and the other ranks to finish")
      ->check(timeout_seconds())
      ->capture_default_str();
  return [a]() -> int {
    const bool summary = a->summary();
    if (summary && !a->out.empty()) throw UsageError("--what " + a->what + " prints one number; leave out --out");
    if (!summary && a->out.empty())
      throw UsageError("--what " + a->what + " writes one value per row: give --out FILE");
    if (!summary) output_format(a->out);  // a name no writer takes is refused before any work
    const Model model = load_model(a->model);
    const LaunchEnv env = detect_launch_env();
    a->data.use_csv_cache(/*quiet=*/!env.is_rank0());
    if (env.world_size > 1) return score_on_ranks(*a, model, env);
    // .npy and raw: mapped, so a chunk's rows are read when scored, and leave this process's
    // memory after it (Dataset::release): scoring holds one chunk of rows, whatever the file's size.
    const Dataset data = a->data.read();
    if (summary) {
      print_summary(*a, model, score_loglik_sum(*a, model, data), data.rows());
      return 0;
    }
    score_rows_to(*a, model, data, a->out);
    std::fprintf(stderr, "mixle: scored %zu rows → %s\n", data.rows(), a->out.c_str());
    return 0;
  };
}

}  // namespace
MIXLE_REGISTER_COMMAND("score", "Score data under a model: log-likelihood, responsibilities or labels", setup_score,
                       20);
}  // namespace mixle::host
