// Helpers for the data tests: a fresh temporary folder per test and error-message checks.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <initializer_list>
#include <vector>
#include <string>

#include "mixle/data.hpp"
#include "mixle/error.hpp"

namespace mixle::test {

/// A new, empty folder under the system temp folder, removed with everything in it at scope end.
class TempDir {
 public:
  TempDir() {
    static std::atomic<int> counter{0};
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    std::string name = "mixle_data_" + std::to_string(::getpid()) + "_" + std::to_string(counter++);
    if (info != nullptr) name += std::string("_") + info->name();
    path_ = std::filesystem::temp_directory_path() / name;
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  /// Full path of `name` inside the folder.
  std::string file(const std::string& name) const { return (path_ / name).string(); }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

inline void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  ASSERT_TRUE(out.good()) << path;
}

inline std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

/// The bytes of `n` values of type T, as a little-endian host stores them.
template <class T>
std::string bytes_of(const T* values, std::size_t n) {
  return std::string(reinterpret_cast<const char*>(values), n * sizeof(T));
}

/// Runs `fn`, expecting InvalidInput whose message contains every one of `needles`.
inline void expect_invalid_input(const std::function<void()>& fn, const std::vector<std::string>& needles) {
  try {
    fn();
    ADD_FAILURE() << "expected InvalidInput, nothing was thrown";
  } catch (const InvalidInput& e) {
    const std::string msg = e.what();
    for (const auto& needle : needles) {
      EXPECT_NE(msg.find(needle), std::string::npos) << "message lacks \"" << needle << "\": " << msg;
    }
  } catch (const std::exception& e) {
    ADD_FAILURE() << "expected InvalidInput, got another exception: " << e.what();
  }
}

/// A hand-made .npy file: magic, version major.0, a header length field of 2 (v1) or 4 bytes,
/// the dict padded with spaces to `align` bytes and ended by '\n', then `data`.
inline std::string make_npy(int major, const std::string& dict, const std::string& data, std::size_t align = 64) {
  const std::size_t len_bytes = major == 1 ? 2 : 4;
  std::string header = dict;
  const std::size_t fixed = 8 + len_bytes;
  while ((fixed + header.size() + 1) % align != 0) header.push_back(' ');
  header.push_back('\n');
  std::string out("\x93NUMPY", 6);
  out.push_back(static_cast<char>(major));
  out.push_back('\0');
  std::uint32_t len = static_cast<std::uint32_t>(header.size());
  for (std::size_t i = 0; i < len_bytes; ++i) out.push_back(static_cast<char>((len >> (8 * i)) & 0xff));
  return out + header + data;
}

}  // namespace mixle::test
