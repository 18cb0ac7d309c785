// A rows × cols matrix written chunk by chunk — .npy (v1) or CSV, as write_matrix writes them,
// byte for byte — through an AtomicFile: the destination appears complete at commit() or not at
// all. For outputs too large to hold whole (mixle score's per-row results).
#pragma once

#include "host/data/atomic_file.hpp"

#include <mixle/data.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace mixle::host {

/// T: double or std::int64_t.
template <class T>
class MatrixStream {
 public:
  /// format: npy or csv (automatic: by the extension of `path`); header: CSV column names.
  MatrixStream(const std::string& path, std::size_t rows, std::size_t cols, DataFormat format,
               const std::vector<std::string>& header = {});
  /// Appends `count` rows (count × cols values, row-major); more rows than announced is an error.
  void append(const T* values, std::size_t count);
  /// Puts the file in place; throws InvalidInput when fewer rows than announced were appended.
  void commit();

 private:
  AtomicFile file_;
  std::string path_;
  std::size_t rows_, cols_, written_ = 0;
  DataFormat format_;
  char separator_ = ',';
};

extern template class MatrixStream<double>;
extern template class MatrixStream<std::int64_t>;

}  // namespace mixle::host
