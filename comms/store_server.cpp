// The rendezvous store server: a single thread multiplexing every connection with poll(), parsing
// requests incrementally so that no client can block another (comms/store_protocol.hpp).
#include "comms/store.hpp"
#include "comms/store_protocol.hpp"

#include <mixle/error.hpp>

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <condition_variable>
#include <cstring>
#include <list>
#include <map>

namespace mixle::comms {
namespace {

constexpr std::size_t kReadChunk = 1 << 16;
// Longest server-side wait (one day); longer requests are shortened to this.
constexpr std::int64_t kMaxWaitMillis = 24LL * 3600 * 1000;

enum class Phase { handshake_head, handshake_token, request_head, request_body, waiting };

struct Connection {
  FileDescriptor fd;
  Phase phase = Phase::handshake_head;
  std::vector<char> in;   // bytes received and not yet consumed
  std::size_t need = 12;  // bytes the current phase needs
  std::vector<char> out;  // reply bytes not yet sent
  std::size_t out_pos = 0;
  int rank = -1;
  bool authenticated = false;
  bool said_bye = false;
  bool closing = false;  // close once `out` is flushed
  Deadline handshake_deadline;
  // The request being read.
  std::uint8_t op = 0;
  std::int64_t arg = 0;
  std::uint32_t key_len = 0, value_len = 0;
  // A pending wait.
  std::vector<std::string> wait_keys;
  Deadline wait_deadline;
};

}  // namespace

struct StoreServer::State {
  std::string token;
  std::chrono::milliseconds handshake_timeout{};
  std::list<Connection> connections;
  std::map<std::string, std::vector<char>, std::less<>> data;
  std::atomic<std::uint64_t> rejected{0};
  mutable std::mutex mutex;  // guards `lost` and `open_ranks`, which other threads read
  mutable std::condition_variable changed;
  std::vector<int> lost;
  int open_ranks = 0;

  /// Closes a connection; a rank that leaves without a goodbye is recorded as lost.
  std::list<Connection>::iterator close(std::list<Connection>::iterator it, bool rejected_it);
  /// Replies to every pending wait whose keys are now all present.
  void release_waiters();
  /// Consumes complete messages from c.in; false when the connection must be dropped.
  bool process(Connection& c);
  /// Executes one complete request (header in c, key and value given); false to drop.
  bool execute(Connection& c, const std::string& key, std::string_view value);
};

StoreServer::StoreServer(const std::string& bind_host, int port, std::string token,
                         std::chrono::milliseconds handshake_timeout)
    : StoreServer(listen_on(bind_host, port), std::move(token), handshake_timeout) {}

StoreServer::StoreServer(FileDescriptor listener, std::string token, std::chrono::milliseconds handshake_timeout)
    : state_(std::make_unique<State>()) {
  state_->token = std::move(token);
  state_->handshake_timeout = handshake_timeout;
  if (state_->token.size() > wire::kMaxTokenBytes)
    throw InvalidInput("store token is " + std::to_string(state_->token.size()) + " bytes; at most " +
                       std::to_string(wire::kMaxTokenBytes) + " are accepted");
  listener_ = std::move(listener);
  ::fcntl(listener_.get(), F_SETFD, FD_CLOEXEC);  // a handed-over socket came without it
  make_nonblocking(listener_.get());
  port_ = local_port(listener_.get());
  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC | O_NONBLOCK) != 0)
    throw CommunicationError(std::string("pipe2 failed: ") + std::strerror(errno));
  wake_read_.reset(pipe_fds[0]);
  wake_write_.reset(pipe_fds[1]);
  thread_ = std::thread([this] { serve(); });
}

StoreServer::~StoreServer() {
  char byte = 1;
  [[maybe_unused]] auto n = ::write(wake_write_.get(), &byte, 1);
  if (thread_.joinable()) thread_.join();
}

std::vector<int> StoreServer::lost_ranks() const {
  std::lock_guard lock(state_->mutex);
  return state_->lost;
}

std::uint64_t StoreServer::rejected_connections() const noexcept { return state_->rejected.load(); }

void StoreServer::drain(std::chrono::milliseconds timeout) const {
  std::unique_lock lock(state_->mutex);
  state_->changed.wait_for(lock, timeout, [&] { return state_->open_ranks == 0; });
}

namespace {

void queue_reply(Connection& c, wire::Status status, std::int64_t arg, std::string_view value) {
  c.out.push_back(static_cast<char>(status));
  wire::put_i64(c.out, arg);
  wire::put_u32(c.out, static_cast<std::uint32_t>(value.size()));
  c.out.insert(c.out.end(), value.begin(), value.end());
}

bool all_present(const std::map<std::string, std::vector<char>, std::less<>>& data,
                 const std::vector<std::string>& keys) {
  return std::all_of(keys.begin(), keys.end(), [&](const std::string& k) { return data.count(k); });
}

}  // namespace

