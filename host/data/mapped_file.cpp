// POSIX implementation of ReadOnlyFile: open/fstat/pread/mmap with errors that name the path.
#include "host/data/mapped_file.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "mixle/error.hpp"

namespace mixle::host {

namespace {

std::string errno_text(int err) { return std::strerror(err); }

/// Owns one mmap'd region; the Dataset sees only `start` (the requested offset inside it).
struct Mapping {
  void* base = nullptr;
  std::size_t length = 0;
  ~Mapping() {
    if (base != nullptr) ::munmap(base, length);
  }
};

}  // namespace

ReadOnlyFile::ReadOnlyFile(const std::string& path) : path_(path) {
  fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd_ < 0) {
    const int err = errno;
    const std::string msg = "cannot open " + path + ": " + errno_text(err);
    if (err == ENOENT || err == ENOTDIR) throw InvalidInput(msg);
    throw Error(msg);
  }
  struct stat st {};
  if (::fstat(fd_, &st) != 0) {
    const int err = errno;
    ::close(fd_);
    throw Error("cannot stat " + path + ": " + errno_text(err));
  }
  if (S_ISDIR(st.st_mode)) {
    ::close(fd_);
    throw InvalidInput(path + " is a directory, not a data file");
  }
  size_ = static_cast<std::size_t>(st.st_size);
}

ReadOnlyFile::~ReadOnlyFile() {
  if (fd_ >= 0) ::close(fd_);
}

std::size_t ReadOnlyFile::read_at(std::size_t offset, void* out, std::size_t length) const {
  auto* dst = static_cast<unsigned char*>(out);
  std::size_t done = 0;
  while (done < length) {
    const ssize_t n = ::pread(fd_, dst + done, length - done, static_cast<off_t>(offset + done));
    if (n < 0) {
      if (errno == EINTR) continue;
      throw Error("cannot read " + path_ + ": " + errno_text(errno));
    }
    if (n == 0) break;  // end of file
    done += static_cast<std::size_t>(n);
  }
  return done;
}

std::shared_ptr<const void> ReadOnlyFile::map(std::size_t offset, std::size_t length) const {
  if (length == 0 || offset + length > size_) {
    throw Error("internal: mapping bytes [" + std::to_string(offset) + ", " + std::to_string(offset + length) +
                ") of " + path_ + " (" + std::to_string(size_) + " bytes)");
  }
  // mmap offsets must be page-aligned: map from the page holding `offset`, expose `offset`.
  const auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  const std::size_t aligned = offset / page * page;
  auto mapping = std::make_shared<Mapping>();
  mapping->length = length + (offset - aligned);
  void* base = ::mmap(nullptr, mapping->length, PROT_READ, MAP_PRIVATE, fd_, static_cast<off_t>(aligned));
  if (base == MAP_FAILED) {
    throw Error("cannot memory-map " + path_ + ": " + errno_text(errno));
  }
  mapping->base = base;
  const void* start = static_cast<const unsigned char*>(base) + (offset - aligned);
  // Aliasing constructor: the pointer is `start`, ownership is the whole mapping.
  return std::shared_ptr<const void>(mapping, start);
}

}  // namespace mixle::host
