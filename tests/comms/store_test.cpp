// Protocol tests of the rendezvous store: normal operation across clients, deadlines, and that
// refused, oversized, truncated or garbage connections are dropped without disturbing others.
#include "comms/store.hpp"
#include "comms/socket.hpp"
#include "comms/store_protocol.hpp"

#include <mixle/error.hpp>

#include <gtest/gtest.h>

#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <string>
#include <thread>

namespace mixle::comms {
namespace {

using namespace std::chrono_literals;
constexpr const char* kToken = "test-run-token";

std::unique_ptr<StoreClient> connect(const StoreServer& server, int rank = -1, const std::string& token = kToken) {
  return std::make_unique<StoreClient>("127.0.0.1", server.port(), token, rank, 2s, 5s);
}

// Descriptor 0 is a descriptor like any other: a process started with stdin closed gets its
// first socket there, and that socket must be closed when its owner goes.
TEST(FileDescriptorTest, ClosesDescriptorZeroToo) {
  const int saved_stdin = ::dup(0);
  ASSERT_GE(saved_stdin, 0);
  ::close(0);
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_EQ(fd, 0) << "the lowest free descriptor";
  { FileDescriptor owner(fd); }
  const bool still_open = ::fcntl(0, F_GETFD) != -1;
  ::dup2(saved_stdin, 0);
  ::close(saved_stdin);
  EXPECT_FALSE(still_open);
}

// An error that waiting cannot cure (here ENOTSOCK: a pipe is not a socket) fails the transfer
// at once; only EAGAIN waits for the descriptor, until the deadline.
TEST(FileDescriptorTest, AnErrorOtherThanWouldBlockFailsAtOnce) {
  int ends[2];
  ASSERT_EQ(::pipe(ends), 0);
  const FileDescriptor read_end(ends[0]), write_end(ends[1]);
  const auto t0 = Clock::now();
  char byte = 0;
  EXPECT_EQ(recv_all(read_end.get(), &byte, 1, Clock::now() + 5s), IoStatus::failed);
  EXPECT_EQ(send_all(write_end.get(), &byte, 1, Clock::now() + 5s), IoStatus::failed);
  EXPECT_LT(Clock::now() - t0, 2s);
}

// A name that cannot resolve (".invalid" never does) gives no descriptor and says why.
TEST(Socket, AnUnresolvableHostIsNamedInTheError) {
  std::string error;
  const FileDescriptor fd = try_connect("no-such-host.invalid", 29500, error);
  EXPECT_FALSE(fd.valid());
  EXPECT_NE(error.find("cannot resolve 'no-such-host.invalid'"), std::string::npos) << error;
}

// A port nobody listens on refuses the connection: the error names the address and the reason.
TEST(Socket, ARefusedConnectionNamesTheAddressAndTheReason) {
  const int port = find_free_port();
  std::string error;
  const FileDescriptor fd = try_connect("127.0.0.1", port, error);
  EXPECT_FALSE(fd.valid());
  EXPECT_EQ(error, "connect to 127.0.0.1:" + std::to_string(port) + " failed: " + std::strerror(ECONNREFUSED));
}

// A raw connection for speaking broken protocol at the server. Non-blocking, as the store's own
// sockets are: send_all and recv_all keep their deadlines only then, so a server that neither
// answers nor closes fails the test within its deadline instead of hanging it.
struct RawConnection {
  FileDescriptor fd;
  explicit RawConnection(int port) {
    std::string error;
    fd = try_connect("127.0.0.1", port, error);
    EXPECT_TRUE(fd.valid()) << error;
    if (fd.valid()) make_nonblocking(fd.get());
  }
  void send(const std::vector<char>& bytes) {
    ASSERT_EQ(send_all(fd.get(), bytes.data(), bytes.size(), Clock::now() + 2s), IoStatus::ok);
  }
  // True when the server closes the connection within the deadline (after any pending bytes).
  bool closed_by_server(std::chrono::milliseconds within = 3s) {
    char buf[256];
    Deadline d = Clock::now() + within;
    for (;;) {
      IoStatus s = recv_all(fd.get(), buf, 1, d);
      if (s == IoStatus::closed) return true;
      if (s != IoStatus::ok) return false;
    }
  }
};

std::vector<char> handshake(const std::string& token, int rank) {
  std::vector<char> out;
  wire::put_u32(out, wire::kHandshakeMagic);
  wire::put_u32(out, wire::kVersion);
  wire::put_u32(out, static_cast<std::uint32_t>(token.size()));
  out.insert(out.end(), token.begin(), token.end());
  wire::put_u32(out, static_cast<std::uint32_t>(rank));
  return out;
}

std::vector<char> request_header(wire::Op op, std::uint32_t key_len, std::uint32_t value_len) {
  std::vector<char> out{static_cast<char>(op)};
  wire::put_i64(out, 0);
  wire::put_u32(out, key_len);
  wire::put_u32(out, value_len);
  return out;
}

// The server still serves a well-behaved client.
void expect_still_serving(const StoreServer& server) {
  auto c = connect(server);
  c->set("alive", "yes");
  auto v = c->get("alive", 1s);
  EXPECT_EQ(std::string(v.begin(), v.end()), "yes");
}

std::string text(const std::vector<char>& v) { return {v.begin(), v.end()}; }

// A store address may be IPv6: the server listens on the address it is given, in that address's
// family; only the wildcard ("" or "*") is IPv4. Where this machine has no IPv6 loopback, the
// refusal names the address.
TEST(Socket, AnIpv6AddressIsListenedOnInItsFamily) {
  auto family_of = [](int fd) {
    sockaddr_storage addr{};
    socklen_t len = sizeof addr;
    EXPECT_EQ(::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len), 0);
    return addr.ss_family;
  };
  EXPECT_EQ(family_of(listen_on("", 0).get()), AF_INET);
  EXPECT_EQ(family_of(listen_on("*", 0).get()), AF_INET);
  FileDescriptor probe(::socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in6 loopback{};
  loopback.sin6_family = AF_INET6;
  loopback.sin6_addr = in6addr_loopback;
  if (!probe.valid() || ::bind(probe.get(), reinterpret_cast<sockaddr*>(&loopback), sizeof loopback) != 0) {
    try {
      (void)listen_on("::1", 0);
      ADD_FAILURE() << "listening on ::1 without an IPv6 loopback should fail";
    } catch (const CommunicationError& e) {
      EXPECT_NE(std::string(e.what()).find("::1"), std::string::npos) << e.what();
    }
    return;
  }
  const FileDescriptor listener = listen_on("::1", 0);
  EXPECT_EQ(family_of(listener.get()), AF_INET6);
  std::string error;
  const FileDescriptor client = try_connect("::1", local_port(listener.get()), error);
  EXPECT_TRUE(client.valid()) << error;
}

TEST(Store, SetGetCheckAcrossClients) {
  StoreServer server("127.0.0.1", 0, kToken);
  auto a = connect(server, 0), b = connect(server, 1);
  EXPECT_FALSE(a->try_get("k").has_value());
  EXPECT_FALSE(b->check({"k"}));
  a->set("k", "value-from-a");
  EXPECT_EQ(text(b->get("k", 1s)), "value-from-a");
  EXPECT_TRUE(b->check({"k"}));
  b->set("k", std::string("\0binary\xff", 8));
  EXPECT_EQ(a->get("k", 1s).size(), 8u);
}

// A server on a socket bound before it (a launcher's, handed to rank 0) serves on that port and
// marks the socket close-on-exec, so the process's own children do not hold the port.
TEST(Store, ServesOnASocketBoundBeforeIt) {
  FileDescriptor listener = listen_on("127.0.0.1", 0);
  const int fd = listener.get(), port = local_port(fd);
  ASSERT_EQ(::fcntl(fd, F_SETFD, 0), 0);  // as a socket inherited across exec arrives
  StoreServer server(std::move(listener), kToken);
  EXPECT_EQ(server.port(), port);
  EXPECT_NE(::fcntl(fd, F_GETFD) & FD_CLOEXEC, 0);
  auto a = connect(server, 0), b = connect(server, 1);
  a->set("k", "served");
  EXPECT_EQ(text(b->get("k", 1s)), "served");
}

// A client says why its handshake failed: a store that closes the connection unanswered (a rank 0
// that ended before serving the socket the launcher handed it) is not a wrong token, a listener
// that answers with a byte no store sends is not a store, and one that never answers is named so
// once the deadline has passed.
TEST(Store, AnUnansweredOrForeignHandshakeIsNamedAsSuch) {
  enum class Peer { closes, answers_garbage, stays_silent };
  const auto handshake_error = [](Peer peer) -> std::string {
    FileDescriptor listener = listen_on("127.0.0.1", 0);
    const int port = local_port(listener.get());
    std::atomic<bool> client_done{false};
    std::thread other([&] {
      FileDescriptor c(::accept(listener.get(), nullptr, nullptr));
      char hello[64];
      [[maybe_unused]] auto n = ::recv(c.get(), hello, sizeof hello, 0);
      if (peer == Peer::answers_garbage) {
        [[maybe_unused]] auto m = ::send(c.get(), "?", 1, MSG_NOSIGNAL);
      }
      while (peer == Peer::stays_silent && !client_done) std::this_thread::sleep_for(10ms);
    });
    std::string what = "connected";
    try {
      StoreClient client("127.0.0.1", port, kToken, 1, 200ms, 200ms);
    } catch (const CommunicationError& e) {
      what = e.what();
    }
    client_done = true;
    other.join();
    return what;
  };
  const std::string closed = handshake_error(Peer::closes);
  EXPECT_NE(closed.find("closed the connection before answering: rank 0 ended before serving its store"),
            std::string::npos)
      << closed;
  EXPECT_EQ(closed.find("wrong run token"), std::string::npos) << closed;
  const std::string foreign = handshake_error(Peer::answers_garbage);
  EXPECT_NE(foreign.find("answered the handshake with an unknown byte"), std::string::npos) << foreign;
  const std::string silent = handshake_error(Peer::stays_silent);
  EXPECT_NE(silent.find("did not answer the handshake: timed out"), std::string::npos) << silent;
}

TEST(Store, LargeValueRoundTrips) {
  StoreServer server("127.0.0.1", 0, kToken);
  auto a = connect(server), b = connect(server);
  std::string big(8 << 20, '\0');
  for (std::size_t i = 0; i < big.size(); ++i) big[i] = static_cast<char>(i * 131 % 251);
  a->set("big", big);
  EXPECT_EQ(text(b->get("big", 5s)), big);
}

TEST(Store, OversizedKeysValuesAndTokensAreRefusedBeforeSending) {
  StoreServer server("127.0.0.1", 0, kToken);
  auto a = connect(server);
  const std::string long_key(wire::kMaxKeyBytes + 1, 'k');
  try {
    a->set(long_key, "v");
    ADD_FAILURE() << "a key over the limit was sent";
  } catch (const InvalidInput& e) {
    EXPECT_NE(std::string(e.what()).find("store key of " + std::to_string(wire::kMaxKeyBytes + 1) + " bytes"),
              std::string::npos)
        << e.what();
  }
  try {
    a->set("k", std::string(wire::kMaxValueBytes + 1, 'v'));
    ADD_FAILURE() << "a value over the limit was sent";
  } catch (const InvalidInput& e) {
    EXPECT_NE(std::string(e.what()).find("at most " + std::to_string(wire::kMaxValueBytes)), std::string::npos)
        << e.what();
  }
  // The connection is still good: nothing was sent.
  a->set(std::string(wire::kMaxKeyBytes, 'k'), "fits");
  EXPECT_EQ(text(a->get(std::string(wire::kMaxKeyBytes, 'k'), 1s)), "fits");
  try {
    StoreClient("127.0.0.1", server.port(), std::string(wire::kMaxTokenBytes + 1, 't'), 1, 1s, 1s);
    ADD_FAILURE() << "a token over the limit was sent";
  } catch (const InvalidInput& e) {
    EXPECT_NE(std::string(e.what()).find("store token is " + std::to_string(wire::kMaxTokenBytes + 1) + " bytes"),
              std::string::npos)
        << e.what();
  }
}

TEST(Store, AddToAValueThatIsNotACountIsRefusedAndTheKeyKept) {
  StoreServer server("127.0.0.1", 0, kToken);
  auto a = connect(server);
  a->set("k", "abc");
  try {
    a->add("k", 1);
    ADD_FAILURE() << "add on a non-integer value succeeded";
  } catch (const CommunicationError& e) {
    EXPECT_NE(std::string(e.what()).find("rejected the request: value is not an integer"), std::string::npos)
        << e.what();
  }
  EXPECT_EQ(text(a->get("k", 1s)), "abc");  // the connection and the value are still good
  EXPECT_EQ(a->add("n", 5), 5);
  try {
    StoreServer("127.0.0.1", 0, std::string(wire::kMaxTokenBytes + 1, 't'));
    ADD_FAILURE() << "a server took a token over the limit";
  } catch (const InvalidInput& e) {
    EXPECT_NE(std::string(e.what()).find("store token is"), std::string::npos) << e.what();
  }
}

// send_all and recv_all move every byte whatever size each system call takes — one byte
// included (a send of exactly one byte is progress, not a failure) — and report a peer that
// closed the connection.
TEST(Socket, SendAllAndRecvAllMoveEveryByteEvenOneAtATime) {
  int pair[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, pair), 0);
  const Deadline deadline = Clock::now() + 5s;
  const char one = 'x';
  EXPECT_EQ(send_all(pair[0], &one, 1, deadline), IoStatus::ok);
  char got = 0;
  EXPECT_EQ(recv_all(pair[1], &got, 1, deadline), IoStatus::ok);
  EXPECT_EQ(got, 'x');
  const std::string many(100000, 'y');  // more than one call's worth on a socketpair
  std::thread writer([&] { EXPECT_EQ(send_all(pair[0], many.data(), many.size(), deadline), IoStatus::ok); });
  std::string back(many.size(), '\0');
  EXPECT_EQ(recv_all(pair[1], back.data(), back.size(), deadline), IoStatus::ok);
  writer.join();
  EXPECT_EQ(back, many);
  ::close(pair[0]);
  EXPECT_EQ(recv_all(pair[1], &got, 1, deadline), IoStatus::closed);
  ::close(pair[1]);
}

// A signal that interrupts the wait for data (poll fails with EINTR) is not a failure: the read
// waits on and returns the bytes sent after it.
TEST(Socket, ASignalDuringTheWaitIsNotAFailure) {
  int pair[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, pair), 0);
  ASSERT_EQ(::fcntl(pair[1], F_SETFL, ::fcntl(pair[1], F_GETFL) | O_NONBLOCK), 0);
  struct sigaction quiet {
  }, previous{};
  quiet.sa_handler = [](int) {};
  sigemptyset(&quiet.sa_mask);
  quiet.sa_flags = 0;  // no SA_RESTART: the wait sees EINTR
  ASSERT_EQ(::sigaction(SIGUSR1, &quiet, &previous), 0);
  char got = 0;
  IoStatus status = IoStatus::failed;
  std::thread reader([&] { status = recv_all(pair[1], &got, 1, Clock::now() + 10s); });
  std::this_thread::sleep_for(200ms);  // the reader is waiting in poll by now
  ::pthread_kill(reader.native_handle(), SIGUSR1);
  std::this_thread::sleep_for(100ms);
  const char one = 'z';
  EXPECT_EQ(send_all(pair[0], &one, 1, Clock::now() + 5s), IoStatus::ok);
  reader.join();
  ::sigaction(SIGUSR1, &previous, nullptr);
  EXPECT_EQ(status, IoStatus::ok);
  EXPECT_EQ(got, 'z');
  ::close(pair[0]);
  ::close(pair[1]);
}

