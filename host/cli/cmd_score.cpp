// `mixle score`: per-row log-likelihood, responsibilities or labels of data under a model, or
// one number for all rows (mean log-likelihood, BIC, AIC).
#include "host/cli/command.hpp"
#include "host/cli/data_args.hpp"
#include "host/cli/score_chunks.hpp"
#include "host/data/matrix_stream.hpp"

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
  a->data.add_cache_to(app);
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
    a->data.use_csv_cache(/*quiet=*/false);
    // .npy and raw: mapped, so a chunk's rows are read when scored, and leave this process's
    // memory after it (Dataset::release): scoring holds one chunk of rows, whatever the file's size.
    const Dataset data = a->data.read();
    const std::size_t K = model.components(), chunk = score_chunk_rows(K, data.cols() * dtype_size(data.dtype()));
    const auto each_chunk = [&](auto&& fn) {
      for_each_chunk(data.rows(), chunk, [&](std::size_t begin, std::size_t end) {
        fn(begin, end);
        data.release(begin, end);
      });
    };
    if (summary) {
      double loglik = 0.0;  // Σ log p(x), chunk by chunk
      each_chunk([&](std::size_t begin, std::size_t end) {
        for (double x : score_samples(model, data.slice(begin, end), a->device, a->threads, a->precision)) loglik += x;
      });
      const double value = a->what == "bic"   ? bic_from_loglik(loglik, model.free_parameters(), data.rows())
                           : a->what == "aic" ? aic_from_loglik(loglik, model.free_parameters())
                                              : loglik / static_cast<double>(data.rows());
      std::printf("%s: %.10g (%zu rows, %zu free parameters)\n", a->what.c_str(), value, data.rows(),
                  model.free_parameters());
      return 0;
    }
    // Per-row outputs go to the file chunk by chunk (never all N × K at once); it appears, complete,
    // only after the last chunk — an error on the way leaves no file.
    if (a->what == "labels") {
      MatrixStream<std::int64_t> out(a->out, data.rows(), 1, format, {"label"});
      each_chunk([&](std::size_t begin, std::size_t end) {
        const auto v = predict(model, data.slice(begin, end), a->device, a->threads, a->precision);
        out.append(v.data(), v.size());
      });
      out.commit();
    } else {
      const bool resp = a->what == "resp";
      std::vector<std::string> header{"loglik"};
      if (resp) {
        header.clear();
        for (std::size_t k = 0; k < K; ++k) header.push_back("resp_" + std::to_string(k));
      }
      MatrixStream<double> out(a->out, data.rows(), resp ? K : 1, format, header);
      each_chunk([&](std::size_t begin, std::size_t end) {
        const Dataset rows = data.slice(begin, end);
        const auto v = resp ? predict_proba(model, rows, a->device, a->threads, a->precision)
                            : score_samples(model, rows, a->device, a->threads, a->precision);
        out.append(v.data(), rows.rows());
      });
      out.commit();
    }
    std::fprintf(stderr, "mixle: scored %zu rows → %s\n", data.rows(), a->out.c_str());
    return 0;
  };
}

}  // namespace
MIXLE_REGISTER_COMMAND("score", "Score data under a model: log-likelihood, responsibilities or labels", setup_score,
                       20);
}  // namespace mixle::host
