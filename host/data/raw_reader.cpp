// Raw little-endian f32/f64 files: no header, so the caller supplies the column count.
#include "host/data/mapped_file.hpp"
#include "host/data/readers.hpp"
#include "mixle/error.hpp"

namespace mixle::host {

namespace {

struct RawLayout {
  std::size_t rows = 0;
  std::size_t cols = 0;
};

RawLayout check_raw(const ReadOnlyFile& file, const ReadOptions& options) {
  const std::string& path = file.path();
  if (!options.raw_cols) {
    throw InvalidInput(path +
                       ": a raw file has no header, so its shape is unknown: pass "
                       "--shape N,C or --cols C (ReadOptions::raw_cols)");
  }
  const std::size_t cols = *options.raw_cols;
  if (cols == 0) throw InvalidInput(path + ": raw column count must be at least 1, not 0");
  const std::size_t item = dtype_size(options.raw_dtype);
  const std::size_t row_bytes = cols * item;
  if (file.size() % row_bytes != 0) {
    throw InvalidInput(path + ": raw file size " + std::to_string(file.size()) +
                       " bytes is not a multiple of the row size " + std::to_string(cols) + " cols x " +
                       std::to_string(item) + " bytes (" + dtype_name(options.raw_dtype) +
                       ") = " + std::to_string(row_bytes) + "; check --cols and the element type");
  }
  const std::size_t rows = file.size() / row_bytes;
  if (options.raw_rows && *options.raw_rows != rows) {
    throw InvalidInput(path + ": raw file size " + std::to_string(file.size()) + " bytes does not match the shape " +
                       std::to_string(*options.raw_rows) + " x " + std::to_string(cols) + " " +
                       dtype_name(options.raw_dtype) + " (" + std::to_string(*options.raw_rows * row_bytes) +
                       " bytes expected)");
  }
  return {rows, cols};
}

}  // namespace

DataInfo probe_raw(const std::string& path, const ReadOptions& options) {
  ReadOnlyFile file(path);
  const RawLayout layout = check_raw(file, options);
  return DataInfo{path, DataFormat::raw, options.raw_dtype, layout.rows, layout.cols};
}

Dataset read_raw(const std::string& path, const ReadOptions& options) {
  ReadOnlyFile file(path);
  const RawLayout layout = check_raw(file, options);
  const RowRange range = resolve_row_range(path, options, layout.rows);
  const std::size_t row_bytes = layout.cols * dtype_size(options.raw_dtype);
  // Offsets are multiples of the element size, so the mapped values are aligned.
  auto mapping = file.map(range.begin * row_bytes, (range.end - range.begin) * row_bytes);
  const void* data = mapping.get();
  return Dataset::from_storage(std::move(mapping), data, options.raw_dtype, range.end - range.begin, layout.cols, path,
                               range.begin, /*mapped=*/true);
}

}  // namespace mixle::host
