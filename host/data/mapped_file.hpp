// Read-only files for the data readers: an RAII descriptor with exact positional reads, and
// read-only private memory maps of byte ranges kept alive by shared_ptr (Dataset's keepalive).
#pragma once

#include <cstddef>
#include <memory>
#include <string>

namespace mixle::host {

/// An open regular file (O_RDONLY). Opening a missing file or a directory throws InvalidInput
/// naming the path (the user gave a wrong path); other failures throw Error with strerror.
class ReadOnlyFile {
 public:
  explicit ReadOnlyFile(const std::string& path);
  ~ReadOnlyFile();
  ReadOnlyFile(const ReadOnlyFile&) = delete;
  ReadOnlyFile& operator=(const ReadOnlyFile&) = delete;

  const std::string& path() const noexcept { return path_; }
  /// File size in bytes (at open time).
  std::size_t size() const noexcept { return size_; }
  /// Reads up to `length` bytes at byte `offset` into `out`; returns the count read (less only at
  /// end of file).
  std::size_t read_at(std::size_t offset, void* out, std::size_t length) const;
  /// Maps bytes [offset, offset + length) read-only (PROT_READ, MAP_PRIVATE). The result points
  /// at byte `offset`; the mapping lives as long as the returned pointer or a copy of it.
  /// `length` must be > 0 and the range must lie inside the file.
  std::shared_ptr<const void> map(std::size_t offset, std::size_t length) const;

 private:
  std::string path_;
  int fd_ = -1;
  std::size_t size_ = 0;
};

}  // namespace mixle::host
