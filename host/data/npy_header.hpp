// The .npy header: magic, version, and the Python dict literal
// {'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), } padded to 64-byte alignment.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace mixle::host {

inline constexpr char kNpyMagic[] = "\x93NUMPY";
inline constexpr std::size_t kNpyMagicSize = 6;
/// numpy aligns the start of the data to this many bytes.
inline constexpr std::size_t kNpyAlignment = 64;

/// What a .npy header says.
struct NpyHeader {
  int major_version = 1;
  std::string descr;  // e.g. "<f4"
  bool fortran_order = false;
  std::vector<std::size_t> shape;  // empty for a 0-d array
  std::size_t data_offset = 0;     // byte where the array data starts
};

class ReadOnlyFile;

/// Reads and parses the header of `file` (v1: 2-byte length; v2/v3: 4-byte length; v3 is
/// UTF-8 but otherwise v2). Throws InvalidInput naming the file on a bad magic (with a hint
/// for .npz archives), an unknown version, a truncated or malformed header. Does not judge
/// descr / order / shape: the reader does.
NpyHeader read_npy_header(const ReadOnlyFile& file);

/// A complete v1 header (magic through the trailing '\n') for a C-order rows × cols array of
/// `descr`, padded with spaces so that its length is a multiple of kNpyAlignment.
std::string make_npy_header(const std::string& descr, std::size_t rows, std::size_t cols);

}  // namespace mixle::host