TEST(Store, AddIsAtomicAcrossClients) {
  StoreServer server("127.0.0.1", 0, kToken);
  constexpr int kClients = 4, kAdds = 50;
  std::vector<std::thread> threads;
  for (int c = 0; c < kClients; ++c)
    threads.emplace_back([&, c] {
      auto client = connect(server, c);
      for (int i = 0; i < kAdds; ++i) client->add("counter", c + 1);
    });
  for (auto& t : threads) t.join();
  auto client = connect(server);
  EXPECT_EQ(client->add("counter", 0), kAdds * (1 + 2 + 3 + 4));
  EXPECT_EQ(text(client->get("counter", 1s)), std::to_string(kAdds * 10));
}

TEST(Store, WaitReturnsWhenAnotherClientSets) {
  StoreServer server("127.0.0.1", 0, kToken);
  auto waiter = connect(server, 0), setter = connect(server, 1);
  std::atomic<bool> done{false};
  std::thread t([&] {
    waiter->wait({"x", "y"}, 10s);
    done = true;
  });
  setter->set("x", "1");
  std::this_thread::sleep_for(100ms);
  EXPECT_FALSE(done.load());  // "y" is still missing
  setter->set("y", "2");
  t.join();
  EXPECT_TRUE(done.load());
}

TEST(Store, WaitTimesOutNamingTheKey) {
  StoreServer server("127.0.0.1", 0, kToken);
  auto c = connect(server);
  auto start = Clock::now();
  try {
    c->wait({"never-set"}, 300ms);
    FAIL() << "wait returned";
  } catch (const CommunicationError& e) {
    EXPECT_NE(std::string(e.what()).find("never-set"), std::string::npos) << e.what();
  }
  EXPECT_LT(Clock::now() - start, 3s);
  EXPECT_GE(Clock::now() - start, 250ms);
  c->set("after", "timeout");  // the connection is still usable
  EXPECT_TRUE(c->check({"after"}));
}

