#include "comms/socket.hpp"

#include <mixle/error.hpp>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstring>
#include <memory>
#include <string>

namespace mixle::comms {

FileDescriptor& FileDescriptor::operator=(FileDescriptor&& other) noexcept {
  if (this != &other) reset(other.release());
  return *this;
}

void FileDescriptor::reset(int fd) noexcept {
  if (fd_ >= 0) ::close(fd_);
  fd_ = fd;
}

int millis_until(Deadline deadline) noexcept {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  if (left <= 0) return 0;
  return left > INT_MAX ? INT_MAX : static_cast<int>(left);
}

void make_nonblocking(int fd) {
  int flags = ::fcntl(fd, F_GETFL, 0);
  if (flags < 0 || ::fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0)
    throw CommunicationError(std::string("fcntl(O_NONBLOCK) failed: ") + std::strerror(errno));
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);  // fails harmlessly on non-TCP
}

namespace {

// Waits until `fd` is ready for `events` or the deadline passes.
IoStatus wait_ready(int fd, short events, Deadline deadline) noexcept {
  for (;;) {
    pollfd p{fd, events, 0};
    int n = ::poll(&p, 1, millis_until(deadline));
    if (n > 0) return IoStatus::ok;  // errors/hang-ups surface in the following read/write
    if (n == 0) return IoStatus::timed_out;
    if (errno != EINTR) return IoStatus::failed;
  }
}

}  // namespace

IoStatus send_all(int fd, const void* data, std::size_t bytes, Deadline deadline) noexcept {
  auto* p = static_cast<const char*>(data);
  while (bytes > 0) {
    ssize_t n = ::send(fd, p, bytes, MSG_NOSIGNAL);
    if (n > 0) {
      p += n;
      bytes -= static_cast<std::size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      IoStatus s = wait_ready(fd, POLLOUT, deadline);
      if (s != IoStatus::ok) return s;
      continue;
    }
    return (errno == EPIPE || errno == ECONNRESET) ? IoStatus::closed : IoStatus::failed;
  }
  return IoStatus::ok;
}

IoStatus recv_all(int fd, void* data, std::size_t bytes, Deadline deadline) noexcept {
  auto* p = static_cast<char*>(data);
  while (bytes > 0) {
    ssize_t n = ::recv(fd, p, bytes, 0);
    if (n > 0) {
      p += n;
      bytes -= static_cast<std::size_t>(n);
      continue;
    }
    if (n == 0) return IoStatus::closed;
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
      IoStatus s = wait_ready(fd, POLLIN, deadline);
      if (s != IoStatus::ok) return s;
      continue;
    }
    return errno == ECONNRESET ? IoStatus::closed : IoStatus::failed;
  }
  return IoStatus::ok;
}

namespace {
/// A getaddrinfo list, freed however the caller leaves.
using AddressList = std::unique_ptr<addrinfo, decltype(&::freeaddrinfo)>;
}  // namespace

FileDescriptor try_connect(const std::string& host, int port, std::string& error) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;  // MASTER_ADDR may be a hostname with IPv4 and IPv6 addresses
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* list = nullptr;
  std::string service = std::to_string(port);
  int rc = ::getaddrinfo(host.c_str(), service.c_str(), &hints, &list);
  if (rc != 0) {
    error = "cannot resolve '" + host + "': " + ::gai_strerror(rc);
    return {};
  }
  const AddressList owned(list, &::freeaddrinfo);
  error = "no address of '" + host + "' accepted a connection";
  for (addrinfo* a = list; a != nullptr; a = a->ai_next) {
    FileDescriptor fd(::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol));
    if (!fd.valid()) continue;
    if (::connect(fd.get(), a->ai_addr, a->ai_addrlen) == 0) return fd;
    error = "connect to " + host + ":" + service + " failed: " + std::strerror(errno);
  }
  return {};
}

FileDescriptor listen_on(const std::string& host, int port, int backlog) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  const char* node = (host.empty() || host == "*") ? nullptr : host.c_str();
  if (node == nullptr) hints.ai_family = AF_INET;
  addrinfo* list = nullptr;
  std::string service = std::to_string(port);
  int rc = ::getaddrinfo(node, service.c_str(), &hints, &list);
  if (rc != 0) throw CommunicationError("cannot resolve store address '" + host + "': " + ::gai_strerror(rc));
  const AddressList owned(list, &::freeaddrinfo);
  std::string error = "no address to bind";
  for (addrinfo* a = list; a != nullptr; a = a->ai_next) {
    FileDescriptor fd(::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol));
    if (!fd.valid()) continue;
    int one = 1;
    ::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (::bind(fd.get(), a->ai_addr, a->ai_addrlen) == 0 && ::listen(fd.get(), backlog) == 0) return fd;
    error = std::strerror(errno);
  }
  throw CommunicationError("cannot listen on " + (node ? host : std::string("*")) + ":" + service + ": " + error +
                           " (is another job using this port? set MASTER_PORT or "
                           "MIXLE_STORE_PORT)");
}

int local_port(int fd) {
  sockaddr_storage addr{};
  socklen_t len = sizeof addr;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0)
    throw CommunicationError(std::string("getsockname failed: ") + std::strerror(errno));
  if (addr.ss_family == AF_INET6) return ntohs(reinterpret_cast<sockaddr_in6*>(&addr)->sin6_port);
  return ntohs(reinterpret_cast<sockaddr_in*>(&addr)->sin_port);
}

int find_free_port(const std::string& host) {
  FileDescriptor fd = listen_on(host, 0, 1);
  return local_port(fd.get());
}

}  // namespace mixle::comms
