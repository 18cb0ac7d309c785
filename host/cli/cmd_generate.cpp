// `mixle generate`: sample rows (and their components) from a model file.
#include "host/cli/command.hpp"
#include "host/cli/data_args.hpp"
#include "host/cli/option_checks.hpp"

#include <mixle/error.hpp>
#include <mixle/fit.hpp>

#include <cstdio>
#include <memory>

namespace mixle::host {
namespace {

struct GenerateArgs {
  std::string model, out, labels, dtype = "f32";
  long long rows = -1;
  std::uint64_t seed = 0;
};

std::function<int()> setup_generate(CLI::App& app) {
  auto a = std::make_shared<GenerateArgs>();
  app.add_option("-m,--model", a->model, "Model JSON")->required();
  app.add_option("-n,--rows", a->rows, "Rows to draw")->required()->check(at_least(1, "the rows to draw, ≥ 1"));
  app.add_option("-o,--out", a->out, "Output .npy or .csv")->required();
  app.add_option("--labels", a->labels, "Also write each row's component (.npy or .csv)");
  app.add_option("--seed", a->seed, "Random seed")->capture_default_str();
  app.add_option("--dtype", a->dtype, "Output element type")
      ->check(CLI::IsMember({"f32", "f64"}))
      ->capture_default_str();
  return [a]() -> int {
    const DataFormat format = output_format(a->out);
    const DataFormat label_format = a->labels.empty() ? DataFormat::npy : output_format(a->labels);
    const Model model = load_model(a->model);
    std::vector<std::int64_t> labels;
    const Dataset d = sample(model, static_cast<std::size_t>(a->rows), a->seed, &labels);
    if (a->dtype == "f32") {
      std::vector<float> v(d.as<double>(), d.as<double>() + d.rows() * d.cols());
      write_matrix(a->out, v.data(), d.rows(), d.cols(), format);
    } else {
      write_matrix(a->out, d.as<double>(), d.rows(), d.cols(), format);
    }
    if (!a->labels.empty()) write_matrix(a->labels, labels.data(), labels.size(), 1, label_format, {"component"});
    std::fprintf(stderr, "mixle: drew %zu rows × %zu columns → %s\n", d.rows(), d.cols(), a->out.c_str());
    return 0;
  };
}

}  // namespace
MIXLE_REGISTER_COMMAND("generate", "Draw rows and their components from a model file", setup_generate, 30);
}  // namespace mixle::host