TEST(Store, WrongTokenIsRefusedAndOthersUnaffected) {
  StoreServer server("127.0.0.1", 0, kToken);
  auto good = connect(server, 0);
  good->set("before", "1");
  EXPECT_THROW(connect(server, 1, "another-job"), CommunicationError);
  EXPECT_GE(server.rejected_connections(), 1u);
  EXPECT_EQ(text(good->get("before", 1s)), "1");
  expect_still_serving(server);
}

// The server closes a connection once its last reply is out: the refusal of a wrong token, and
// the answer to a goodbye.
TEST(Store, ARefusalOrAGoodbyeIsFollowedByTheClose) {
  StoreServer server("127.0.0.1", 0, kToken);
  {
    RawConnection raw(server.port());
    raw.send(handshake("another-job", 1));
    char answer = 0;
    ASSERT_EQ(recv_all(raw.fd.get(), &answer, 1, Clock::now() + 3s), IoStatus::ok);
    EXPECT_EQ(answer, static_cast<char>(wire::kRefused));
    EXPECT_TRUE(raw.closed_by_server());
  }
  {
    RawConnection raw(server.port());
    raw.send(handshake(kToken, 2));
    raw.send(request_header(wire::Op::bye, 0, 0));
    char reply[1 + wire::kReplyHeaderBytes] = {};
    ASSERT_EQ(recv_all(raw.fd.get(), reply, sizeof reply, Clock::now() + 3s), IoStatus::ok);
    EXPECT_EQ(reply[0], static_cast<char>(wire::kAccepted));
    EXPECT_EQ(reply[1], static_cast<char>(wire::Status::ok));
    EXPECT_TRUE(raw.closed_by_server());
  }
  expect_still_serving(server);
}

