// In-process tests of the Communicator: argument checks at the door, the factory, the single
// communicator, and Gloo with several ranks as threads of one process (fast; the real-process tests
// are in comm_process_test.cpp).
#include "comms/comm_type.hpp"
#include "comms/communicator.hpp"
#include "comms/store.hpp"

#include <mixle/error.hpp>

#include <gtest/gtest.h>
#include <cstdlib>
#include <unistd.h>

#include <algorithm>
#include <numeric>
#include <thread>
#include <vector>

namespace mixle::comms {
namespace {

using namespace std::chrono_literals;

std::unique_ptr<Communicator> make_single() {
  CommOptions o;
  o.timeout = 1s;
  return make_communicator("single", o);
}

TEST(CommRegistry, KnowsTheBuiltInTypesBuiltOrNot) {
  std::vector<std::string> names;
  for (const CommType* b : comm_types()) names.push_back(b->name);
  names.resize(std::min<std::size_t>(names.size(), 4));  // the built-ins come first
  EXPECT_EQ(names, (std::vector<std::string>{"single", "gloo", "mpi", "nccl"}));
  EXPECT_EQ(comm_type_names().rfind("single, gloo, mpi, nccl", 0), 0u);
  EXPECT_TRUE(find_comm_type("single")->built);
  EXPECT_TRUE(find_comm_type("single")->single_process);
  EXPECT_TRUE(comm_type("gloo").rendezvous);
  EXPECT_FALSE(comm_type("gloo").device_buffers);
  EXPECT_TRUE(comm_type("nccl").rendezvous && comm_type("nccl").device_buffers);
  EXPECT_TRUE(comm_type("mpi").mpi_launch);
  EXPECT_EQ(comm_type("gloo").built, static_cast<bool>(MIXLE_HAVE_GLOO));
  EXPECT_EQ(comm_type("mpi").built, static_cast<bool>(MIXLE_HAVE_MPI));
  EXPECT_EQ(comm_type("nccl").built, static_cast<bool>(MIXLE_HAVE_NCCL));
  for (const CommType* b : comm_types())  // a type's summary says when it is missing
    EXPECT_EQ(b->summary.find("not in this build") != std::string::npos, !b->built) << b->name;
  EXPECT_EQ(find_comm_type("tcp"), nullptr);
  try {
    (void)comm_type("tcp");
    ADD_FAILURE() << "an unknown communicator type found";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("accepted: single, gloo, mpi, nccl"), std::string::npos) << e.what();
  }
}

// gloo's own preparation picks the address peers reach this rank at: MIXLE_GLOO_HOSTNAME, else
// this host's name for a rendezvous off this machine, else the loopback default.
TEST(CommRegistry, GlooPicksTheAddressPeersReach) {
  const CommType& gloo = comm_type("gloo");
  if (!gloo.built) GTEST_SKIP() << "gloo is not in this build";
  ASSERT_TRUE(gloo.prepare);
  const char* saved = std::getenv("MIXLE_GLOO_HOSTNAME");
  const std::string before = saved ? saved : "";
  ::unsetenv("MIXLE_GLOO_HOSTNAME");
  CommOptions loopback;
  gloo.prepare(loopback, "127.0.0.1");
  EXPECT_EQ(loopback.gloo_hostname, "127.0.0.1");
  CommOptions remote;
  gloo.prepare(remote, "10.1.2.3");
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  EXPECT_EQ(remote.gloo_hostname, host);
  ::setenv("MIXLE_GLOO_HOSTNAME", "node-7.cluster", 1);
  CommOptions named;
  gloo.prepare(named, "10.1.2.3");
  EXPECT_EQ(named.gloo_hostname, "node-7.cluster");
  if (saved)
    ::setenv("MIXLE_GLOO_HOSTNAME", before.c_str(), 1);
  else
    ::unsetenv("MIXLE_GLOO_HOSTNAME");
}

// A communicator type an application registers is made by make_communicator like the built-ins; a taken
// name, a nameless type and a built one without a factory are refused.
TEST(CommRegistry, ARegisteredTypeIsMadeByName) {
  CommType echo;
  echo.name = "test-echo";
  echo.summary = "one process, registered by a test";
  echo.built = true;
  echo.single_process = true;
  int made = 0;
  echo.make = [&made](CommOptions o) {
    ++made;
    return make_communicator("single", std::move(o));
  };
  register_comm_type(echo);
  CommOptions o;
  o.timeout = 1s;
  auto c = make_communicator("test-echo", o);
  EXPECT_EQ(made, 1);
  EXPECT_EQ(c->size(), 1);
  o.size = 2;
  o.rank = 1;
  EXPECT_THROW(make_communicator("test-echo", o), InvalidInput);  // single_process: size 1 only
  EXPECT_EQ(made, 1);
  EXPECT_THROW(register_comm_type(echo), InvalidInput);  // the name is taken
  CommType nameless = echo;
  nameless.name = "";
  EXPECT_THROW(register_comm_type(nameless), InvalidInput);
  CommType no_factory = echo;
  no_factory.name = "test-no-factory";
  no_factory.make = nullptr;
  EXPECT_THROW(register_comm_type(no_factory), InvalidInput);
  EXPECT_NE(comm_type_names().find("test-echo"), std::string::npos);
}

TEST(CommFactory, ValidatesRankSizeAndTimeout) {
  CommOptions o;
  o.rank = 2;
  o.size = 2;
  EXPECT_THROW(make_communicator("single", o), InvalidInput);
  o.rank = 1;
  o.size = 1;  // a rank equal to the size is past the last
  try {
    (void)make_communicator("single", o);
    ADD_FAILURE() << "rank 1 of a world of 1 accepted";
  } catch (const InvalidInput& e) {
    EXPECT_NE(std::string(e.what()).find("communicator rank 1 of world size 1: need 0 ≤ rank < size"),
              std::string::npos)
        << e.what();
  }
  o.size = 2;
  o.rank = 0;
  EXPECT_THROW(make_communicator("single", o), InvalidInput);  // single needs size 1
  o.size = 1;
  o.timeout = 0ms;
  EXPECT_THROW(make_communicator("single", o), InvalidInput);
}

TEST(CommFactory, UnbuiltTypesSayNotCompiled) {
  CommOptions o;
  if (!find_comm_type("nccl")->built) {
    try {
      make_communicator("nccl", o);
      FAIL() << "nccl communicator created in a build without NCCL";
    } catch (const NotCompiled& e) {
      EXPECT_EQ(e.feature(), "nccl");
    }
  }
  if (!find_comm_type("gloo")->built) EXPECT_THROW(make_communicator("gloo", o), NotCompiled);
  if (find_comm_type("gloo")->built) EXPECT_THROW(make_communicator("gloo", o), InvalidInput);  // no store
}

TEST(CommSingle, CollectivesLeaveDataAndCopyGathers) {
  auto c = make_single();
  EXPECT_EQ(c->rank(), 0);
  EXPECT_EQ(c->size(), 1);
  EXPECT_EQ(c->type(), "single");
  std::vector<double> x{1.5, -2.0, 3.25};
  c->all_reduce_sum(std::span<double>(x));
  c->all_reduce_max(std::span<double>(x));
  EXPECT_EQ(x, (std::vector<double>{1.5, -2.0, 3.25}));
  std::vector<float> f{7.0f};
  c->all_reduce_sum(std::span<float>(f));
  EXPECT_EQ(f[0], 7.0f);
  c->broadcast(std::span<double>(x), 0);
  std::vector<int> send{4, 5}, recv(2, 0);
  c->all_gather(std::span<const int>(send), std::span<int>(recv));
  EXPECT_EQ(recv, send);
  c->barrier();
  EXPECT_EQ(c->collective_bytes(), 3 * 8 * 3 + 4 + 8u);
}

TEST(CommSingle, BadArgumentsAreRejectedAtTheDoor) {
  auto c = make_single();
  std::vector<double> x(3);
  EXPECT_THROW(c->broadcast(std::span<double>(x), 1), InvalidInput);
  EXPECT_THROW(c->broadcast(std::span<double>(x), -1), InvalidInput);
  std::vector<int> send(2), recv(3);
  EXPECT_THROW(c->all_gather(std::span<const int>(send), std::span<int>(recv)), InvalidInput);
  EXPECT_THROW(c->all_reduce_sum(std::span<double>(static_cast<double*>(nullptr), 4)), InvalidInput);
}

TEST(CommSingle, SplitGivesAWorkingGroupOfOne) {
  auto c = make_single();
  auto child = c->split(7, -3);
  EXPECT_EQ(child->type(), "single");
  EXPECT_EQ(child->rank(), 0);
  EXPECT_EQ(child->size(), 1);
  EXPECT_EQ(child->world_rank(0), 0);
  EXPECT_EQ(child->timeout(), c->timeout());
  std::vector<int> send{9}, recv(1, 0);
  child->all_gather(std::span<const int>(send), std::span<int>(recv));
  EXPECT_EQ(recv, send);
  EXPECT_EQ(c->collective_bytes(), 0u);  // the split's own exchange is not payload
  std::vector<double> x{2.0};
  c->all_reduce_sum(std::span<double>(x));  // the parent still works
  EXPECT_EQ(x[0], 2.0);
  EXPECT_THROW(c->split(-1, 0), InvalidInput);
  EXPECT_THROW(c->world_rank(1), InvalidInput);
}

TEST(CommSingle, AcceptsBothMemorySpaces) {
  auto c = make_single();
  EXPECT_TRUE(c->accepts(MemorySpace::host));
  EXPECT_TRUE(c->accepts(MemorySpace::device));  // size 1: nothing moves
}

#if MIXLE_HAVE_GLOO
// Runs `body(comm)` on `n` Gloo ranks, each a thread with its own store connection.
template <class Body>
void on_gloo_ranks(int n, Body body, std::chrono::milliseconds timeout = 10s) {
  auto server = std::make_shared<StoreServer>("127.0.0.1", 0, "tok");
  std::vector<std::thread> threads;
  std::vector<std::string> errors(static_cast<std::size_t>(n));
  for (int r = 0; r < n; ++r)
    threads.emplace_back([&, r] {
      try {
        CommOptions o;
        o.rank = r;
        o.size = n;
        o.timeout = timeout;
        o.store = std::make_shared<StoreClient>("127.0.0.1", server->port(), "tok", r, 5s, timeout);
        o.store_prefix = "inproc/";
        auto comm = make_communicator("gloo", std::move(o));
        body(*comm);
      } catch (const std::exception& e) {
        errors[static_cast<std::size_t>(r)] = e.what();
      }
    });
  for (auto& t : threads) t.join();
  for (int r = 0; r < n; ++r) EXPECT_EQ(errors[static_cast<std::size_t>(r)], "") << "rank " << r;
}

TEST(GlooInProcess, SumMaxBroadcastGatherAcrossThreeRanks) {
  on_gloo_ranks(3, [](Communicator& c) {
    const int r = c.rank();
    EXPECT_EQ(c.type(), "gloo");
    std::vector<double> x(100);
    for (std::size_t i = 0; i < x.size(); ++i) x[i] = double((r + 1) * int(i));
    c.all_reduce_sum(std::span<double>(x));
    for (std::size_t i = 0; i < x.size(); ++i) ASSERT_EQ(x[i], 6.0 * double(i));
    std::vector<float> m{float(r), float(-r), 0.5f};
    c.all_reduce_max(std::span<float>(m));
    EXPECT_EQ(m, (std::vector<float>{2.0f, 0.0f, 0.5f}));
    std::vector<std::int64_t> b(4, r == 2 ? 42 : 0);
    c.broadcast(std::span<std::int64_t>(b), 2);
    EXPECT_EQ(b, std::vector<std::int64_t>(4, 42));
    std::vector<int> mine{r, 10 * r}, all(6);
    c.all_gather(std::span<const int>(mine), std::span<int>(all));
    EXPECT_EQ(all, (std::vector<int>{0, 0, 1, 10, 2, 20}));
    c.barrier();
  });
}

TEST(GlooInProcess, WorldSizeOneWorks) {
  on_gloo_ranks(1, [](Communicator& c) {
    std::vector<double> x{3.0};
    c.all_reduce_sum(std::span<double>(x));
    EXPECT_EQ(x[0], 3.0);
  });
}

// Gloo listens at the address CommOptions::gloo_hostname names: one this machine does not
// have (192.0.2.1, a documentation address) fails the rendezvous, and the error says which.
TEST(GlooInProcess, ListensAtTheAddressItIsGiven) {
  auto server = std::make_shared<StoreServer>("127.0.0.1", 0, "tok");
  CommOptions o;
  o.timeout = 5s;
  o.store = std::make_shared<StoreClient>("127.0.0.1", server->port(), "tok", 0, 5s, o.timeout);
  o.store_prefix = "inproc/";
  o.gloo_hostname = "192.0.2.1";
  try {
    (void)make_communicator("gloo", std::move(o));
    ADD_FAILURE() << "gloo formed a communicator at an address this machine does not have";
  } catch (const CommunicationError& e) {
    EXPECT_NE(std::string(e.what()).find("192.0.2.1"), std::string::npos) << e.what();
  }
}

TEST(GlooInProcess, DeviceBuffersAreRefused) {
  on_gloo_ranks(2, [](Communicator& c) {
    EXPECT_TRUE(c.accepts(MemorySpace::host));
    EXPECT_FALSE(c.accepts(MemorySpace::device));
    std::vector<double> x(2);
    try {
      c.all_reduce_sum(std::span<double>(x), MemorySpace::device);
      ADD_FAILURE() << "gloo took a device buffer";
    } catch (const InvalidInput& e) {
      EXPECT_NE(std::string(e.what()).find("takes host buffers, got a device buffer"), std::string::npos) << e.what();
    }
    std::vector<int> one{1}, all(2);
    EXPECT_THROW(c.all_gather(std::span<const int>(one), std::span<int>(all), MemorySpace::device), InvalidInput);
    EXPECT_THROW(c.broadcast(std::span<int>(one), 0, MemorySpace::device), InvalidInput);
    auto child = c.split(0, 0);
    EXPECT_THROW(child->all_reduce_sum(std::span<double>(x), MemorySpace::device), InvalidInput);
    c.barrier();
  });
}

// A 2 × 2 mesh of four threads: rows r/2 and columns r%2, as component-sharded EM uses them.
TEST(GlooInProcess, SplitFormsRowsAndColumnsWithExactCollectives) {
  on_gloo_ranks(4, [](Communicator& c) {
    const int r = c.rank();
    auto row = c.split(r / 2, r);
    auto col = c.split(r % 2, r);
    ASSERT_EQ(row->size(), 2);
    ASSERT_EQ(col->size(), 2);
    EXPECT_EQ(row->rank(), r % 2);
    EXPECT_EQ(col->rank(), r / 2);
    EXPECT_EQ(row->world_rank(1), (r / 2) * 2 + 1);
    EXPECT_EQ(col->world_rank(1), r % 2 + 2);
    EXPECT_EQ(row->timeout(), c.timeout());
    std::vector<double> x{double(r), 1.0};
    row->all_reduce_sum(std::span<double>(x));
    EXPECT_EQ(x, (std::vector<double>{double(4 * (r / 2) + 1), 2.0}));  // 2k + (2k + 1)
    std::vector<float> m{float(r)};
    col->all_reduce_max(std::span<float>(m));
    EXPECT_EQ(m[0], float(r % 2 + 2));
    std::vector<int> all(2);
    col->all_gather(std::span<const int>(&r, 1), std::span<int>(all));
    EXPECT_EQ(all, (std::vector<int>{r % 2, r % 2 + 2}));
    // The parent keeps working between its children's calls.
    std::vector<double> w{1.0};
    c.all_reduce_sum(std::span<double>(w));
    EXPECT_EQ(w[0], 4.0);
    std::vector<std::int64_t> b{r == 3 ? 33 : 0};
    row->broadcast(std::span<std::int64_t>(b), 1);
    EXPECT_EQ(b[0], r / 2 == 1 ? 33 : 0);  // row 0's root (rank 1) sent 0
    // Keys reverse the order; the reversed group's gather lists world ranks backwards.
    auto rev = c.split(0, -r);
    EXPECT_EQ(rev->rank(), 3 - r);
    std::vector<int> order(4);
    rev->all_gather(std::span<const int>(&r, 1), std::span<int>(order));
    EXPECT_EQ(order, (std::vector<int>{3, 2, 1, 0}));
    row->barrier();
    c.barrier();
  });
}

TEST(GlooInProcess, MissingPeerTimesOutAtRendezvous) {
  StoreServer server("127.0.0.1", 0, "tok");
  CommOptions o;
  o.rank = 0;
  o.size = 2;  // rank 1 never comes
  o.timeout = 500ms;
  o.store = std::make_shared<StoreClient>("127.0.0.1", server.port(), "tok", 0, 2s, 500ms);
  auto start = std::chrono::steady_clock::now();
  EXPECT_THROW(make_communicator("gloo", std::move(o)), CommunicationError);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
}
#endif

}  // namespace
}  // namespace mixle::comms
