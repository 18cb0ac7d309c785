// Internal interface between read_data/probe_data (read_data.cpp) and the per-format readers.
#pragma once

#include <cstddef>
#include <string>

#include "mixle/data.hpp"

namespace mixle::host {

/// Rows [begin, end) of a file, in data rows (CSV: header and comment lines not counted).
struct RowRange {
  std::size_t begin = 0;
  std::size_t end = 0;
};

/// Checks options.row_begin / row_end against a file of `rows` data rows and fills the default
/// end. Throws InvalidInput naming `path` when the file has no rows or the range is out of
/// bounds or empty.
RowRange resolve_row_range(const std::string& path, const ReadOptions& options, std::size_t rows);

/// `path`'s extension in lower case, dot included ("" when it has none): ".npy", ".tsv", … A
/// file name that is only an extension (".tsv") counts as one.
std::string lower_extension(const std::string& path);

/// Whether `path` names tab-separated text (.tsv, in any case): the reader and the writers choose
/// the delimiter by this one rule.
bool is_tsv(const std::string& path);

/// The format `automatic` resolves to for `path` by its extension, whatever its case;
/// automatic when unknown.
DataFormat format_from_extension(const std::string& path);

DataInfo probe_npy(const std::string& path);
Dataset read_npy(const std::string& path, const ReadOptions& options);
DataInfo probe_csv(const std::string& path, const ReadOptions& options);
Dataset read_csv(const std::string& path, const ReadOptions& options);
DataInfo probe_raw(const std::string& path, const ReadOptions& options);
Dataset read_raw(const std::string& path, const ReadOptions& options);

}  // namespace mixle::host
