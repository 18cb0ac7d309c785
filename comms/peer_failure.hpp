// Internal: turns a transport failure into a message that names the lost rank, using the
// rendezvous store's record of ranks that disconnected without saying goodbye.
#pragma once

#include "comms/store.hpp"

#include <chrono>
#include <string>
#include <thread>

namespace mixle::comms::detail {

/// Describes which peers are gone, asking the store (for at most `patience`, because a killed
/// peer's store connection may close a moment after its collective sockets did).
inline std::string describe_lost_peers(StoreClient* store, std::chrono::milliseconds patience) {
  if (store == nullptr) return "no rendezvous store to ask which rank was lost";
  const auto deadline = std::chrono::steady_clock::now() + patience;
  try {
    for (;;) {
      std::vector<int> lost = store->lost_ranks();
      if (!lost.empty()) {
        std::string names;
        for (int r : lost) names += (names.empty() ? "" : ", ") + std::to_string(r);
        return std::string(lost.size() == 1 ? "lost rank " : "lost ranks ") + names +
               " (its process exited or was killed without leaving the group)";
      }
      if (std::chrono::steady_clock::now() >= deadline) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  } catch (const std::exception&) {
    return "lost rank 0 (its rendezvous store at " + store->address() + " is unreachable)";
  }
  return "no rank has left the group: a peer is hung, slow or unreachable";
}

}  // namespace mixle::comms::detail
