// Options every data-reading subcommand shares (--data, --format, --shape/--cols, --raw-dtype).
#pragma once

#include <CLI/CLI.hpp>

#include <mixle/data.hpp>

#include <string>

namespace mixle::host {

struct DataArgs {
  std::string path;
  std::string format = "auto";    // auto | npy | csv | raw
  std::string shape;              // raw: "N,C" (or ",C")
  std::size_t cols = 0;           // raw: columns per row
  std::string raw_dtype = "f32";  // raw: f32 | f64
  std::string weights;            // per-row sample weights file (fit: --weights)
  std::string csv_cache;          // fit, score: --csv-cache FILE.npy

  /// Adds --data (required when `required`), --format, --shape, --cols, --raw-dtype.
  void add_to(CLI::App& app, bool required = true);
  /// The ReadOptions these arguments describe; throws UsageError on malformed values.
  ReadOptions read_options() const;
  Dataset read() const { return read_data(path, read_options()); }
  /// Adds --csv-cache (fit and score).
  void add_cache_to(CLI::App& app);
  /// With --csv-cache: converts the CSV to that .npy unless an up-to-date one is there
  /// (host/data/csv_cache.hpp), says which on stderr unless `quiet`, and reads the .npy from
  /// then on (path and format change). Throws UsageError when the data are not a CSV.
  void use_csv_cache(bool quiet);
};

/// The format a writer uses for `path`, by its extension in any case: npy for .npy, csv for
/// .csv, .tsv (tab-separated) and .txt. Throws UsageError naming the accepted ones otherwise.
DataFormat output_format(const std::string& path);

}  // namespace mixle::host
