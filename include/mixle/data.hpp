// Datasets: dense row-major N×C matrices of float32 or float64 in host memory, read from .npy,
// CSV or raw little-endian files (memory-mapped where possible), or viewed in caller memory.
// Discrete columns (categorical codes, counts, 0/1) are stored as exact integers in the matrix.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace mixle {

enum class DType { f32, f64 };

/// Bytes per element of `dtype` (4 or 8).
std::size_t dtype_size(DType dtype) noexcept;
/// "f32" / "f64".
const char* dtype_name(DType dtype) noexcept;

/// A read-only row-major matrix in host memory. Copies are cheap: they share the storage.
/// A Dataset either owns its storage (a memory-mapped file or a buffer) or views caller memory
/// (Dataset::view; zero copy — the caller keeps that memory alive and unchanged while in use).
class Dataset {
 public:
  Dataset() = default;

  /// Zero-copy views of caller-owned host memory holding rows × cols values, row-major.
  static Dataset view(const float* data, std::size_t rows, std::size_t cols);
  static Dataset view(const double* data, std::size_t rows, std::size_t cols);
  /// Datasets that own a copy of `values` (rows × cols, row-major); throws InvalidInput when
  /// values.size() != rows * cols.
  static Dataset from_vector(std::vector<float> values, std::size_t rows, std::size_t cols);
  static Dataset from_vector(std::vector<double> values, std::size_t rows, std::size_t cols);

  std::size_t rows() const noexcept { return rows_; }
  std::size_t cols() const noexcept { return cols_; }
  DType dtype() const noexcept { return dtype_; }
  bool empty() const noexcept { return rows_ == 0; }
  /// Address of row 0 (host memory), rows() * cols() elements of dtype().
  const void* data() const noexcept { return data_; }
  /// Typed access; throws InvalidInput when T does not match dtype().
  template <class T>
  const T* as() const;
  /// Element (r, c) converted to double; no bounds check beyond an assert.
  double at(std::size_t r, std::size_t c) const noexcept;

  /// Rows [begin, end) sharing this storage (and their weights); throws InvalidInput when the
  /// range is out of bounds.
  Dataset slice(std::size_t begin, std::size_t end) const;

  /// Whether the rows are a read-only memory map of a file (float .npy and raw files): their pages
  /// are the page cache's, and release() can let them go.
  bool mapped() const noexcept { return mapped_; }
  /// Lets the pages holding rows [begin, end) leave this process's resident memory when the rows
  /// are mapped from a file: they stay in the page cache and are read again, unchanged, on the
  /// next access. Does nothing for memory the dataset owns or views, or for a range out of bounds.
  /// A fit that streams its rows under a memory budget calls it after each chunk.
  void release(std::size_t begin, std::size_t end) const noexcept;

  /// Every value as float64, row-major (rows() × cols()).
  std::vector<double> values() const;

  /// Per-row sample weights: rows() float64 values, or null when the rows are unweighted (every
  /// weight 1). A fit folds each row's responsibilities and log-likelihood times its weight, so
  /// an integer weight w gives the model of that row repeated w times.
  const double* weights() const noexcept { return weights_ ? weights_->data() + weight_offset_ : nullptr; }
  bool weighted() const noexcept { return weights_ != nullptr; }
  /// This dataset with `weights` attached (rows() values, each finite and ≥ 0). Throws
  /// InvalidInput naming the first bad weight's row (counted from 0, as data rows are; `weights_source`
  /// names where they came from) or the count given and expected. Rows all of weight 0 are
  /// allowed here — a rank's share may be — and refused by the fit that gets no weight at all.
  Dataset with_weights(std::vector<double> weights, const std::string& weights_source = "<memory>") const;
  /// The same, from a rows() × 1 dataset (e.g. read_data of a weights file); its source names it.
  Dataset with_weights(const Dataset& weights) const;

  /// Where the rows came from ("<memory>" for views) and the index of row 0 within that source,
  /// so that error messages can name the original file and row.
  const std::string& source() const noexcept { return source_; }
  std::size_t first_row() const noexcept { return first_row_; }

