// `mixle score`: per-row log-likelihood, responsibilities or labels of data under a model, or
// one number for all rows (mean log-likelihood, BIC, AIC).
#include "host/cli/command.hpp"
#include "host/cli/data_args.hpp"

#include <mixle/error.hpp>
#include <mixle/fit.hpp>

#include <cstdio>
#include <memory>

namespace mixle::host {
namespace {

struct ScoreArgs {
  DataArgs data;
  std::string model, out, what = "loglik", device = "cpu", precision = "fp64";
  int threads = 0;
};

std::function<int()> setup_score(CLI::App& app) {
  auto a = std::make_shared<ScoreArgs>();
  a->data.add_to(app);
  app.add_option("-m,--model", a->model, "Model JSON")->required();
  app.add_option("-o,--out", a->out, "Output .npy or .csv (atomically written); per-row outputs need it");
  app.add_option("--what", a->what,
                 "loglik (N), resp (N×K) or labels (N) per row; loglik-mean, bic or aic: one number, printed")
      ->check(CLI::IsMember({"loglik", "resp", "labels", "loglik-mean", "bic", "aic"}))
      ->capture_default_str();
  app.add_option("--device", a->device, "auto, cpu, cuda, cuda:i")->capture_default_str();
  app.add_option("--precision", a->precision, "fp32 or fp64")->capture_default_str();
  app.add_option("--threads", a->threads, "CPU threads (0 = all)");
  return [a]() -> int {
    const bool summary = a->what == "loglik-mean" || a->what == "bic" || a->what == "aic";
    if (summary && !a->out.empty()) throw UsageError("--what " + a->what + " prints one number; leave out --out");
    if (!summary && a->out.empty())
      throw UsageError("--what " + a->what + " writes one value per row: give --out FILE");
    const DataFormat format = summary ? DataFormat::automatic : output_format(a->out);
    const Model model = load_model(a->model);
    const Dataset data = a->data.read();
    if (summary) {
      const auto v = score_samples(model, data, a->device, a->threads, a->precision);
      double loglik = 0.0;
      for (double x : v) loglik += x;
      const double value = a->what == "bic"   ? bic_from_loglik(loglik, model.free_parameters(), data.rows())
                           : a->what == "aic" ? aic_from_loglik(loglik, model.free_parameters())
                                              : loglik / static_cast<double>(data.rows());
      std::printf("%s: %.10g (%zu rows, %zu free parameters)\n", a->what.c_str(), value, data.rows(),
                  model.free_parameters());
      return 0;
    }
    if (a->what == "loglik") {
      const auto v = score_samples(model, data, a->device, a->threads, a->precision);
      write_matrix(a->out, v.data(), v.size(), 1, format, {"loglik"});
    } else if (a->what == "resp") {
      const auto v = predict_proba(model, data, a->device, a->threads, a->precision);
      std::vector<std::string> header;
      for (std::size_t k = 0; k < model.components(); ++k) header.push_back("resp_" + std::to_string(k));
      write_matrix(a->out, v.data(), data.rows(), model.components(), format, header);
    } else {
      const auto v = predict(model, data, a->device, a->threads, a->precision);
      write_matrix(a->out, v.data(), v.size(), 1, format, {"label"});
    }
    std::fprintf(stderr, "mixle: scored %zu rows → %s\n", data.rows(), a->out.c_str());
    return 0;
  };
}

}  // namespace
MIXLE_REGISTER_COMMAND("score", "Score data under a model: log-likelihood, responsibilities or labels", setup_score,
                       20);
}  // namespace mixle::host
