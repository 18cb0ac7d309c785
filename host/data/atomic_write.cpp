// write_file_atomic: write a sibling temporary file, fsync it, rename it over the destination.
// Readers therefore see either the old file or the complete new one, never a partial write.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "mixle/data.hpp"
#include "mixle/error.hpp"

namespace mixle {

namespace {

/// Distinguishes temporary names made by threads of one process.
std::atomic<unsigned> temp_counter{0};

[[noreturn]] void fail(const std::string& path, const std::string& step, int err, const std::string& temp) {
  if (!temp.empty()) ::unlink(temp.c_str());
  throw Error("cannot write " + path + ": " + step + ": " + std::strerror(err));
}

}  // namespace

void write_file_atomic(const std::string& path, const std::string& contents) {
  const std::filesystem::path dest(path);
  if (dest.filename().empty()) fail(path, "not a file name", EISDIR, "");
  std::filesystem::path folder = dest.parent_path();
  if (folder.empty()) folder = ".";
  // Same folder as the destination, so that rename() stays on one file system.
  std::string temp;
  int fd = -1;
  for (int attempt = 0; fd < 0; ++attempt) {
    // Appended piecewise: g++ 12 warns falsely (-Wrestrict) on the "." + string temporary.
    std::string name = ".";
    name += dest.filename().string();
    name += ".tmp.";
    name += std::to_string(::getpid());
    name += ".";
    name += std::to_string(temp_counter++);
    temp = (folder / name).string();
    // 0666 lets the umask decide the final permissions, as for any newly created file.
    fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd < 0 && (errno != EEXIST || attempt > 100)) {
      fail(path, "cannot create a temporary file in " + folder.string(), errno, "");
    }
  }
  const char* p = contents.data();
  std::size_t left = contents.size();
  while (left > 0) {
    const ssize_t n = ::write(fd, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      const int err = errno;
      ::close(fd);
      fail(path, "write", err, temp);
    }
    p += n;
    left -= static_cast<std::size_t>(n);
  }
  if (::fsync(fd) != 0) {
    const int err = errno;
    ::close(fd);
    fail(path, "fsync", err, temp);
  }
  if (::close(fd) != 0) fail(path, "close", errno, temp);
  if (::rename(temp.c_str(), path.c_str()) != 0) fail(path, "rename", errno, temp);
  // Persist the directory entry too; failing here leaves a complete file, so it is not an error.
  const int dir = ::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir >= 0) {
    ::fsync(dir);
    ::close(dir);
  }
}

}  // namespace mixle