std::list<Connection>::iterator StoreServer::State::close(std::list<Connection>::iterator it, bool rejected_it) {
  if (rejected_it) ++rejected;
  if (it->authenticated && it->rank >= 0) {
    std::lock_guard lock(mutex);
    if (!it->said_bye) lost.push_back(it->rank);
    --open_ranks;
    changed.notify_all();
  }
  return connections.erase(it);
}

void StoreServer::State::release_waiters() {
  for (auto& c : connections) {
    if (c.phase == Phase::waiting && all_present(data, c.wait_keys)) {
      queue_reply(c, wire::Status::ok, 0, {});
      c.phase = Phase::request_head;
      c.need = wire::kRequestHeaderBytes;
    }
  }
}

bool StoreServer::State::process(Connection& c) {
  for (;;) {
    if (c.phase == Phase::waiting || c.in.size() < c.need || !c.out.empty()) return true;
    const char* p = c.in.data();
    switch (c.phase) {
      case Phase::handshake_head: {
        if (wire::get_u32(p) != wire::kHandshakeMagic || wire::get_u32(p + 4) != wire::kVersion) return false;
        std::uint32_t token_len = wire::get_u32(p + 8);
        if (token_len > wire::kMaxTokenBytes) return false;
        c.in.erase(c.in.begin(), c.in.begin() + 12);
        c.need = token_len + 4;
        c.phase = Phase::handshake_token;
        break;
      }
      case Phase::handshake_token: {
        // Compared before the erase below moves any bytes that followed (a pipelined request)
        // over where the token was.
        const bool token_ok = std::string_view(p, c.need - 4) == this->token;
        int rank = static_cast<int>(wire::get_u32(p + c.need - 4));
        c.in.erase(c.in.begin(), c.in.begin() + static_cast<std::ptrdiff_t>(c.need));
        if (!token_ok) {
          c.out.push_back(static_cast<char>(wire::kRefused));
          c.closing = true;
          ++rejected;
          return true;
        }
        c.out.push_back(static_cast<char>(wire::kAccepted));
        c.authenticated = true;
        c.rank = rank;
        if (rank >= 0) {
          std::lock_guard lock(mutex);
          ++open_ranks;
        }
        c.phase = Phase::request_head;
        c.need = wire::kRequestHeaderBytes;
        break;
      }
      case Phase::request_head: {
        c.op = static_cast<std::uint8_t>(p[0]);
        c.arg = wire::get_i64(p + 1);
        c.key_len = wire::get_u32(p + 9);
        c.value_len = wire::get_u32(p + 13);
        // Refuse oversized lengths before buffering anything of that size.
        if (c.op < 1 || c.op > 7 || c.key_len > wire::kMaxKeyBytes || c.value_len > wire::kMaxValueBytes) return false;
        c.in.erase(c.in.begin(), c.in.begin() + wire::kRequestHeaderBytes);
        c.need = std::size_t(c.key_len) + c.value_len;
        c.phase = Phase::request_body;
        break;
      }
      case Phase::request_body: {
        std::string key(p, c.key_len);
        std::string_view value(p + c.key_len, c.value_len);
        c.phase = Phase::request_head;
        c.need = wire::kRequestHeaderBytes;
        if (!execute(c, key, value)) return false;
        c.in.erase(c.in.begin(), c.in.begin() + static_cast<std::ptrdiff_t>(c.key_len + c.value_len));
        break;
      }
      case Phase::waiting: return true;
    }
  }
}

bool StoreServer::State::execute(Connection& c, const std::string& key, std::string_view value) {
  switch (static_cast<wire::Op>(c.op)) {
    case wire::Op::set:
      data[key].assign(value.begin(), value.end());
      queue_reply(c, wire::Status::ok, 0, {});
      release_waiters();
      break;
    case wire::Op::get: {
      auto it = data.find(key);
      if (it == data.end())
        queue_reply(c, wire::Status::not_found, 0, {});
      else
        queue_reply(c, wire::Status::ok, 0, {it->second.data(), it->second.size()});
      break;
    }
    case wire::Op::add: {
      auto& slot = data[key];
      std::int64_t current = 0;
      try {
        if (!slot.empty()) current = std::stoll(std::string(slot.begin(), slot.end()));
      } catch (const std::exception&) {
        queue_reply(c, wire::Status::bad_request, 0, "value is not an integer");
        break;
      }
      current += c.arg;
      std::string text = std::to_string(current);
      slot.assign(text.begin(), text.end());
      queue_reply(c, wire::Status::ok, current, {});
      release_waiters();
      break;
    }
    case wire::Op::check:
    case wire::Op::wait: {
      std::vector<std::string> keys;
      if (!wire::decode_keys(value, keys)) return false;
      const bool present = all_present(data, keys);
      if (c.op == static_cast<std::uint8_t>(wire::Op::check)) {
        queue_reply(c, wire::Status::ok, present ? 1 : 0, {});
      } else if (present) {  // a wait's arg means nothing: 0, answered now or released later
        queue_reply(c, wire::Status::ok, 0, {});
      } else {
        c.wait_keys = std::move(keys);
        // Clamped so that a hostile or careless timeout cannot overflow the clock arithmetic.
        c.wait_deadline = Clock::now() + std::chrono::milliseconds(std::clamp<std::int64_t>(c.arg, 0, kMaxWaitMillis));
        c.phase = Phase::waiting;
      }
      break;
    }
    case wire::Op::lost: {
      std::vector<char> ranks;
      {
        std::lock_guard lock(mutex);
        for (int r : lost) wire::put_u32(ranks, static_cast<std::uint32_t>(r));
      }
      queue_reply(c, wire::Status::ok, 0, {ranks.data(), ranks.size()});
      break;
    }
    case wire::Op::bye:
      c.said_bye = true;
      queue_reply(c, wire::Status::ok, 0, {});
      c.closing = true;
      break;
  }
  return true;
}

