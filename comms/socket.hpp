// Small RAII wrappers over POSIX TCP sockets with deadlines, shared by the rendezvous store's
// server and client. Every blocking operation takes an absolute deadline so that a dead or silent
// peer becomes a CommunicationError instead of a hang.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>

namespace mixle::comms {

using Clock = std::chrono::steady_clock;
using Deadline = Clock::time_point;

/// Owns one file descriptor; closes it on destruction. Move-only.
class FileDescriptor {
 public:
  FileDescriptor() = default;
  explicit FileDescriptor(int fd) noexcept : fd_(fd) {}
  FileDescriptor(FileDescriptor&& other) noexcept : fd_(other.release()) {}
  FileDescriptor& operator=(FileDescriptor&& other) noexcept;
  FileDescriptor(const FileDescriptor&) = delete;
  FileDescriptor& operator=(const FileDescriptor&) = delete;
  ~FileDescriptor() { reset(); }

  int get() const noexcept { return fd_; }
  bool valid() const noexcept { return fd_ >= 0; }
  int release() noexcept {
    int fd = fd_;
    fd_ = -1;
    return fd;
  }
  void reset(int fd = -1) noexcept;

 private:
  int fd_ = -1;
};

/// Outcome of a socket transfer that did not throw.
enum class IoStatus { ok, closed, timed_out, failed };

/// Sends all `bytes` bytes or reports why not (never throws). Non-blocking sockets are polled
/// until `deadline`.
IoStatus send_all(int fd, const void* data, std::size_t bytes, Deadline deadline) noexcept;

/// Receives exactly `bytes` bytes or reports why not (never throws).
IoStatus recv_all(int fd, void* data, std::size_t bytes, Deadline deadline) noexcept;

/// Connects to host:port, trying every address getaddrinfo(AF_UNSPEC) returns, once.
/// Returns an invalid descriptor when no address accepted the connection; `error` says why.
FileDescriptor try_connect(const std::string& host, int port, std::string& error);

/// Binds and listens on host:port (host "" or "*" = every IPv4 interface; port 0 = ephemeral).
/// Throws CommunicationError naming the address when the port cannot be bound.
FileDescriptor listen_on(const std::string& host, int port, int backlog = 128);

/// The local port a bound socket listens on.
int local_port(int fd);

/// Asks the kernel for a currently free TCP port on `host` (bind to port 0, read it, close).
/// Racy by nature: another process may take it before the caller binds it.
int find_free_port(const std::string& host = "127.0.0.1");

/// Sets O_NONBLOCK (and TCP_NODELAY for TCP sockets).
void make_nonblocking(int fd);

/// Milliseconds from now until `deadline`, clamped to [0, INT_MAX] for poll().
int millis_until(Deadline deadline) noexcept;

}  // namespace mixle::comms
