#include "host/cli/data_args.hpp"

#include "host/data/csv_cache.hpp"
#include "host/data/readers.hpp"

#include <mixle/error.hpp>

#include <charconv>
#include <cstdio>

namespace mixle::host {

void DataArgs::add_to(CLI::App& app, bool required) {
  auto* opt = app.add_option("--data", path, "Data file: .npy, .csv/.tsv/.txt, or raw .bin/.raw/.f32/.f64");
  if (required) opt->required();
  app.add_option("--format", format, "Data format: auto (by extension), npy, csv, raw")
      ->check(CLI::IsMember({"auto", "npy", "csv", "raw"}));
  app.add_option("--shape", shape, "Raw data shape N,C (N may be omitted: ,C)");
  app.add_option("--cols", cols, "Raw data: columns per row");
  app.add_option("--raw-dtype", raw_dtype, "Raw data element type")->check(CLI::IsMember({"f32", "f64"}));
}

void DataArgs::add_cache_to(CLI::App& app) {
  app.add_option("--csv-cache", csv_cache,
                 "CSV data: convert them once to this .npy (atomically; reused while the CSV is unchanged) and read "
                 "that instead — no parsing, and rows beyond --memory-budget can stream");
}

void DataArgs::use_csv_cache(bool quiet) {
  if (csv_cache.empty()) return;
  const ReadOptions options = read_options();
  const DataFormat given = options.format == DataFormat::automatic ? format_from_extension(path) : options.format;
  if (given != DataFormat::csv)
    throw UsageError("--csv-cache converts CSV data; --data " + path +
                     " is not a CSV (.csv, .tsv, .txt or --format csv)");
  const CsvCache cache = ensure_csv_cache(path, csv_cache, options);
  if (!quiet && cache.converted)
    std::fprintf(stderr, "mixle: converted %s to %s (%zu rows × %zu columns)\n", path.c_str(), cache.path.c_str(),
                 cache.rows, cache.cols);
  else if (!quiet)
    std::fprintf(stderr, "mixle: reading %s, converted earlier from %s (unchanged since)\n", cache.path.c_str(),
                 path.c_str());
  path = cache.path;
  format = "npy";
}

namespace {
std::size_t parse_count(const std::string& text, const char* what) {
  std::size_t v = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || ptr != text.data() + text.size())
    throw UsageError(std::string("--shape: ") + what + " \"" + text +
                     "\" is not a non-negative integer (expected N,C)");
  return v;
}
}  // namespace

ReadOptions DataArgs::read_options() const {
  ReadOptions o;
  if (format == "npy")
    o.format = DataFormat::npy;
  else if (format == "csv")
    o.format = DataFormat::csv;
  else if (format == "raw")
    o.format = DataFormat::raw;
  o.raw_dtype = raw_dtype == "f64" ? DType::f64 : DType::f32;
  if (!shape.empty()) {
    const auto comma = shape.find(',');
    if (comma == std::string::npos) throw UsageError("--shape \"" + shape + "\": expected N,C");
    const std::string n = shape.substr(0, comma), c = shape.substr(comma + 1);
    if (!n.empty()) o.raw_rows = parse_count(n, "rows");
    o.raw_cols = parse_count(c, "columns");
  }
  if (cols) o.raw_cols = cols;
  o.weights_path = weights;
  return o;
}

DataFormat output_format(const std::string& path) {
  // The readers' extensions, whatever their case; not a .npz (an archive of .npy files) nor raw.
  const DataFormat format = format_from_extension(path);
  if (format == DataFormat::csv || (format == DataFormat::npy && lower_extension(path) == ".npy")) return format;
  throw UsageError("output \"" + path + "\": use a .npy file name, or .csv, .tsv or .txt for text");
}

}  // namespace mixle::host
