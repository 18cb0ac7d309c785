// describe_lost_peers against a real store in this process: which members it names as lost, which
// as silent, how long it waits for the others to report, and what it says when the store is gone.
#include "comms/peer_failure.hpp"
#include "comms/store.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace mixle::comms::detail {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
constexpr const char* kToken = "peer-failure-token";
const std::string kPrefix = "job/";
const std::vector<int> kMembers{0, 1, 2};

std::unique_ptr<StoreClient> connect(const StoreServer& server, int rank) {
  return std::make_unique<StoreClient>("127.0.0.1", server.port(), kToken, rank, 2s, 5s);
}

void report_failure(StoreClient& client, int rank) { client.set(kPrefix + "failed/" + std::to_string(rank), "1"); }

// Waits until the server has seen `rank`'s connection close without a goodbye.
void wait_until_lost(const StoreServer& server, int rank) {
  const auto until = Clock::now() + 5s;
  for (;;) {
    const std::vector<int> lost = server.lost_ranks();
    if (std::find(lost.begin(), lost.end(), rank) != lost.end()) return;
    ASSERT_LT(Clock::now(), until) << "the server never saw rank " << rank << " lost";
    std::this_thread::sleep_for(5ms);
  }
}

TEST(DescribeLostPeers, MembersThatNeverReportAreNamedOnceThePatienceIsSpent) {
  StoreServer server("127.0.0.1", 0, kToken);
  auto self = connect(server, 0);
  const auto t0 = Clock::now();
  const std::string said = describe_lost_peers(self.get(), kPrefix, 0, kMembers, false, 300ms);
  EXPECT_GE(Clock::now() - t0, 300ms) << "it must give the others the whole patience to report";
  EXPECT_EQ(said, "ranks 1, 2 did not report this failure: hung, slow or unreachable");
  EXPECT_TRUE(self->check({kPrefix + "failed/0"})) << "the caller reports the failure itself";
}

// A member that reports while the caller waits is a witness: only the one that never does is named.
TEST(DescribeLostPeers, AMemberReportingLateIsNotNamed) {
  StoreServer server("127.0.0.1", 0, kToken);
  auto self = connect(server, 0);
  auto two = connect(server, 2);
  std::thread late([&] {
    std::this_thread::sleep_for(100ms);
    report_failure(*two, 2);
  });
  const std::string said = describe_lost_peers(self.get(), kPrefix, 0, kMembers, false, 600ms);
  late.join();
  EXPECT_EQ(said, "rank 1 did not report this failure: hung, slow or unreachable");
}

// Every member reporting ends the wait at once, long before the patience is spent.
TEST(DescribeLostPeers, EveryMemberReportingEndsTheWait) {
  StoreServer server("127.0.0.1", 0, kToken);
  auto self = connect(server, 1);
  auto other = connect(server, 0);
  report_failure(*other, 0);
  report_failure(*other, 2);
  const auto t0 = Clock::now();
  EXPECT_EQ(describe_lost_peers(self.get(), kPrefix, 1, kMembers, false, 10s),
            "every rank saw the failure; none has left the group");
  EXPECT_LT(Clock::now() - t0, 5s);
}

// A member whose connection closed without a goodbye is lost, and named so in the group's own
// numbering; a lost rank outside the group, or one that reported the failure before it went,
// is not blamed.
TEST(DescribeLostPeers, ALostMemberIsNamedAndWitnessesAndStrangersAreNot) {
  StoreServer server("127.0.0.1", 0, kToken);
  auto self = connect(server, 2);
  auto lost = connect(server, 1);
  auto witness = connect(server, 4);
  auto stranger = connect(server, 7);
  report_failure(*witness, 4);
  lost->abandon();
  witness->abandon();
  stranger->abandon();
  wait_until_lost(server, 1);
  wait_until_lost(server, 4);
  wait_until_lost(server, 7);
  EXPECT_EQ(describe_lost_peers(self.get(), kPrefix, 2, {1, 2, 4}, true, 2s),
            "lost world rank 1 (its process exited or was killed without leaving the group)");
  EXPECT_EQ(describe_lost_peers(self.get(), kPrefix, 2, kMembers, false, 2s),
            "lost rank 1 (its process exited or was killed without leaving the group)");
}

// Several lost members are named in one message, in the order the server saw them go.
TEST(DescribeLostPeers, SeveralLostMembersAreNamedTogether) {
  StoreServer server("127.0.0.1", 0, kToken);
  auto self = connect(server, 0);
  for (int r : {2, 1}) {
    auto gone = connect(server, r);
    gone->abandon();
    wait_until_lost(server, r);
  }
  EXPECT_EQ(describe_lost_peers(self.get(), kPrefix, 0, kMembers, false, 2s),
            "lost ranks 2, 1 (their processes exited or were killed without leaving the group)");
}

TEST(DescribeLostPeers, AGoneStoreBlamesNoRank) {
  auto server = std::make_unique<StoreServer>("127.0.0.1", 0, kToken);
  auto self = std::make_unique<StoreClient>("127.0.0.1", server->port(), kToken, 1, 2s, 1s);
  const std::string address = self->address();
  server.reset();
  const std::string said = describe_lost_peers(self.get(), kPrefix, 1, kMembers, false, 2s);
  EXPECT_EQ(said.rfind("rank 0 is gone (its rendezvous store at " + address + " is unreachable)", 0), 0u) << said;
  EXPECT_EQ(describe_lost_peers(nullptr, kPrefix, 1, kMembers, false, 2s),
            "no rendezvous store to ask which rank was lost");
}

}  // namespace
}  // namespace mixle::comms::detail
