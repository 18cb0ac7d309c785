// .npy reader: validates the header, then memory-maps exactly the requested rows.
#include <cstdint>
#include <cstring>
#include <vector>

#include "host/data/mapped_file.hpp"
#include "host/data/npy_header.hpp"
#include "host/data/readers.hpp"
#include "mixle/error.hpp"

namespace mixle::host {

namespace {

/// Largest integer magnitude a double holds exactly (2^53): integer arrays beyond it are refused.
constexpr std::int64_t kMaxExactInteger = std::int64_t{1} << 53;

/// How the elements of an accepted descr are stored.
enum class NpyElement { f4, f8, i4, i8 };

struct NpyLayout {
  NpyElement element = NpyElement::f4;
  std::size_t item_size = 4;
  DType dtype = DType::f32;  // what read_npy returns (integers become f64)
  std::size_t rows = 0;
  std::size_t cols = 0;
  std::size_t data_offset = 0;
};

NpyLayout check_header(const ReadOnlyFile& file, const NpyHeader& h) {
  const std::string& path = file.path();
  std::string type = h.descr;
  char order = '\0';
  if (!type.empty() && (type[0] == '<' || type[0] == '>' || type[0] == '|' || type[0] == '=')) {
    order = type[0];
    type.erase(0, 1);
  }
  const std::string accepted = "accepted: '<f4' (float32), '<f8' (float64), and '<i4'/'<i8' integers, read as float64";
  if (order == '>' && type != "u1" && type != "i1") {
    throw InvalidInput(path + ": big-endian dtype '" + h.descr + "' is not supported (" + accepted +
                       "); convert with a.astype(a.dtype.newbyteorder('<'))");
  }
  NpyLayout out;
  if (type == "f4") {
    out = {NpyElement::f4, 4, DType::f32};
  } else if (type == "f8") {
    out = {NpyElement::f8, 8, DType::f64};
  } else if (type == "i4") {
    out = {NpyElement::i4, 4, DType::f64};
  } else if (type == "i8") {
    out = {NpyElement::i8, 8, DType::f64};
  } else {
    throw InvalidInput(path + ": unsupported dtype '" + h.descr + "' (" + accepted +
                       "); convert with a.astype(np.float32)");
  }
  if (h.fortran_order) {
    throw InvalidInput(path +
                       ": fortran_order True: save with np.ascontiguousarray (mixle reads "
                       "C-order (row-major) arrays only)");
  }
  if (h.shape.size() == 1) {
    out.rows = h.shape[0];
    out.cols = 1;  // a 1-D array of N values is an N × 1 matrix
  } else if (h.shape.size() == 2) {
    out.rows = h.shape[0];
    out.cols = h.shape[1];
  } else {
    std::string shape = "(";
    for (std::size_t i = 0; i < h.shape.size(); ++i) {
      shape += (i ? ", " : "") + std::to_string(h.shape[i]);
    }
    throw InvalidInput(path + ": array has shape " + shape + ") with " + std::to_string(h.shape.size()) +
                       " dimensions; mixle reads 2-D (N, C) arrays, or 1-D (N,) as N x 1");
  }
  if (out.cols == 0) throw InvalidInput(path + ": array has no columns (shape (N, 0))");
  out.data_offset = h.data_offset;
  std::size_t expected = 0;
  if (__builtin_mul_overflow(out.rows, out.cols, &expected) ||
      __builtin_mul_overflow(expected, out.item_size, &expected)) {
    throw InvalidInput(path + ": shape in the header is too large");
  }
  const std::size_t available = file.size() - h.data_offset;
  if (available < expected) {
    throw InvalidInput(path + ": truncated .npy file: the header says " + std::to_string(out.rows) + " x " +
                       std::to_string(out.cols) + " '" + h.descr + "' = " + std::to_string(expected) +
                       " bytes of data, but only " + std::to_string(available) + " follow it");
  }
  return out;
}

template <class Int>
std::shared_ptr<const std::vector<double>> read_integers(const ReadOnlyFile& file, std::size_t offset,
                                                         std::size_t count, std::size_t cols, std::size_t first_row) {
  std::vector<Int> raw(count);
  file.read_at(offset, raw.data(), count * sizeof(Int));
  auto values = std::make_shared<std::vector<double>>(count);
  for (std::size_t i = 0; i < count; ++i) {
    const auto v = static_cast<std::int64_t>(raw[i]);
    if (v > kMaxExactInteger || v < -kMaxExactInteger) {
      throw InvalidInput(file.path() + ": row " + std::to_string(first_row + i / cols) + " column " +
                         std::to_string(i % cols) + ": integer " + std::to_string(v) +
                         " has no exact float64 value (|v| > 2^53)");
    }
    (*values)[i] = static_cast<double>(v);
  }
  return values;
}

}  // namespace

DataInfo probe_npy(const std::string& path) {
  ReadOnlyFile file(path);
  const NpyLayout layout = check_header(file, read_npy_header(file));
  return DataInfo{path, DataFormat::npy, layout.dtype, layout.rows, layout.cols};
}

Dataset read_npy(const std::string& path, const ReadOptions& options) {
  ReadOnlyFile file(path);
  const NpyLayout layout = check_header(file, read_npy_header(file));
  const RowRange range = resolve_row_range(path, options, layout.rows);
  const std::size_t row_bytes = layout.cols * layout.item_size;
  const std::size_t offset = layout.data_offset + range.begin * row_bytes;
  const std::size_t rows = range.end - range.begin;
  const std::size_t count = rows * layout.cols;
  if (layout.element == NpyElement::i4 || layout.element == NpyElement::i8) {
    auto values = layout.element == NpyElement::i4
                      ? read_integers<std::int32_t>(file, offset, count, layout.cols, range.begin)
                      : read_integers<std::int64_t>(file, offset, count, layout.cols, range.begin);
    const void* data = values->data();
    return Dataset::from_storage(std::move(values), data, DType::f64, rows, layout.cols, path, range.begin);
  }
  if (offset % layout.item_size != 0) {
    // Writers other than numpy may leave the data misaligned; a mapping would then hand out
    // misaligned floats, so copy just these rows instead.
    std::shared_ptr<const void> values;
    void* data = nullptr;
    if (layout.element == NpyElement::f8) {
      auto v = std::make_shared<std::vector<double>>(count);
      data = v->data(), values = std::move(v);
    } else {
      auto v = std::make_shared<std::vector<float>>(count);
      data = v->data(), values = std::move(v);
    }
    file.read_at(offset, data, count * layout.item_size);
    return Dataset::from_storage(std::move(values), data, layout.dtype, rows, layout.cols, path, range.begin);
  }
  auto mapping = file.map(offset, count * layout.item_size);
  const void* data = mapping.get();
  return Dataset::from_storage(std::move(mapping), data, layout.dtype, rows, layout.cols, path, range.begin,
                               /*mapped=*/true);
}

}  // namespace mixle::host