// A client whose connect deadline is already spent when it reaches the server (a connect
// timeout of 0) still waits a moment for the handshake's answer.
TEST(Store, TheHandshakeIsAnsweredAfterAnExpiredConnectDeadline) {
  StoreServer server("127.0.0.1", 0, kToken);
  for (int i = 0; i < 5; ++i) {
    StoreClient client("127.0.0.1", server.port(), kToken, -1, 0ms, 5s);
    client.set("k", "v");
  }
  EXPECT_EQ(server.rejected_connections(), 0u);
}

TEST(Store, HugeLengthFieldsCloseTheConnection) {
  StoreServer server("127.0.0.1", 0, kToken);
  auto good = connect(server, 0);
  {  // a value length far above the 64 MiB bound
    RawConnection raw(server.port());
    raw.send(handshake(kToken, -1));
    raw.send(request_header(wire::Op::set, 1, 0xFFFFFFF0u));
    EXPECT_TRUE(raw.closed_by_server());
  }
  {  // a key length above the 4 KiB bound
    RawConnection raw(server.port());
    raw.send(handshake(kToken, -1));
    raw.send(request_header(wire::Op::get, wire::kMaxKeyBytes + 1, 0));
    EXPECT_TRUE(raw.closed_by_server());
  }
  {  // a token length above its bound, before authentication
    RawConnection raw(server.port());
    std::vector<char> hello;
    wire::put_u32(hello, wire::kHandshakeMagic);
    wire::put_u32(hello, wire::kVersion);
    wire::put_u32(hello, 0x7FFFFFFF);
    raw.send(hello);
    EXPECT_TRUE(raw.closed_by_server());
  }
  EXPECT_GE(server.rejected_connections(), 3u);
  good->set("k", "v");
  EXPECT_EQ(text(good->get("k", 1s)), "v");
  expect_still_serving(server);
}

