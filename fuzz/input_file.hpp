// The fuzz targets that exercise file readers write each input to a file first: one folder per
// process, in /dev/shm when it exists (memory, not disk), removed at exit.
#pragma once

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

namespace mixle::fuzz {

/// This process's folder for input files (created on first use, removed at exit).
inline const std::filesystem::path& input_dir() {
  static const std::filesystem::path dir = [] {
    const std::filesystem::path base = std::filesystem::exists("/dev/shm") ? "/dev/shm" : "/tmp";
    std::filesystem::path d = base / ("mixle-fuzz-" + std::to_string(::getpid()));
    std::filesystem::create_directories(d);
    std::atexit([] {
      std::error_code ec;
      std::filesystem::remove_all(input_dir(), ec);
    });
    return d;
  }();
  return dir;
}

/// Writes data[0 … size) to the input file named `name` and returns its path.
inline std::string input_file(const std::uint8_t* data, std::size_t size, const std::string& name) {
  const std::string path = (input_dir() / name).string();
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) std::abort();
  if (size && std::fwrite(data, 1, size, f) != size) std::abort();
  std::fclose(f);
  return path;
}

}  // namespace mixle::fuzz
