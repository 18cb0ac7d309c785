// The `threads` communicator: a group whose members are threads of one process (one member per
// thread; each thread uses only its own member). Component-sharded EM runs on it when the shards
// live in one process — one shard per thread, e.g. one per GPU of a multi-GPU host — with the
// same code and the same guarantees as across processes:
//  - reductions are computed by every member in rank order 0, 1, …, W−1, so every member holds
//    the same bytes, whatever the thread timing;
//  - every wait honours the group's timeout and throws CommunicationError naming the members
//    that did not arrive; a member that leaves with an error (abandon(), or destruction while an
//    exception unwinds) makes every other member's current and next collective throw at once,
//    naming it, instead of waiting for the timeout.
// Host buffers only.
#pragma once

#include "comms/communicator.hpp"

#include <chrono>
#include <memory>
#include <vector>

namespace mixle::comms {

/// `size` members of a new thread group: element i is rank i. Throws InvalidInput for size < 1.
std::vector<std::unique_ptr<Communicator>> make_thread_group(int size, std::chrono::milliseconds timeout);

/// Marks `member` (of a thread group) as gone: the other members' collectives throw naming it.
/// Call it from a member's thread when that thread stops early with an error. No-op for members
/// of other communicator types.
void abandon_thread_group(Communicator& member) noexcept;

}  // namespace mixle::comms
