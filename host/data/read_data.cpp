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

DataFormat format_from_extension(const std::string& path) {
  std::string ext = std::filesystem::path(path).extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
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

Dataset read_data(const std::string& path, const ReadOptions& options) {
  switch (host::resolve_format(path, options)) {
    case DataFormat::npy: return host::read_npy(path, options);
    case DataFormat::csv: return host::read_csv(path, options);
    case DataFormat::raw: return host::read_raw(path, options);
    case DataFormat::automatic: break;
  }
  throw InvalidInput(path + ": unknown data format");
}

}  // namespace mixle
