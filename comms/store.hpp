// The rendezvous key–value store: a small TCP server hosted by rank 0 and a client per rank.
// It carries the NCCL unique id, serves as Gloo's rendezvous store and lets every rank learn which
// peer's connection dropped (a lost rank). Protocol: comms/store_protocol.hpp, docs/distributed.md.
//
// Security model: any process that can reach the port could talk to it, so every connection must
// present the per-run token (TORCHELASTIC_RUN_ID or MIXLE_RUN_TOKEN) in its handshake; a wrong token
// is refused and disconnected. Message sizes are bounded (key ≤ 4 KiB, value ≤ 64 MiB) so a stray
// or hostile client cannot make the server allocate unbounded memory.
#pragma once

#include "comms/socket.hpp"

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace mixle::comms {

/// The store server: one background thread with poll()-based I/O, so a slow, silent or malformed
/// client can never block the others. Destruction stops the thread and closes every connection.
class StoreServer {
 public:
  /// A client must finish its handshake within this time, so idle strays cannot pile up.
  static constexpr std::chrono::milliseconds kHandshakeTimeout{10000};

  /// Binds `bind_host:port` (port 0 picks a free port; see port()) and starts serving; a
  /// connection whose handshake is not complete after `handshake_timeout` is closed.
  /// Throws CommunicationError when the port cannot be bound.
  StoreServer(const std::string& bind_host, int port, std::string token,
              std::chrono::milliseconds handshake_timeout = kHandshakeTimeout);
  /// Serves on `listener`, a socket already bound and listening — one a launcher bound and
  /// handed to rank 0, so that no other process could take the port in between — and owns it
  /// from now on (closed on exec, so this process's own children do not hold the port).
  StoreServer(FileDescriptor listener, std::string token,
              std::chrono::milliseconds handshake_timeout = kHandshakeTimeout);
  ~StoreServer();
  StoreServer(const StoreServer&) = delete;
  StoreServer& operator=(const StoreServer&) = delete;

  /// The TCP port the server listens on.
  int port() const noexcept { return port_; }

  /// Ranks whose connection closed without a goodbye (crashed or killed), in order of loss.
  std::vector<int> lost_ranks() const;

  /// Waits until every rank connection has closed, or `timeout` passes. Rank 0 calls this before
  /// shutting down so peers can still report a loss or say goodbye while they finish.
  void drain(std::chrono::milliseconds timeout) const;

  /// Connections refused or dropped for a bad token or malformed message (for tests and logs).
  std::uint64_t rejected_connections() const noexcept;

 private:
  struct State;
  void serve();

  FileDescriptor listener_;
  FileDescriptor wake_read_, wake_write_;
  int port_ = 0;
  std::unique_ptr<State> state_;
  std::thread thread_;
};

/// A connection to the store. Thread-safe: requests are serialised by a mutex. Every call that
/// can block has a deadline and throws CommunicationError naming the store's address on failure.
class StoreClient {
 public:
  /// Connects to host:port, retrying with backoff until `connect_timeout` passes (rank 0 may still
  /// be starting its server). `rank` is reported to the server (−1 for a non-rank client); `timeout`
  /// is the default deadline of later requests.
  StoreClient(std::string host, int port, std::string token, int rank, std::chrono::milliseconds connect_timeout,
              std::chrono::milliseconds timeout);
  /// Says goodbye unless an exception is unwinding: a rank that dies by an exception must be
  /// reported lost, just like one that was killed.
  ~StoreClient();
  StoreClient(const StoreClient&) = delete;
  StoreClient& operator=(const StoreClient&) = delete;

  void set(std::string_view key, std::string_view value);
  void set(std::string_view key, const std::vector<char>& value) {
    set(key, std::string_view(value.data(), value.size()));
  }
  /// The value of `key`, or nullopt when it is not set (does not wait).
  std::optional<std::vector<char>> try_get(std::string_view key);
  /// Waits up to `timeout` for `key`, then returns its value.
  std::vector<char> get(std::string_view key, std::chrono::milliseconds timeout);
  std::vector<char> get(std::string_view key) { return get(key, timeout_); }
  /// Waits until every key is set; throws CommunicationError naming the missing keys after `timeout`.
  void wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout);
  void wait(const std::vector<std::string>& keys) { wait(keys, timeout_); }
  /// Whether every key is set (does not wait).
  bool check(const std::vector<std::string>& keys);
  /// Adds `delta` to the integer at `key` (0 when unset) and returns the new value.
  std::int64_t add(std::string_view key, std::int64_t delta);
  /// Ranks the server saw disconnect without a goodbye.
  std::vector<int> lost_ranks();
  /// Says goodbye and closes; later calls throw. Idempotent.
  void close() noexcept;
  /// Closes without a goodbye, so the server records this rank as lost. Idempotent.
  void abandon() noexcept;

  std::chrono::milliseconds timeout() const noexcept { return timeout_; }
  const std::string& address() const noexcept { return address_; }

 private:
  struct Reply {
    std::uint8_t status;
    std::int64_t arg;
    std::vector<char> value;
  };
  Reply request(std::uint8_t op, std::int64_t arg, std::string_view key, std::string_view value, Deadline deadline);
  [[noreturn]] void fail(const std::string& what);

  std::string host_;
  int port_;
  std::string address_;
  std::chrono::milliseconds timeout_;
  std::mutex mutex_;
  FileDescriptor fd_;
  int uncaught_at_creation_;
};

}  // namespace mixle::comms
