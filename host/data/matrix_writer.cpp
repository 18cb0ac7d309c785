// write_matrix: row-major matrices to .npy (v1) or CSV, through write_file_atomic.
#include <bit>
#include <charconv>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "host/data/matrix_stream.hpp"
#include "host/data/npy_header.hpp"
#include "host/data/readers.hpp"
#include "mixle/data.hpp"
#include "mixle/error.hpp"

namespace mixle {

namespace {

template <class T>
constexpr const char* npy_descr() {
  if constexpr (std::is_same_v<T, float>)
    return "<f4";
  else if constexpr (std::is_same_v<T, double>)
    return "<f8";
  else
    return "<i8";
}

/// Shortest text that parses back to the same value (std::to_chars without a precision).
template <class T>
void append_number(std::string& out, T value) {
  char buf[64];
  const auto result = std::to_chars(buf, buf + sizeof buf, value);
  out.append(buf, result.ptr);
}

/// The CSV header line ("" without names).
std::string csv_header(const std::vector<std::string>& header, char sep) {
  std::string out;
  for (std::size_t c = 0; c < header.size(); ++c) {
    if (c) out.push_back(sep);
    out += header[c];
  }
  if (!header.empty()) out.push_back('\n');
  return out;
}

/// `rows` CSV lines of `cols` values each.
template <class T>
std::string csv_rows(const T* values, std::size_t rows, std::size_t cols, char sep) {
  std::string out;
  out.reserve(rows * cols * 12 + 64);
  for (std::size_t r = 0; r < rows; ++r) {
    for (std::size_t c = 0; c < cols; ++c) {
      if (c) out.push_back(sep);
      append_number(out, values[r * cols + c]);
    }
    out.push_back('\n');
  }
  return out;
}

template <class T>
std::string csv_text(const T* values, std::size_t rows, std::size_t cols, char sep,
                     const std::vector<std::string>& header) {
  return csv_header(header, sep) + csv_rows(values, rows, cols, sep);
}

template <class T>
void write_matrix_impl(const std::string& path, const T* values, std::size_t rows, std::size_t cols, DataFormat format,
                       const std::vector<std::string>& header) {
  static_assert(std::endian::native == std::endian::little, ".npy and raw output assume a little-endian host");
  if (format == DataFormat::automatic) format = host::format_from_extension(path);
  if (values == nullptr && rows * cols != 0) {
    throw InvalidInput("write_matrix " + path + ": null values for " + std::to_string(rows) + " x " +
                       std::to_string(cols));
  }
  if (!header.empty() && header.size() != cols) {
    throw InvalidInput("write_matrix " + path + ": " + std::to_string(header.size()) + " column names for " +
                       std::to_string(cols) + " columns");
  }
  const std::size_t bytes = rows * cols * sizeof(T);
  switch (format) {
    case DataFormat::npy: {
      // npy has no column names; `header` is for CSV only.
      std::string out = host::make_npy_header(npy_descr<T>(), rows, cols);
      const std::size_t at = out.size();
      out.resize(at + bytes);
      if (bytes) std::memcpy(out.data() + at, values, bytes);
      write_file_atomic(path, out);
      return;
    }
    case DataFormat::raw: {
      std::string out(bytes, '\0');
      if (bytes) std::memcpy(out.data(), values, bytes);
      write_file_atomic(path, out);
      return;
    }
    case DataFormat::csv: {
      write_file_atomic(path, csv_text(values, rows, cols, host::is_tsv(path) ? '\t' : ',', header));
      return;
    }
    case DataFormat::automatic: break;
  }
  throw InvalidInput("write_matrix " + path +
                     ": cannot tell the output format from the file "
                     "name; use .npy, .csv/.tsv/.txt or .bin/.raw, or name the format");
}

}  // namespace

void write_matrix(const std::string& path, const float* values, std::size_t rows, std::size_t cols, DataFormat format,
                  const std::vector<std::string>& header) {
  write_matrix_impl(path, values, rows, cols, format, header);
}

void write_matrix(const std::string& path, const double* values, std::size_t rows, std::size_t cols, DataFormat format,
                  const std::vector<std::string>& header) {
  write_matrix_impl(path, values, rows, cols, format, header);
}

void write_matrix(const std::string& path, const std::int64_t* values, std::size_t rows, std::size_t cols,
                  DataFormat format, const std::vector<std::string>& header) {
  write_matrix_impl(path, values, rows, cols, format, header);
}

}  // namespace mixle

namespace mixle::host {

template <class T>
MatrixStream<T>::MatrixStream(const std::string& path, std::size_t rows, std::size_t cols, DataFormat format,
                              const std::vector<std::string>& header)
    : file_(path), path_(path), rows_(rows), cols_(cols), format_(format) {
  if (format_ == DataFormat::automatic) format_ = format_from_extension(path);
  if (!header.empty() && header.size() != cols)
    throw InvalidInput("write " + path + ": " + std::to_string(header.size()) + " column names for " +
                       std::to_string(cols) + " columns");
  switch (format_) {
    case DataFormat::npy: file_.write(make_npy_header(npy_descr<T>(), rows, cols)); break;
    case DataFormat::csv:
      separator_ = host::is_tsv(path) ? '\t' : ',';
      file_.write(csv_header(header, separator_));
      break;
    default: throw InvalidInput("write " + path + ": a .npy or .csv/.tsv/.txt file name is expected");
  }
}

template <class T>
void MatrixStream<T>::append(const T* values, std::size_t count) {
  if (count > rows_ - written_)
    throw InvalidInput("write " + path_ + ": " + std::to_string(written_ + count) + " rows for a matrix of " +
                       std::to_string(rows_));
  if (format_ == DataFormat::npy)
    file_.write(reinterpret_cast<const char*>(values), count * cols_ * sizeof(T));
  else
    file_.write(csv_rows(values, count, cols_, separator_));
  written_ += count;
}

template <class T>
void MatrixStream<T>::commit() {
  if (written_ != rows_)
    throw InvalidInput("write " + path_ + ": " + std::to_string(written_) + " of " + std::to_string(rows_) +
                       " rows written");
  file_.commit();
}

template class MatrixStream<double>;
template class MatrixStream<std::int64_t>;

}  // namespace mixle::host