TEST(Store, TruncatedMessagesOnlyDropTheirConnection) {
  StoreServer server("127.0.0.1", 0, kToken);
  auto good = connect(server, 0);
  {  // half a header, then hang up
    RawConnection raw(server.port());
    raw.send(handshake(kToken, -1));
    auto head = request_header(wire::Op::set, 3, 10);
    head.resize(7);
    raw.send(head);
  }
  {  // a full header and a partial body, then hang up
    RawConnection raw(server.port());
    raw.send(handshake(kToken, -1));
    auto msg = request_header(wire::Op::set, 3, 10);
    for (char ch : std::string("keyval")) msg.push_back(ch);
    raw.send(msg);
  }
  {  // a partial handshake left idle: the server must keep answering others meanwhile
    RawConnection raw(server.port());
    auto hello = handshake(kToken, -1);
    hello.resize(5);
    raw.send(hello);
    expect_still_serving(server);
  }
  EXPECT_FALSE(good->check({"key"}));  // the truncated set never happened
  expect_still_serving(server);
}

// A connection that has not finished its handshake when the timeout passes is closed (and
// counted as refused), so idle strays cannot pile up; a client that finished it may stay idle.
TEST(Store, AHandshakeLeftUnfinishedIsClosedAtItsDeadline) {
  EXPECT_EQ(StoreServer::kHandshakeTimeout, 10s) << "the default docs/distributed.md states";
  constexpr auto kTimeout = 300ms;
  StoreServer server("127.0.0.1", 0, kToken, kTimeout);
  auto good = connect(server, 0);
  const auto start = Clock::now();
  RawConnection raw(server.port());
  auto hello = handshake(kToken, -1);
  hello.resize(5);
  raw.send(hello);
  EXPECT_TRUE(raw.closed_by_server(5s));
  EXPECT_GE(Clock::now() - start, kTimeout);
  EXPECT_EQ(server.rejected_connections(), 1u);
  std::this_thread::sleep_for(kTimeout);  // the finished handshake is past its deadline too
  good->set("after", "idle");
  EXPECT_TRUE(good->check({"after"}));
  expect_still_serving(server);
}