void StoreServer::serve() {
  State& s = *state_;
  std::vector<pollfd> fds;
  std::vector<std::list<Connection>::iterator> owners;
  std::vector<char> chunk(kReadChunk);
  for (;;) {
    // Expire handshakes and waits, and compute the poll timeout from the nearest deadline.
    auto now = Clock::now();
    Deadline next = now + std::chrono::seconds(1);
    for (auto it = s.connections.begin(); it != s.connections.end();) {
      if (!it->authenticated && !it->closing && now >= it->handshake_deadline) {
        it = s.close(it, true);
        continue;
      }
      if (it->phase == Phase::waiting) {
        if (now >= it->wait_deadline) {
          queue_reply(*it, wire::Status::timed_out, 0, {});
          it->phase = Phase::request_head;
          it->need = wire::kRequestHeaderBytes;
        } else {
          next = std::min(next, it->wait_deadline);
        }
      }
      if (!it->authenticated) next = std::min(next, it->handshake_deadline);
      ++it;
    }
    fds.clear();
    owners.clear();
    fds.push_back({wake_read_.get(), POLLIN, 0});
    fds.push_back({listener_.get(), POLLIN, 0});
    for (auto it = s.connections.begin(); it != s.connections.end(); ++it) {
      short events = it->out.empty() ? POLLIN : POLLOUT;
      fds.push_back({it->fd.get(), events, 0});
      owners.push_back(it);
    }
    int n = ::poll(fds.data(), fds.size(), millis_until(next));
    if (n < 0 && errno != EINTR) break;
    if (fds[0].revents) break;  // woken by the destructor
    if (fds[1].revents & POLLIN) {
      for (;;) {
        int fd = ::accept4(listener_.get(), nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (fd < 0) break;
        Connection c;
        c.fd.reset(fd);
        make_nonblocking(fd);
        c.handshake_deadline = Clock::now() + s.handshake_timeout;
        s.connections.push_back(std::move(c));
      }
    }
    for (std::size_t i = 2; i < fds.size(); ++i) {
      auto it = owners[i - 2];
      Connection& c = *it;
      bool drop = false, rejected = false;
      if (fds[i].revents & POLLOUT) {
        ssize_t w = ::send(c.fd.get(), c.out.data() + c.out_pos, c.out.size() - c.out_pos, MSG_NOSIGNAL);
        if (w > 0)
          c.out_pos += static_cast<std::size_t>(w);
        else if (w < 0 && errno != EAGAIN && errno != EINTR)
          drop = true;
        if (c.out_pos == c.out.size()) {
          c.out.clear();
          c.out_pos = 0;
          if (c.closing)
            drop = true;
          else if (!s.process(c))
            drop = rejected = true;  // requests that arrived meanwhile
        }
      } else if (fds[i].revents & (POLLIN | POLLHUP | POLLERR)) {
        ssize_t r = ::recv(c.fd.get(), chunk.data(), chunk.size(), 0);
        if (r > 0) {
          // A waiting client must not send; anything it does is a protocol violation.
          if (c.phase == Phase::waiting)
            drop = rejected = true;
          else {
            c.in.insert(c.in.end(), chunk.begin(), chunk.begin() + r);
            if (!s.process(c)) drop = rejected = true;
          }
        } else if (r == 0 || (errno != EAGAIN && errno != EINTR)) {
          drop = true;  // peer closed (possibly mid-message: a truncated request)
        }
      }
      if (drop) s.close(it, rejected);
    }
  }
  // Shutting down is not a loss of the peers still connected.
  for (auto& c : s.connections) c.said_bye = true;
  while (!s.connections.empty()) s.close(s.connections.begin(), false);
}

}  // namespace mixle::comms
