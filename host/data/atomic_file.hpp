// A file written in pieces and put in place atomically: the pieces go to a temporary sibling,
// and commit() fsyncs it and renames it over the destination. Readers see the old file or the
// complete new one, never a part; destroyed uncommitted (an error on the way), the temporary is
// removed and the destination is untouched.
#pragma once

#include <cstddef>
#include <string>

namespace mixle::host {

class AtomicFile {
 public:
  /// Creates the temporary sibling of `path`; throws Error naming `path` when it cannot.
  explicit AtomicFile(std::string path);
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  /// Appends `size` bytes; throws Error naming the destination (the temporary is removed).
  void write(const char* data, std::size_t size);
  void write(const std::string& text) { write(text.data(), text.size()); }
  /// fsync, rename over the destination, fsync of its folder; throws Error as write does.
  void commit();

 private:
  [[noreturn]] void fail(const std::string& step, int err);

  std::string path_, temp_, folder_;
  int fd_ = -1;
};

}  // namespace mixle::host
