// The rendezvous store client (comms/store.hpp).
#include "comms/store.hpp"
#include "comms/store_protocol.hpp"

#include <mixle/error.hpp>

#include <exception>
#include <thread>

namespace mixle::comms {
namespace {

// Extra time the client allows beyond a server-side wait, for the reply to travel.
constexpr auto kReplyGrace = std::chrono::seconds(5);

std::string describe(IoStatus s) {
  switch (s) {
    case IoStatus::closed: return "connection closed by the store (rank 0 gone?)";
    case IoStatus::timed_out: return "timed out";
    case IoStatus::failed: return "socket error";
    case IoStatus::ok: break;
  }
  return "ok";
}

void check_key(std::string_view key) {
  if (key.size() > wire::kMaxKeyBytes)
    throw InvalidInput("store key of " + std::to_string(key.size()) + " bytes; at most " +
                       std::to_string(wire::kMaxKeyBytes) + " are accepted");
}

}  // namespace

StoreClient::StoreClient(std::string host, int port, std::string token, int rank,
                         std::chrono::milliseconds connect_timeout, std::chrono::milliseconds timeout)
    : host_(std::move(host)),
      port_(port),
      address_(host_ + ":" + std::to_string(port)),
      timeout_(timeout),
      uncaught_at_creation_(std::uncaught_exceptions()) {
  if (token.size() > wire::kMaxTokenBytes)
    throw InvalidInput("store token is " + std::to_string(token.size()) + " bytes; at most " +
                       std::to_string(wire::kMaxTokenBytes) + " are accepted");
  const Deadline deadline = Clock::now() + connect_timeout;
  auto backoff = std::chrono::milliseconds(10);
  std::string error;
  // Rank 0 may not have bound the port yet: retry until the deadline with a bounded backoff.
  for (;;) {
    fd_ = try_connect(host_, port_, error);
    if (fd_.valid()) break;
    auto now = Clock::now();
    if (now >= deadline)
      throw CommunicationError("cannot reach the rendezvous store of rank 0 at " + address_ + " within " +
                               std::to_string(connect_timeout.count()) + " ms: " + error);
    std::this_thread::sleep_for(std::min<Clock::duration>(backoff, deadline - now));
    backoff = std::min(backoff * 2, std::chrono::milliseconds(500));
  }
  make_nonblocking(fd_.get());
  std::vector<char> hello;
  wire::put_u32(hello, wire::kHandshakeMagic);
  wire::put_u32(hello, wire::kVersion);
  wire::put_u32(hello, static_cast<std::uint32_t>(token.size()));
  hello.insert(hello.end(), token.begin(), token.end());
  wire::put_u32(hello, static_cast<std::uint32_t>(rank));
  const Deadline reply_deadline = std::max(deadline, Clock::now() + std::chrono::seconds(1));
  IoStatus s = send_all(fd_.get(), hello.data(), hello.size(), reply_deadline);
  std::uint8_t answer = 0;
  if (s == IoStatus::ok) s = recv_all(fd_.get(), &answer, 1, reply_deadline);
  if (s != IoStatus::ok || answer != wire::kAccepted) {
    fd_.reset();
    // Only an explicit refusal means a wrong token. A connection closed unanswered is a store that
    // went away before serving it: under `mixle launch` a rank connects to the socket the launcher
    // bound as soon as it starts, so a rank 0 that ends before serving closes it under the queue.
    std::string why;
    if (s == IoStatus::ok && answer == wire::kRefused)
      why = "refused this process: wrong run token (TORCHELASTIC_RUN_ID/MIXLE_RUN_TOKEN must match rank 0's)";
    else if (s == IoStatus::ok)
      why = "answered the handshake with an unknown byte: is another program listening on this port?";
    else if (s == IoStatus::closed)
      why =
          "closed the connection before answering: rank 0 ended before serving its store, or the port is not a "
          "mixle store's";
    else
      why = "did not answer the handshake: " + describe(s);
    throw CommunicationError("the rendezvous store at " + address_ + " " + why);
  }
}

StoreClient::~StoreClient() {
  // Unwinding: close without goodbye, so the server reports this rank lost.
  if (std::uncaught_exceptions() > uncaught_at_creation_)
    abandon();
  else
    close();
}

void StoreClient::abandon() noexcept {
  std::lock_guard lock(mutex_);
  fd_.reset();
}

void StoreClient::close() noexcept {
  std::lock_guard lock(mutex_);
  if (!fd_.valid()) return;
  std::vector<char> msg;
  msg.push_back(static_cast<char>(wire::Op::bye));
  wire::put_i64(msg, 0);
  wire::put_u32(msg, 0);
  wire::put_u32(msg, 0);
  Deadline d = Clock::now() + std::chrono::seconds(2);
  if (send_all(fd_.get(), msg.data(), msg.size(), d) == IoStatus::ok) {
    char reply[wire::kReplyHeaderBytes];
    (void)recv_all(fd_.get(), reply, sizeof reply, d);
  }
  fd_.reset();
}

void StoreClient::fail(const std::string& what) {
  fd_.reset();  // the stream position is unknown now; never reuse it
  throw CommunicationError("rendezvous store at " + address_ + " (hosted by rank 0): " + what);
}

StoreClient::Reply StoreClient::request(std::uint8_t op, std::int64_t arg, std::string_view key, std::string_view value,
                                        Deadline deadline) {
  check_key(key);
  if (value.size() > wire::kMaxValueBytes)
    throw InvalidInput("store value of " + std::to_string(value.size()) + " bytes; at most " +
                       std::to_string(wire::kMaxValueBytes) + " are accepted");
  std::lock_guard lock(mutex_);
  if (!fd_.valid()) fail("connection already closed");
  std::vector<char> msg;
  msg.push_back(static_cast<char>(op));
  wire::put_i64(msg, arg);
  wire::put_u32(msg, static_cast<std::uint32_t>(key.size()));
  wire::put_u32(msg, static_cast<std::uint32_t>(value.size()));
  msg.insert(msg.end(), key.begin(), key.end());
  msg.insert(msg.end(), value.begin(), value.end());
  IoStatus s = send_all(fd_.get(), msg.data(), msg.size(), deadline);
  if (s != IoStatus::ok) fail("sending a request: " + describe(s));
  char head[wire::kReplyHeaderBytes];
  s = recv_all(fd_.get(), head, sizeof head, deadline);
  if (s != IoStatus::ok) fail("waiting for a reply: " + describe(s));
  Reply reply{static_cast<std::uint8_t>(head[0]), wire::get_i64(head + 1), {}};
  std::uint32_t len = wire::get_u32(head + 9);
  if (len > wire::kMaxValueBytes) fail("reply announces " + std::to_string(len) + " bytes");
  reply.value.resize(len);
  s = recv_all(fd_.get(), reply.value.data(), len, deadline);
  if (s != IoStatus::ok) fail("reading a reply: " + describe(s));
  if (reply.status == static_cast<std::uint8_t>(wire::Status::bad_request))
    throw CommunicationError("rendezvous store at " + address_ +
                             " rejected the request: " + std::string(reply.value.begin(), reply.value.end()));
  return reply;
}

void StoreClient::set(std::string_view key, std::string_view value) {
  request(static_cast<std::uint8_t>(wire::Op::set), 0, key, value, Clock::now() + timeout_);
}

std::optional<std::vector<char>> StoreClient::try_get(std::string_view key) {
  Reply r = request(static_cast<std::uint8_t>(wire::Op::get), 0, key, {}, Clock::now() + timeout_);
  if (r.status == static_cast<std::uint8_t>(wire::Status::not_found)) return std::nullopt;
  return std::move(r.value);
}

std::vector<char> StoreClient::get(std::string_view key, std::chrono::milliseconds timeout) {
  wait({std::string(key)}, timeout);
  auto value = try_get(key);
  if (!value) fail("key '" + std::string(key) + "' vanished after wait");
  return std::move(*value);
}

void StoreClient::wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) {
  for (const auto& k : keys) check_key(k);
  std::vector<char> list = wire::encode_keys(keys);
  Reply r = request(static_cast<std::uint8_t>(wire::Op::wait), timeout.count(), {}, {list.data(), list.size()},
                    Clock::now() + timeout + kReplyGrace);
  if (r.status == static_cast<std::uint8_t>(wire::Status::timed_out)) {
    std::string missing;
    for (const auto& k : keys) {
      if (!missing.empty()) missing += ", ";
      missing += "'" + k + "'";
    }
    throw CommunicationError("rendezvous store at " + address_ + ": keys " + missing + " were not all set within " +
                             std::to_string(timeout.count()) + " ms (a peer did not arrive or died)");
  }
}

bool StoreClient::check(const std::vector<std::string>& keys) {
  for (const auto& k : keys) check_key(k);
  std::vector<char> list = wire::encode_keys(keys);
  return request(static_cast<std::uint8_t>(wire::Op::check), 0, {}, {list.data(), list.size()}, Clock::now() + timeout_)
             .arg == 1;
}

std::int64_t StoreClient::add(std::string_view key, std::int64_t delta) {
  return request(static_cast<std::uint8_t>(wire::Op::add), delta, key, {}, Clock::now() + timeout_).arg;
}

std::vector<int> StoreClient::lost_ranks() {
  Reply r = request(static_cast<std::uint8_t>(wire::Op::lost), 0, {}, {}, Clock::now() + timeout_);
  std::vector<int> ranks;
  for (std::size_t i = 0; i + 4 <= r.value.size(); i += 4)
    ranks.push_back(static_cast<int>(wire::get_u32(r.value.data() + i)));
  return ranks;
}

}  // namespace mixle::comms