TEST(Store, GarbageBytesAreRefused) {
  StoreServer server("127.0.0.1", 0, kToken);
  auto good = connect(server, 0);
  {  // garbage instead of a handshake
    RawConnection raw(server.port());
    std::vector<char> junk;
    for (int i = 0; i < 64; ++i) junk.push_back(static_cast<char>(i * 37 + 11));
    raw.send(junk);
    EXPECT_TRUE(raw.closed_by_server());
  }
  // An unknown op after a valid handshake: far out, and just outside the ops 1–7 at either end.
  for (const int op : {99, 0, 8}) {
    SCOPED_TRACE(op);
    RawConnection raw(server.port());
    raw.send(handshake(kToken, -1));
    raw.send(request_header(static_cast<wire::Op>(op), 0, 0));
    EXPECT_TRUE(raw.closed_by_server());
  }
  {  // a wait whose key list is malformed
    RawConnection raw(server.port());
    raw.send(handshake(kToken, -1));
    auto msg = request_header(wire::Op::wait, 0, 4);
    wire::put_u32(msg, 5);  // claims 5 keys, carries none
    raw.send(msg);
    EXPECT_TRUE(raw.closed_by_server());
  }
  good->set("k", "v");
  EXPECT_TRUE(good->check({"k"}));
  expect_still_serving(server);
}

// Requests that arrive with the handshake are read in turn, each once the reply before it is
// sent: a bad one closes the connection then, as it would have on arrival; a good one is served.
TEST(Store, RequestsSentWithTheHandshakeAreReadInTurn) {
  StoreServer server("127.0.0.1", 0, kToken);
  RawConnection raw(server.port());
  std::vector<char> both = handshake(kToken, -1);  // accepted: a reply byte to send first
  const std::vector<char> unknown = request_header(static_cast<wire::Op>(99), 0, 0);
  both.insert(both.end(), unknown.begin(), unknown.end());
  raw.send(both);
  char accepted = 0;
  ASSERT_EQ(recv_all(raw.fd.get(), &accepted, 1, Clock::now() + 3s), IoStatus::ok);
  EXPECT_EQ(accepted, static_cast<char>(wire::kAccepted));
  EXPECT_TRUE(raw.closed_by_server());
  EXPECT_EQ(server.rejected_connections(), 1u);
  // A good request sent with the handshake is served (the token was once compared after the
  // request's bytes had moved over it, refusing such a client).
  RawConnection pipelined(server.port());
  std::vector<char> hello_and_set = handshake(kToken, -1);
  const std::vector<char> set = request_header(wire::Op::set, 1, 2);
  hello_and_set.insert(hello_and_set.end(), set.begin(), set.end());
  for (char ch : std::string("kvv")) hello_and_set.push_back(ch);
  pipelined.send(hello_and_set);
  char replies[1 + 13] = {};
  ASSERT_EQ(recv_all(pipelined.fd.get(), replies, sizeof replies, Clock::now() + 3s), IoStatus::ok);
  EXPECT_EQ(replies[0], static_cast<char>(wire::kAccepted));
  auto c = connect(server);
  EXPECT_EQ(text(c->get("k", 1s)), "vv");
  EXPECT_EQ(server.rejected_connections(), 1u);
}

// A client waiting for keys must not send: anything it does is a protocol violation that
// closes its connection at once (its wait would otherwise hold it for ten seconds).
TEST(Store, AClientThatSendsWhileItWaitsIsDropped) {
  StoreServer server("127.0.0.1", 0, kToken);
  RawConnection raw(server.port());
  raw.send(handshake(kToken, -1));
  char accepted = 0;
  ASSERT_EQ(recv_all(raw.fd.get(), &accepted, 1, Clock::now() + 3s), IoStatus::ok);
  ASSERT_EQ(accepted, static_cast<char>(wire::kAccepted));
  const std::vector<char> keys = wire::encode_keys({"never-set"});
  std::vector<char> wait{static_cast<char>(wire::Op::wait)};
  wire::put_i64(wait, 10000);  // milliseconds
  wire::put_u32(wait, 0);
  wire::put_u32(wait, static_cast<std::uint32_t>(keys.size()));
  wait.insert(wait.end(), keys.begin(), keys.end());
  raw.send(wait);
  std::this_thread::sleep_for(250ms);  // the server reads the wait alone and starts waiting
  raw.send({'x'});
  EXPECT_TRUE(raw.closed_by_server(5s));
  EXPECT_EQ(server.rejected_connections(), 1u);
  expect_still_serving(server);
}

