// Writers of good and deliberately broken data and model files, for the bad-input tests.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

namespace mixle::test {

/// A fresh empty directory under the system temp dir, removed on destruction.
class TempDir {
 public:
  explicit TempDir(const std::string& tag) {
    std::random_device rd;
    path_ = std::filesystem::temp_directory_path() /
            ("mixle-" + tag + "-" + std::to_string(rd()) + "-" + std::to_string(rd()));
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  std::string file(const std::string& name) const { return (path_ / name).string(); }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

inline void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

inline std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

/// A version-1 .npy file of float64 values, rows × cols. `descr` and `fortran` go into the
/// header as given; the payload is written little-endian (so '>f8' is a lie the reader must
/// refuse on the header alone); `drop` bytes are cut off the end.
inline std::string npy_bytes(const std::vector<double>& values, std::size_t rows, std::size_t cols,
                             const std::string& descr = "<f8", bool fortran = false, std::size_t drop = 0) {
  std::string header = "{'descr': '" + descr + "', 'fortran_order': " + (fortran ? "True" : "False") + ", 'shape': (" +
                       std::to_string(rows) + ", " + std::to_string(cols) + "), }";
  const std::size_t total = 10 + header.size() + 1;
  header += std::string((64 - total % 64) % 64, ' ') + "\n";
  std::string out = "\x93NUMPY";
  out += '\x01';
  out += '\x00';
  const auto len = static_cast<std::uint16_t>(header.size());
  out += static_cast<char>(len & 0xff);
  out += static_cast<char>(len >> 8);
  out += header;
  std::string payload(values.size() * sizeof(double), '\0');
  std::memcpy(payload.data(), values.data(), payload.size());
  out += payload;
  out.resize(out.size() - drop);
  return out;
}

/// A small well-formed gaussian_diag data set (rows × 2).
inline std::vector<double> gaussian_values(std::size_t rows) {
  std::vector<double> v;
  for (std::size_t r = 0; r < rows; ++r) {
    v.push_back(static_cast<double>(r % 7) - 3.0);
    v.push_back(static_cast<double>((r * 3) % 5));
  }
  return v;
}

/// A one-part gaussian_diag model JSON over 2 columns with K = 2.
inline std::string diag_model_json(const std::string& weights = "[0.5, 0.5]") {
  return "{\"format\": \"mixle-model\", \"version\": 1, \"weights\": " + weights +
         ", \"parts\": [{\"family\": \"gaussian_diag\", \"columns\": [0, 2], "
         "\"mean\": [[0, 0], [1, 1]], \"var\": [[1, 1], [1, 1]]}]}";
}

/// A one-part gaussian_full model JSON over 2 columns with K = 2 and the given second covariance.
inline std::string full_model_json(const std::string& cov1 = "[[1, 0], [0, 1]]") {
  return "{\"format\": \"mixle-model\", \"version\": 1, \"weights\": [0.5, 0.5], "
         "\"parts\": [{\"family\": \"gaussian_full\", \"columns\": [0, 2], "
         "\"mean\": [[0, 0], [1, 1]], \"cov\": [[[1, 0], [0, 1]], " +
         cov1 + "]}]}";
}

}  // namespace mixle::test
