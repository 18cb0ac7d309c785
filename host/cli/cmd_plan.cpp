// `mixle plan`: show how rows (and, with --shard-components, components) map onto devices.
#include "host/cli/command.hpp"
#include "host/cli/data_args.hpp"
#include "host/cli/option_checks.hpp"

#include "engine/auto_parallel.hpp"
#include "engine/model_summary.hpp"
#include "host/bytes_text.hpp"

#include <mixle/error.hpp>
#include <mixle/family.hpp>
#include <mixle/model.hpp>
#include <mixle/plan/placement.hpp>

#include <nlohmann/json.hpp>

#include <cstdio>
#include <iomanip>
#include <iostream>
#include <sstream>

namespace mixle::host {
namespace {

using Json = nlohmann::json;

struct PlanArgs {
  std::optional<std::uint64_t> rows;
  DataArgs data;
  std::string model_file;
  std::string family;
  std::string layout;
  std::optional<std::size_t> components;
  std::size_t dims = 1;
  std::size_t categories = 0;
  std::string resources_file;
  std::optional<std::uint64_t> num_chunks;
  double safety_factor = 1.25;
  std::uint64_t rows_per_chunk = 65536;
  std::uint64_t sub_chunks = 1;
  std::string dtype = "f32";
  std::string precision = "float32";
  bool shard_components = false;
  std::uint64_t min_components_per_shard = 1;
  bool json = false;
};

/// The model to plan: a model file (read and validated as `mixle fit --init model` reads it), a
/// layout of parts (the syntax of `mixle fit --layout`), or one family over --dims columns.
plan::ModelSummary model_from_args(const PlanArgs& a) {
  const int given = !a.model_file.empty() + !a.family.empty() + !a.layout.empty();
  if (given > 1) throw UsageError("give one of --model FILE, --family F or --layout L, not several");
  if (!a.model_file.empty()) return engine::summarise(load_model(a.model_file));
  if (given == 0 || !a.components) {
    throw UsageError(
        "the model is needed: --model FILE, --family F --components K [--dims D], "
        "or --layout L --components K");
  }
  // plan() validates the summary before anything uses it (and names the part and field).
  return a.layout.empty() ? plan::ModelSummary{*a.components, {{a.family, a.dims, a.categories}}}
                          : engine::summarise(*a.components, parse_layout(a.layout, 0), 0);
}

std::string range_text(std::uint64_t start, std::uint64_t stop) {
  return "[" + std::to_string(start) + ", " + std::to_string(stop) + ")";
}

// The placement table's width (its columns' widths summed) and the pieces of one device shown
// in full before the middle ones are counted instead.
constexpr std::size_t kTableWidth = 28 + 28 + 14 + 8 + 14 + 14 + 14 + 14;
constexpr std::size_t kPiecesShown = 6;

void print_table(const plan::Placement& p, const std::vector<plan::ModelShard>* shards) {
  std::ostringstream out;
  const std::size_t devices = p.resources ? p.resources->size() : 0;
  out << "Placement: " << p.total_rows << " rows in " << p.shards.size() << " shard(s) over " << devices
      << " device(s)\n"
      << "  per row: " << p.encoded_row_bytes << " B data, " << p.transient_row_bytes << " B working set (chunks of "
      << (p.rows_per_chunk ? std::to_string(p.rows_per_chunk) : "all") << " rows); fixed: model "
      << bytes_text(p.model_bytes) << " + statistics " << bytes_text(p.statistic_bytes) << "; safety factor "
      << p.safety_factor << "\n\n";
  out << std::left << std::setw(28) << "device" << std::setw(28) << "rows" << std::right << std::setw(14) << "count"
      << std::setw(8) << "chunks" << std::setw(14) << "data" << std::setw(14) << "transient" << std::setw(14) << "total"
      << std::setw(14) << "memory"
      << "\n";
  const auto row = [&out](const plan::PlacementShard& s) {
    out << std::left << std::setw(28) << s.device.name << std::setw(28) << range_text(s.start, s.stop) << std::right
        << std::setw(14) << s.size() << std::setw(8) << s.sub_chunks << std::setw(14) << bytes_text(s.encoded_bytes)
        << std::setw(14) << bytes_text(s.transient_bytes) << std::setw(14) << bytes_text(s.total_bytes())
        << std::setw(14) << (s.device.memory_bytes ? bytes_text(*s.device.memory_bytes) : "unknown") << "\n";
  };
  // A device cut into many pieces (its memory holds few rows' working set) shows its first and
  // last two; the pieces between are counted on one line (--json lists every piece).
  for (std::size_t i = 0; i < p.shards.size();) {
    std::size_t end = i;
    while (end < p.shards.size() && p.shards[end].device.name == p.shards[i].device.name) ++end;
    for (std::size_t j = i; j < end; ++j) {
      if (end - i <= kPiecesShown + 1 || j < i + 2 || j >= end - 2) {
        row(p.shards[j]);
      } else {
        const std::size_t hidden = end - i - 4;
        out << std::left << std::setw(28) << p.shards[j].device.name << std::setw(static_cast<int>(kTableWidth) - 28)
            << ("... " + std::to_string(hidden) + " more pieces, rows " +
                range_text(p.shards[j].start, p.shards[end - 3].stop))
            << "\n";
        j = end - 3;
      }
    }
    i = end;
  }
  if (shards) {
    out << "\nModel shards (component axis):\n"
        << std::left << std::setw(28) << "device" << std::setw(20) << "components" << std::right << std::setw(10)
        << "count" << std::setw(16) << "parameters" << std::setw(16) << "statistics"
        << "\n";
    for (const plan::ModelShard& s : *shards) {
      out << std::left << std::setw(28) << s.device.name << std::setw(20)
          << range_text(s.component_start, s.component_stop) << std::right << std::setw(10) << s.num_components()
          << std::setw(16) << bytes_text(s.parameter_bytes) << std::setw(16) << bytes_text(s.statistic_bytes) << "\n";
    }
  }
  std::cout << out.str();
}

std::function<int()> setup_plan(CLI::App& app) {
  auto a = std::make_shared<PlanArgs>();
  app.add_option("--rows", a->rows, "Rows of the data (N)")->check(at_least(1, "the data rows, ≥ 1"));
  a->data.add_to(app, /*required=*/false);
  app.add_option("--model", a->model_file, "A mixle model JSON file (K and the parts)")->check(CLI::ExistingFile);
  app.add_option("--family", a->family, "Family of a one-part model: " + family_names());
  app.add_option("--layout", a->layout,
                 "Parts of a model, as mixle fit --layout takes them (e.g. gaussian_diag:0-4,categorical:4-5:3)");
  app.add_option("--components", a->components, "K, with --family or --layout")
      ->check(at_least(1, "the components K, ≥ 1"));
  app.add_option("--dims", a->dims, "Columns of the one-part model (default 1)")
      ->check(at_least(1, "the columns, ≥ 1"));
  app.add_option("--categories", a->categories, "Categories per column, for --family categorical");
  app.add_option("--resources", a->resources_file, "A Resources JSON file (mixle resources --out)")
      ->required()
      ->check(CLI::ExistingFile);
  app.add_option("--num-chunks", a->num_chunks, "Exact number of row ranges (default: one per device)")
      ->check(at_least(1, "the row ranges, ≥ 1"));
  app.add_option("--safety-factor", a->safety_factor, "Multiplier on every byte estimate (default 1.25)")
      ->check(number_above(0, "a multiplier > 0"));
  app.add_option("--rows-per-chunk", a->rows_per_chunk,
                 "Rows of one N×K working-set block (default 65536; 0 = a whole shard)");
  app.add_option("--sub-chunks", a->sub_chunks, "Pieces each shard is streamed in (default 1)")
      ->check(at_least(1, "the pieces of a shard, ≥ 1"));
  app.add_option("--dtype", a->dtype, "Data element type: f32 (default) or f64")->check(CLI::IsMember({"f32", "f64"}));
  app.add_option("--precision", a->precision, "Compute precision of the working set (default float32)");
  app.add_flag("--shard-components", a->shard_components, "Also plan the component axis (ModelShards)");
  app.add_option("--min-components-per-shard", a->min_components_per_shard, "With --shard-components (default 1)")
      ->check(at_least(1, "the fewest components a shard holds, ≥ 1"));
  app.add_flag("--json", a->json, "Print JSON instead of a table");
  return [a] {
    if (!a->data.path.empty()) {
      if (a->rows) throw UsageError("give either --rows N or --data FILE, not both");
      // Only the header (npy), size (raw) or a line count (CSV) is read, never the values.
      const DataInfo info = probe_data(a->data.path, a->data.read_options());
      a->rows = info.rows;
      a->dtype = info.dtype == DType::f64 ? "f64" : "f32";
      if (a->model_file.empty() && a->dims == 1) a->dims = info.cols;
    }
    if (!a->rows) throw UsageError("--rows N or --data FILE is required (the number of data rows)");
    const plan::ModelSummary model = model_from_args(*a);
    const plan::Resources resources = plan::Resources::load(a->resources_file);
    plan::PlanOptions options;
    options.rows = *a->rows;
    options.model = model;
    options.data_dtype_bytes = a->dtype == "f64" ? 8 : 4;
    options.precision = a->precision;
    options.num_chunks = a->num_chunks;
    options.sub_chunks = a->sub_chunks;
    options.rows_per_chunk = a->rows_per_chunk;
    options.safety_factor = a->safety_factor;
    if (!a->shard_components) {
      const plan::Placement placement = plan::plan(resources, options);
      if (a->json)
        std::cout << Json{{"placement", Json::parse(placement.to_json())}}.dump(2) << "\n";
      else
        print_table(placement, nullptr);
      return 0;
    }
    // The component axis: what `mixle fit --resources FILE` does on one rank per device
    // (auto_parallel_estimator). A model that fits every device is planned as above, its
    // component split shown for reference; one that does not is cut as the run cuts it, and
    // the rows are placed over its data groups.
    EstimatorOptions estimator;
    estimator.precision = a->precision == "float64" ? Precision::fp64 : Precision::fp32;
    const engine::ParallelChoice run =
        engine::auto_parallel_estimator(estimator, model, resources, options.rows, a->min_components_per_shard);
    const plan::Placement placement = run.sharded() ? run.placement : plan::plan(resources, options);
    const std::vector<plan::ModelShard> shards =
        run.sharded()
            ? run.shards
            : plan::model_sharding_plan(model, resources, {.min_components_per_shard = a->min_components_per_shard});
    const std::string summary = engine::parallel_summary(static_cast<int>(resources.size()) / run.shard_components,
                                                         run.shard_components, run.reason);
    if (a->json) {
      Json out = {{"run", {{"kind", run.kind}, {"shard_components", run.shard_components}, {"summary", summary}}},
                  {"placement", Json::parse(placement.to_json())},
                  {"model_shards", Json::array()}};
      for (const plan::ModelShard& s : shards) out["model_shards"].push_back(Json::parse(s.to_json()));
      std::cout << out.dump(2) << "\n";
    } else {
      std::cout << "Run on one rank per device: " << summary << "\n";
      print_table(placement, &shards);
    }
    return 0;
  };
}

}  // namespace
MIXLE_REGISTER_COMMAND("plan", "Show how rows and components map onto devices", setup_plan, 45);
}  // namespace mixle::host
