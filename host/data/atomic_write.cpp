// AtomicFile and write_file_atomic: write a sibling temporary file, fsync it, rename it over the
// destination. Readers therefore see either the old file or the complete new one, never a
// partial write.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "host/data/atomic_file.hpp"
#include "mixle/data.hpp"
#include "mixle/error.hpp"

namespace mixle::host {

namespace {

/// Distinguishes temporary names made by threads of one process.
std::atomic<unsigned> temp_counter{0};

}  // namespace

AtomicFile::AtomicFile(std::string path) : path_(std::move(path)) {
  const std::filesystem::path dest(path_);
  if (dest.filename().empty()) fail("not a file name", EISDIR);
  std::filesystem::path folder = dest.parent_path();
  if (folder.empty()) folder = ".";
  folder_ = folder.string();
  // Same folder as the destination, so that rename() stays on one file system.
  for (int attempt = 0; fd_ < 0; ++attempt) {
    // Appended piecewise: g++ 12 warns falsely (-Wrestrict) on the "." + string temporary.
    std::string name = ".";
    name += dest.filename().string();
    name += ".tmp.";
    name += std::to_string(::getpid());
    name += ".";
    name += std::to_string(temp_counter++);
    const std::string temp = (folder / name).string();
    // 0666 lets the umask decide the final permissions, as for any newly created file.
    fd_ = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd_ >= 0) temp_ = temp;
    if (fd_ < 0 && (errno != EEXIST || attempt > 100)) fail("cannot create a temporary file in " + folder_, errno);
  }
}

AtomicFile::~AtomicFile() {
  if (fd_ >= 0) ::close(fd_);
  if (!temp_.empty()) ::unlink(temp_.c_str());
}

void AtomicFile::fail(const std::string& step, int err) {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  if (!temp_.empty()) ::unlink(temp_.c_str());
  temp_.clear();
  throw Error("cannot write " + path_ + ": " + step + ": " + std::strerror(err));
}

void AtomicFile::write(const char* p, std::size_t left) {
  if (fd_ < 0) throw Error("cannot write " + path_ + ": the file was already committed or abandoned");
  while (left > 0) {
    const ssize_t n = ::write(fd_, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      fail("write", errno);
    }
    p += n;
    left -= static_cast<std::size_t>(n);
  }
}

void AtomicFile::commit() {
  if (fd_ < 0) throw Error("cannot write " + path_ + ": the file was already committed or abandoned");
  if (::fsync(fd_) != 0) fail("fsync", errno);
  const int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0) fail("close", errno);
  if (::rename(temp_.c_str(), path_.c_str()) != 0) fail("rename", errno);
  temp_.clear();
  // Persist the directory entry too; failing here leaves a complete file, so it is not an error.
  const int dir = ::open(folder_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir >= 0) {
    ::fsync(dir);
    ::close(dir);
  }
}

}  // namespace mixle::host

namespace mixle {

void write_file_atomic(const std::string& path, const std::string& contents) {
  host::AtomicFile file(path);
  file.write(contents);
  file.commit();
}

}  // namespace mixle
