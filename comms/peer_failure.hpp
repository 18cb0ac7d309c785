// Internal: turns a transport failure into a message that names the lost or hung rank, using the
// rendezvous store: it records ranks whose connection closed without a goodbye (lost), and each
// rank that sees a collective fail reports it there, so a rank that does not report is the hung one.
#pragma once

#include "comms/store.hpp"

#include <chrono>
#include <string>
#include <thread>

namespace mixle::comms::detail {

/// Describes which peers are gone or hung. Asks the store for at most `patience`, because a killed
/// peer's store connection may close a moment after its collective sockets did, and the healthy
/// peers need a moment to report the same failure.
inline std::string describe_lost_peers(StoreClient* store, const std::string& prefix, int rank,
                                       int size, std::chrono::milliseconds patience) {
  if (store == nullptr) return "no rendezvous store to ask which rank was lost";
  const auto deadline = std::chrono::steady_clock::now() + patience;
  auto join = [](const std::vector<int>& ranks) {
    std::string s;
    for (int r : ranks) s += (s.empty() ? "" : ", ") + std::to_string(r);
    return s;
  };
  try {
    store->set(prefix + "failed/" + std::to_string(rank), "1");
    // A rank that reported the failure itself is a witness, not the culprit, even if it has
    // already exited without a goodbye.
    auto reported = [&](int r) { return store->check({prefix + "failed/" + std::to_string(r)}); };
    std::vector<int> silent;
    for (;;) {
      std::vector<int> lost;
      for (int r : store->lost_ranks())
        if (r != rank && !reported(r)) lost.push_back(r);
      if (!lost.empty())
        return std::string(lost.size() == 1 ? "lost rank " : "lost ranks ") + join(lost) +
               " (its process exited or was killed without leaving the group)";
      silent.clear();
      for (int r = 0; r < size; ++r)
        if (r != rank && !reported(r)) silent.push_back(r);
      if (silent.empty() || std::chrono::steady_clock::now() >= deadline) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    if (silent.empty()) return "every rank saw the failure; none has left the group";
    return "rank" + std::string(silent.size() == 1 ? " " : "s ") + join(silent) +
           " did not report this failure: hung, slow or unreachable";
  } catch (const std::exception&) {
    return "lost rank 0 (its rendezvous store at " + store->address() + " is unreachable)";
  }
}

}  // namespace mixle::comms::detail
