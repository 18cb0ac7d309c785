// Dataset: a shared, read-only row-major matrix over owned or caller storage.
#include <sys/mman.h>
#include <unistd.h>

#include <cassert>
#include <cstdint>
#include <cmath>
#include <string>
#include <utility>

#include "mixle/data.hpp"
#include "mixle/error.hpp"

namespace mixle {

std::size_t dtype_size(DType dtype) noexcept { return dtype == DType::f32 ? 4 : 8; }

const char* dtype_name(DType dtype) noexcept { return dtype == DType::f32 ? "f32" : "f64"; }

namespace {

template <class T>
Dataset view_impl(const T* data, std::size_t rows, std::size_t cols, DType dtype) {
  if (data == nullptr && rows * cols != 0) {
    throw InvalidInput("Dataset::view: null data pointer for " + std::to_string(rows) + " x " + std::to_string(cols) +
                       " values");
  }
  // A view does not own its memory: the keepalive is empty and the caller keeps `data` alive.
  return Dataset::from_storage(nullptr, data, dtype, rows, cols, "<memory>", 0);
}

template <class T>
Dataset from_vector_impl(std::vector<T> values, std::size_t rows, std::size_t cols, DType dtype) {
  if (values.size() != rows * cols) {
    throw InvalidInput("Dataset::from_vector: " + std::to_string(values.size()) + " values given for a " +
                       std::to_string(rows) + " x " + std::to_string(cols) + " matrix (" + std::to_string(rows * cols) +
                       " expected)");
  }
  auto owned = std::make_shared<const std::vector<T>>(std::move(values));
  const void* data = owned->data();
  return Dataset::from_storage(std::move(owned), data, dtype, rows, cols, "<memory>", 0);
}

}  // namespace

Dataset Dataset::view(const float* data, std::size_t rows, std::size_t cols) {
  return view_impl(data, rows, cols, DType::f32);
}

Dataset Dataset::view(const double* data, std::size_t rows, std::size_t cols) {
  return view_impl(data, rows, cols, DType::f64);
}

Dataset Dataset::from_vector(std::vector<float> values, std::size_t rows, std::size_t cols) {
  return from_vector_impl(std::move(values), rows, cols, DType::f32);
}

Dataset Dataset::from_vector(std::vector<double> values, std::size_t rows, std::size_t cols) {
  return from_vector_impl(std::move(values), rows, cols, DType::f64);
}

Dataset Dataset::from_storage(std::shared_ptr<const void> keepalive, const void* data, DType dtype, std::size_t rows,
                              std::size_t cols, std::string source, std::size_t first_row, bool mapped) {
  Dataset d;
  d.mapped_ = mapped && data != nullptr;
  d.storage_ = std::move(keepalive);
  d.data_ = data;
  d.dtype_ = dtype;
  d.rows_ = rows;
  d.cols_ = cols;
  d.source_ = std::move(source);
  d.first_row_ = first_row;
  return d;
}

template <>
const float* Dataset::as<float>() const {
  if (dtype_ != DType::f32) {
    throw InvalidInput("dataset " + source_ + " holds " + dtype_name(dtype_) + " values, not f32");
  }
  return static_cast<const float*>(data_);
}

template <>
const double* Dataset::as<double>() const {
  if (dtype_ != DType::f64) {
    throw InvalidInput("dataset " + source_ + " holds " + dtype_name(dtype_) + " values, not f64");
  }
  return static_cast<const double*>(data_);
}

double Dataset::at(std::size_t r, std::size_t c) const noexcept {
  assert(r < rows_ && c < cols_);
  const std::size_t i = r * cols_ + c;
  if (dtype_ == DType::f32) return static_cast<const float*>(data_)[i];
  return static_cast<const double*>(data_)[i];
}

Dataset Dataset::slice(std::size_t begin, std::size_t end) const {
  if (begin > end || end > rows_) {
    throw InvalidInput("Dataset::slice: rows [" + std::to_string(begin) + ", " + std::to_string(end) +
                       ") are out of bounds for " + source_ + " with " + std::to_string(rows_) + " rows");
  }
  const auto* base = static_cast<const unsigned char*>(data_);
  const void* start = base == nullptr ? nullptr : base + begin * cols_ * dtype_size(dtype_);
  Dataset out = from_storage(storage_, start, dtype_, end - begin, cols_, source_, first_row_ + begin, mapped_);
  out.weights_ = weights_;
  out.weight_offset_ = weight_offset_ + begin;
  return out;
}

void Dataset::release(std::size_t begin, std::size_t end) const noexcept {
  if (!mapped_ || begin >= end || end > rows_) return;
  // Whole pages inside the rows only: a page shared with a neighbouring row stays (it is at most
  // two pages per call). MADV_DONTNEED on a read-only file mapping drops the process's page table
  // entries; the next access maps the page cache's page again.
  const auto page = static_cast<std::uintptr_t>(::sysconf(_SC_PAGESIZE));
  const auto first = reinterpret_cast<std::uintptr_t>(data_) + begin * cols_ * dtype_size(dtype_);
  const auto last = reinterpret_cast<std::uintptr_t>(data_) + end * cols_ * dtype_size(dtype_);
  const std::uintptr_t lo = (first + page - 1) / page * page, hi = last / page * page;
  if (lo < hi) ::madvise(reinterpret_cast<void*>(lo), hi - lo, MADV_DONTNEED);
}

namespace {

/// Refuses a weight count other than `rows` or a weight that is negative or not finite; a bad
/// weight is named by its row in the weights' own source (`first_row` is that source's row 0).
void check_weights(const std::vector<double>& weights, std::size_t rows, const std::string& data_source,
                   const std::string& weights_source, std::size_t first_row) {
  if (weights.size() != rows)
    throw InvalidInput("sample weights " + weights_source + ": " + std::to_string(weights.size()) +
                       " weights given for the " + std::to_string(rows) + " rows of " + data_source +
                       "; one weight per row is expected");
  for (std::size_t r = 0; r < weights.size(); ++r)
    if (!(weights[r] >= 0.0) || !std::isfinite(weights[r]))
      throw InvalidInput("sample weights " + weights_source + ": row " + std::to_string(first_row + r) +
                         " (counted from 0, as data rows are) has weight " + std::to_string(weights[r]) +
                         "; weights must be finite and ≥ 0 (0 leaves the row out)");
}

}  // namespace

std::vector<double> Dataset::values() const {
  std::vector<double> v(rows_ * cols_);
  for (std::size_t r = 0; r < rows_; ++r)
    for (std::size_t c = 0; c < cols_; ++c) v[r * cols_ + c] = at(r, c);
  return v;
}

Dataset Dataset::with_weights(std::vector<double> weights, const std::string& weights_source) const {
  check_weights(weights, rows_, source_, weights_source, first_row_);
  Dataset out = *this;
  out.weights_ = std::make_shared<const std::vector<double>>(std::move(weights));
  out.weight_offset_ = 0;
  return out;
}

Dataset Dataset::with_weights(const Dataset& weights) const {
  if (weights.cols() != 1)
    throw InvalidInput("sample weights " + weights.source() + ": " + std::to_string(weights.cols()) +
                       " columns; a weights file holds one value per row (a 1-D array or one column)");
  std::vector<double> w = weights.values();
  check_weights(w, rows_, source_, weights.source(), weights.first_row());  // rows named in the weights file
  Dataset out = *this;
  out.weights_ = std::make_shared<const std::vector<double>>(std::move(w));
  out.weight_offset_ = 0;
  return out;
}

}  // namespace mixle
