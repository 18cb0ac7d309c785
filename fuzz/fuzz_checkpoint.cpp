// Checkpoint files: load_checkpoint of a directory holding the input as its checkpoint. A bad
// file must throw mixle::Error naming it.
#include "fuzz/input_file.hpp"
#include "host/checkpoint.hpp"

#include <mixle/error.hpp>

#include <filesystem>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const std::string dir = [] {
    const std::filesystem::path d = mixle::fuzz::input_dir() / "checkpoint";
    std::filesystem::create_directories(d);
    return d.string();
  }();
  const std::string path = mixle::host::checkpoint_path(dir);
  const std::filesystem::path written =
      mixle::fuzz::input_file(data, size, std::filesystem::path(path).filename().string());
  std::filesystem::rename(written, path);
  try {
    (void)mixle::host::load_checkpoint(dir);
  } catch (const mixle::Error&) {}
  return 0;
}