// A value of the protocol's largest size is stored and read back whole; a request announcing
// one byte more is a violation, refused from its header before any value byte is read.
TEST(Store, AValueOfTheLargestSizeIsStoredAndOneByteMoreIsRefused) {
  StoreServer server("127.0.0.1", 0, kToken);
  auto c = connect(server);
  const std::string big(wire::kMaxValueBytes, 'v');
  c->set("big", big);
  EXPECT_EQ(c->get("big", 10s).size(), big.size());
  RawConnection raw(server.port());
  raw.send(handshake(kToken, -1));
  char accepted = 0;
  ASSERT_EQ(recv_all(raw.fd.get(), &accepted, 1, Clock::now() + 3s), IoStatus::ok);
  ASSERT_EQ(accepted, static_cast<char>(wire::kAccepted));
  raw.send(request_header(wire::Op::set, 1, wire::kMaxValueBytes + 1));
  EXPECT_TRUE(raw.closed_by_server());
  EXPECT_EQ(server.rejected_connections(), 1u);
  expect_still_serving(server);
}

// Every reply carries the arg the protocol's table gives it, and 0 where it gives none
// (docs/distributed.md): seen on the wire, for one request of each op, sent together.
TEST(Store, EveryReplyCarriesTheArgItsOpGivesIt) {
  StoreServer server("127.0.0.1", 0, kToken);
  {
    RawConnection vanished(server.port());  // rank 3 leaves without a goodbye: `lost` names it
    vanished.send(handshake(kToken, 3));
    char accepted = 0;
    ASSERT_EQ(recv_all(vanished.fd.get(), &accepted, 1, Clock::now() + 2s), IoStatus::ok);
  }
  const auto deadline = Clock::now() + 3s;
  while (server.lost_ranks().empty() && Clock::now() < deadline) std::this_thread::sleep_for(10ms);
  ASSERT_EQ(server.lost_ranks(), std::vector<int>{3});

  RawConnection raw(server.port());
  std::vector<char> all = handshake(kToken, -1);
  auto request = [&](wire::Op op, std::int64_t arg, const std::string& key, const std::vector<char>& value) {
    all.push_back(static_cast<char>(op));
    wire::put_i64(all, arg);
    wire::put_u32(all, static_cast<std::uint32_t>(key.size()));
    wire::put_u32(all, static_cast<std::uint32_t>(value.size()));
    all.insert(all.end(), key.begin(), key.end());
    all.insert(all.end(), value.begin(), value.end());
  };
  request(wire::Op::set, 0, "k", {'v'});
  request(wire::Op::get, 0, "k", {});
  request(wire::Op::check, 0, "", wire::encode_keys({"k"}));
  request(wire::Op::check, 0, "", wire::encode_keys({"k", "absent"}));
  request(wire::Op::add, 5, "count", {});
  request(wire::Op::wait, 1000, "", wire::encode_keys({"k"}));
  request(wire::Op::lost, 0, "", {});
  request(wire::Op::wait, 5000, "", wire::encode_keys({"later"}));  // released by another client
  raw.send(all);
  char accepted = 0;
  ASSERT_EQ(recv_all(raw.fd.get(), &accepted, 1, Clock::now() + 3s), IoStatus::ok);
  ASSERT_EQ(accepted, static_cast<char>(wire::kAccepted));
  auto expect_reply = [&](const char* op, std::int64_t arg, const std::vector<char>& value,
                          wire::Status status = wire::Status::ok) {
    char head[wire::kReplyHeaderBytes] = {};
    ASSERT_EQ(recv_all(raw.fd.get(), head, sizeof head, Clock::now() + 3s), IoStatus::ok) << op;
    EXPECT_EQ(head[0], static_cast<char>(status)) << op;
    EXPECT_EQ(wire::get_i64(head + 1), arg) << op;
    std::vector<char> got(wire::get_u32(head + 9));
    if (!got.empty()) ASSERT_EQ(recv_all(raw.fd.get(), got.data(), got.size(), Clock::now() + 3s), IoStatus::ok) << op;
    EXPECT_EQ(got, value) << op;
  };
  std::vector<char> three;
  wire::put_u32(three, 3);
  expect_reply("set", 0, {});
  expect_reply("get", 0, {'v'});
  expect_reply("check (present)", 1, {});
  expect_reply("check (absent)", 0, {});
  expect_reply("add", 5, {});
  expect_reply("wait (present)", 0, {});
  expect_reply("lost", 0, three);
  connect(server)->set("later", "x");
  expect_reply("wait (released)", 0, {});
  all.clear();
  request(wire::Op::wait, 100, "", wire::encode_keys({"never"}));  // times out
  request(wire::Op::bye, 0, "", {});
  raw.send(all);
  expect_reply("wait (timed out)", 0, {}, wire::Status::timed_out);
  expect_reply("bye", 0, {});
  EXPECT_TRUE(raw.closed_by_server());
}

