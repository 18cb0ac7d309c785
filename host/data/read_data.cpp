// read_data / probe_data: pick the reader by format (or extension) and resolve row ranges.
#include <algorithm>
#include <cctype>
#include <cstring>
#include <filesystem>

#include "host/data/mapped_file.hpp"
#include "host/data/npy_header.hpp"
#include "host/data/readers.hpp"
#include "mixle/error.hpp"

namespace mixle::host {

std::string lower_extension(const std::string& path) {
  const std::string name = std::filesystem::path(path).filename().string();
  const auto dot = name.rfind('.');
  std::string ext = dot == std::string::npos ? std::string() : name.substr(dot);
  std::transform(ext.begin(), ext.end(), ext.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return ext;
}

bool is_tsv(const std::string& path) { return lower_extension(path) == ".tsv"; }

DataFormat format_from_extension(const std::string& path) {
  const std::string ext = lower_extension(path);
  // .npz goes to the npy reader, which explains that archives must be unpacked.
  if (ext == ".npy" || ext == ".npz") return DataFormat::npy;
  if (ext == ".csv" || ext == ".tsv" || ext == ".txt") return DataFormat::csv;
  if (ext == ".bin" || ext == ".raw" || ext == ".f32" || ext == ".f64") return DataFormat::raw;
  return DataFormat::automatic;
}

RowRange resolve_row_range(const std::string& path, const ReadOptions& options, std::size_t rows) {
  if (rows == 0) throw InvalidInput(path + ": no data rows");
  const std::size_t end = options.row_end.value_or(rows);
  if (options.row_begin >= end || end > rows) {
    throw InvalidInput(path + ": row range [" + std::to_string(options.row_begin) + ", " + std::to_string(end) +
                       ") is " + (end > rows ? "out of bounds" : "empty") + ": the file has " + std::to_string(rows) +
                       " data rows (ranges are [begin, end), 0-based)");
  }
  return {options.row_begin, end};
}

namespace {

/// The format to use: the explicit one, else by extension, else sniffed from the magic bytes.
DataFormat resolve_format(const std::string& path, const ReadOptions& options) {
  if (options.format != DataFormat::automatic) return options.format;
  const DataFormat by_extension = format_from_extension(path);
  if (by_extension != DataFormat::automatic) return by_extension;
  ReadOnlyFile file(path);
  char magic[kNpyMagicSize] = {};
  if (file.read_at(0, magic, kNpyMagicSize) == kNpyMagicSize && std::memcmp(magic, kNpyMagic, kNpyMagicSize) == 0) {
    return DataFormat::npy;
  }
  throw InvalidInput(path +
                     ": cannot tell the data format from the file name; use .npy, "
                     ".csv/.tsv/.txt or .bin/.raw/.f32/.f64, or name the format explicitly");
}

}  // namespace

}  // namespace mixle::host

namespace mixle {

DataInfo probe_data(const std::string& path, const ReadOptions& options) {
  switch (host::resolve_format(path, options)) {
    case DataFormat::npy: return host::probe_npy(path);
    case DataFormat::csv: return host::probe_csv(path, options);
    case DataFormat::raw: return host::probe_raw(path, options);
    case DataFormat::automatic: break;
  }
  throw InvalidInput(path + ": unknown data format");
}

namespace {

Dataset read_values(const std::string& path, const ReadOptions& options) {
  switch (host::resolve_format(path, options)) {
    case DataFormat::npy: return host::read_npy(path, options);
    case DataFormat::csv: return host::read_csv(path, options);
    case DataFormat::raw: return host::read_raw(path, options);
    case DataFormat::automatic: break;
  }
  throw InvalidInput(path + ": unknown data format");
}

/// How to read a weights file beside data read with `data`: its own format (by extension, or
/// raw float64 — .f32 float32 — when the data are raw), one column, the data's row range.
ReadOptions weights_options(const std::string& weights_path, const ReadOptions& data) {
  ReadOptions w;
  const DataFormat by_extension = host::format_from_extension(weights_path);
  w.format =
      by_extension == DataFormat::automatic && data.format == DataFormat::raw ? DataFormat::raw : DataFormat::automatic;
  w.raw_cols = 1;
  w.raw_dtype = weights_path.ends_with(".f32") ? DType::f32 : DType::f64;
  w.row_begin = data.row_begin;
  w.row_end = data.row_end;
  return w;
}

}  // namespace

Dataset read_data(const std::string& path, const ReadOptions& options) {
  Dataset rows = read_values(path, options);
  if (options.weights_path.empty()) return rows;
  const ReadOptions w = weights_options(options.weights_path, options);
  // A whole-file read knows the file's row count; only a row range asks the file again (a CSV
  // probe is a scan).
  const bool whole_file = options.row_begin == 0 && !options.row_end;
  const std::size_t data_rows = whole_file ? rows.rows() : probe_data(path, options).rows;
  const DataInfo weights_info = probe_data(options.weights_path, w);
  if (weights_info.rows != data_rows || weights_info.cols != 1)
    throw InvalidInput("sample weights " + options.weights_path + ": " + std::to_string(weights_info.rows) + " × " +
                       std::to_string(weights_info.cols) + " values for the " + std::to_string(data_rows) +
                       " rows of " + path + "; one weight per data row is expected (a 1-D array or one column)");
  return rows.with_weights(read_values(options.weights_path, w));
}

}  // namespace mixle