  /// Internal: assembles a dataset over storage kept alive by `keepalive`; `mapped`: that storage
  /// is a read-only file mapping (see release()).
  static Dataset from_storage(std::shared_ptr<const void> keepalive, const void* data, DType dtype, std::size_t rows,
                              std::size_t cols, std::string source, std::size_t first_row, bool mapped = false);

 private:
  std::shared_ptr<const void> storage_;
  const void* data_ = nullptr;
  DType dtype_ = DType::f32;
  std::size_t rows_ = 0;
  std::size_t cols_ = 0;
  std::string source_ = "<memory>";
  std::size_t first_row_ = 0;
  bool mapped_ = false;
  std::shared_ptr<const std::vector<double>> weights_;
  std::size_t weight_offset_ = 0;  // weights_ index of row 0 (a slice's first row)
};

// Dataset::as is defined for float (f32) and double (f64) only.
template <>
const float* Dataset::as<float>() const;
template <>
const double* Dataset::as<double>() const;

enum class DataFormat { automatic, npy, csv, raw };

/// How to read a data file.
struct ReadOptions {
  /// automatic: by extension — .npy → npy; .csv, .tsv, .txt → csv; .bin, .raw, .f32, .f64 → raw.
  DataFormat format = DataFormat::automatic;
  /// raw only (required there): columns per row; rows follow from the file size, and when
  /// `raw_rows` is set the file size must match rows × cols exactly.
  std::optional<std::size_t> raw_cols;
  std::optional<std::size_t> raw_rows;
  /// raw only: element type of the file (little-endian).
  DType raw_dtype = DType::f32;
  /// Row range to read, [row_begin, row_end); row_end defaults to the number of rows. Only this
  /// range is read (npy/raw: mapped; CSV: other lines are skipped without parsing).
  std::size_t row_begin = 0;
  std::optional<std::size_t> row_end;
  /// CSV: element type to store (CSV has none of its own).
  DType csv_dtype = DType::f64;
  /// Optional file of per-row sample weights: one value per data row (a 1-D or N × 1 .npy, a
  /// one-column CSV, or raw float64 when the data are raw), read for the same row range and
  /// attached to the dataset (Dataset::weights). Its rows must number the data file's.
  std::string weights_path;
};

/// What a data file holds, read from its header (npy), size (raw) or a line scan (CSV).
struct DataInfo {
  std::string path;
  DataFormat format = DataFormat::automatic;
  DType dtype = DType::f32;
  std::size_t rows = 0;
  std::size_t cols = 0;
};

/// Reads the shape and type of a data file without reading its values.
/// Throws InvalidInput naming the file and the problem (truncated, big-endian, Fortran order,
/// unsupported dtype, ragged CSV, size not a multiple of the row size, …).
DataInfo probe_data(const std::string& path, const ReadOptions& options = {});

/// Reads rows [options.row_begin, options.row_end) of a data file. npy and raw files are
/// memory-mapped; CSV is parsed (errors name the row and column, 1-based as in the file).
Dataset read_data(const std::string& path, const ReadOptions& options = {});

/// Writes a row-major rows × cols matrix atomically (temporary file, then rename): .npy (v1,
/// '<f4' / '<f8' / '<i8') or CSV, chosen by `format` (automatic: by extension).
void write_matrix(const std::string& path, const float* values, std::size_t rows, std::size_t cols,
                  DataFormat format = DataFormat::automatic, const std::vector<std::string>& header = {});
void write_matrix(const std::string& path, const double* values, std::size_t rows, std::size_t cols,
                  DataFormat format = DataFormat::automatic, const std::vector<std::string>& header = {});
void write_matrix(const std::string& path, const std::int64_t* values, std::size_t rows, std::size_t cols,
                  DataFormat format = DataFormat::automatic, const std::vector<std::string>& header = {});

/// Writes `contents` to `path` atomically: a temporary file in the same folder, then rename.
/// Nothing is left at `path` when writing fails. Throws Error naming the path.
void write_file_atomic(const std::string& path, const std::string& contents);

}  // namespace mixle
