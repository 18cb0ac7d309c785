// Internal: turns a transport failure into a message that names the lost or hung rank, using the
// rendezvous store: it records ranks whose connection closed without a goodbye (lost), and each
// rank that sees a collective fail reports it there, so a rank that does not report is the hung one.
// The store knows ranks by their world rank, so a sub-communicator asks about its members' world
// ranks and its messages say "world rank".
#pragma once

#include "comms/store.hpp"

#include <algorithm>
#include <chrono>
#include <numeric>
#include <string>
#include <thread>
#include <vector>

namespace mixle::comms::detail {

/// How long a rank that saw a failure waits for its peers to report it too (bounded by the timeout).
constexpr std::chrono::milliseconds kReportPatience{2000};

/// Describes which members of a group are gone or hung. `self` and `members` are world ranks;
/// `sub_group` says the group is a split child (messages then say "world rank"). Asks the store for
/// at most `patience`, because a killed peer's store connection may close a moment after its
/// collective sockets did, and the healthy peers need a moment to report the same failure.
inline std::string describe_lost_peers(StoreClient* store, const std::string& prefix, int self,
                                       const std::vector<int>& members, bool sub_group,
                                       std::chrono::milliseconds patience) {
  if (store == nullptr) return "no rendezvous store to ask which rank was lost";
  const std::string rank_word = sub_group ? "world rank" : "rank";
  const auto deadline = std::chrono::steady_clock::now() + patience;
  auto join = [](const std::vector<int>& ranks) {
    std::string s;
    for (int r : ranks) s += (s.empty() ? "" : ", ") + std::to_string(r);
    return s;
  };
  auto is_member = [&](int r) { return std::find(members.begin(), members.end(), r) != members.end(); };
  try {
    store->set(prefix + "failed/" + std::to_string(self), "1");
    // A rank that reported the failure itself is a witness, not the culprit, even if it has
    // already exited without a goodbye.
    auto reported = [&](int r) { return store->check({prefix + "failed/" + std::to_string(r)}); };
    std::vector<int> silent;
    for (;;) {
      std::vector<int> lost;
      for (int r : store->lost_ranks())
        if (r != self && is_member(r) && !reported(r)) lost.push_back(r);
      if (!lost.empty())
        return "lost " + rank_word + (lost.size() == 1 ? " " : "s ") + join(lost) +
               (lost.size() == 1 ? " (its process exited or was killed" : " (their processes exited or were killed") +
               " without leaving the group)";
      silent.clear();
      for (int r : members)
        if (r != self && !reported(r)) silent.push_back(r);
      if (silent.empty() || std::chrono::steady_clock::now() >= deadline) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    if (silent.empty()) return "every rank saw the failure; none has left the group";
    return rank_word + (silent.size() == 1 ? " " : "s ") + join(silent) +
           " did not report this failure: hung, slow or unreachable";
  } catch (const std::exception&) {
    // Rank 0 hosts the store and keeps it up for a while after its own failure (leave_rendezvous),
    // but a rank that gets here very late cannot tell a killed rank 0 from one that saw the
    // failure too and has ended since: say what is known rather than blame rank 0.
    return "rank 0 is gone (its rendezvous store at " + store->address() +
           " is unreachable): it was lost, or it ended after seeing this failure itself, in which "
           "case the failure may have started at another rank";
  }
}

/// describe_lost_peers for a world communicator of `size` ranks.
inline std::string describe_lost_peers(StoreClient* store, const std::string& prefix, int rank, int size,
                                       std::chrono::milliseconds patience) {
  std::vector<int> members(static_cast<std::size_t>(size));
  std::iota(members.begin(), members.end(), 0);
  return describe_lost_peers(store, prefix, rank, members, false, patience);
}

}  // namespace mixle::comms::detail