TEST(Store, RankThatDisconnectsWithoutGoodbyeIsLost) {
  StoreServer server("127.0.0.1", 0, kToken);
  auto observer = connect(server, 0);
  {
    auto polite = connect(server, 2);
    polite->set("k", "v");
  }  // says goodbye
  {
    RawConnection raw(server.port());
    raw.send(handshake(kToken, 3));
    char accepted = 0;
    ASSERT_EQ(recv_all(raw.fd.get(), &accepted, 1, Clock::now() + 2s), IoStatus::ok);
  }  // vanishes like a killed process
  auto deadline = Clock::now() + 3s;
  while (observer->lost_ranks().empty() && Clock::now() < deadline) std::this_thread::sleep_for(10ms);
  EXPECT_EQ(observer->lost_ranks(), std::vector<int>{3});
  EXPECT_EQ(server.lost_ranks(), std::vector<int>{3});
}

// A rank that resets its connection while the server is still sending it a large reply: the
// failed send drops the connection at once (its rank is lost), not on a later read — the
// socket keeps reporting it writable, so the server would otherwise retry the send forever.
TEST(Store, ARankGoneWhileItsReplyIsSentIsLost) {
  StoreServer server("127.0.0.1", 0, kToken);
  auto observer = connect(server, 0);
  observer->set("big", std::string(8 << 20, 'x'));
  {
    RawConnection raw(server.port());
    raw.send(handshake(kToken, 5));
    char accepted = 0;
    ASSERT_EQ(recv_all(raw.fd.get(), &accepted, 1, Clock::now() + 2s), IoStatus::ok);
    std::vector<char> get = request_header(wire::Op::get, 3, 0);
    get.insert(get.end(), {'b', 'i', 'g'});
    raw.send(get);
    char first = 0;  // the reply has begun: the server is sending the 8 MiB
    ASSERT_EQ(recv_all(raw.fd.get(), &first, 1, Clock::now() + 2s), IoStatus::ok);
    const linger reset{1, 0};  // close with a reset, the rest unread
    ASSERT_EQ(::setsockopt(raw.fd.get(), SOL_SOCKET, SO_LINGER, &reset, sizeof reset), 0);
  }
  auto deadline = Clock::now() + 3s;
  while (server.lost_ranks().empty() && Clock::now() < deadline) std::this_thread::sleep_for(10ms);
  EXPECT_EQ(server.lost_ranks(), std::vector<int>{5});
  expect_still_serving(server);
}

TEST(Store, ClientRetriesUntilTheServerStarts) {
  int port = find_free_port();
  std::unique_ptr<StoreServer> server;
  std::thread starter([&] {
    std::this_thread::sleep_for(300ms);
    server = std::make_unique<StoreServer>("127.0.0.1", port, kToken);
  });
  StoreClient client("127.0.0.1", port, kToken, 1, 5s, 5s);
  starter.join();
  client.set("k", "v");
  EXPECT_TRUE(client.check({"k"}));
}

TEST(Store, ConnectGivesUpAtItsDeadline) {
  int port = find_free_port();
  auto start = Clock::now();
  EXPECT_THROW(StoreClient("127.0.0.1", port, kToken, 1, 300ms, 1s), CommunicationError);
  EXPECT_GE(Clock::now() - start, 300ms);
  EXPECT_LT(Clock::now() - start, 3s);
}

TEST(Store, ServerGoneIsAnErrorNotAHang) {
  auto server = std::make_unique<StoreServer>("127.0.0.1", 0, kToken);
  auto c = connect(*server, 1);
  std::thread t([&] {
    std::this_thread::sleep_for(200ms);
    server.reset();
  });
  auto start = Clock::now();
  EXPECT_THROW(c->wait({"never"}, 20s), CommunicationError);
  t.join();
  EXPECT_LT(Clock::now() - start, 5s);
  // After a failed exchange the stream's position is unknown: the client never sends on it again.
  try {
    c->set("later", "1");
    FAIL() << "a request went out on a failed connection";
  } catch (const CommunicationError& e) {
    EXPECT_NE(std::string(e.what()).find("connection already closed"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace mixle::comms
