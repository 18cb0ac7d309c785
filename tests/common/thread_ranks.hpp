// Ranks on threads of this process: `world` members of one thread group (the `threads`
// communicator), each running `body(rank, its communicator)` in its own thread. A rank that
// throws leaves the group (the others' collectives then fail naming it instead of waiting out
// the timeout), and its message becomes its entry of the result: "" for a rank that finished.
#pragma once

#include "comms/thread_group.hpp"

#include <chrono>
#include <cstddef>
#include <exception>
#include <functional>
#include <string>
#include <thread>
#include <vector>

namespace mixle::test {

inline std::vector<std::string> on_thread_ranks(std::size_t world,
                                                const std::function<void(std::size_t, comms::Communicator&)>& body,
                                                std::chrono::milliseconds timeout = std::chrono::seconds(30)) {
  auto members = comms::make_thread_group(static_cast<int>(world), timeout);
  std::vector<std::string> errors(world);
  std::vector<std::thread> threads;
  for (std::size_t r = 0; r < world; ++r)
    threads.emplace_back([&, r] {
      try {
        body(r, *members[r]);
      } catch (const std::exception& e) {
        errors[r] = e.what();
        comms::abandon_thread_group(*members[r]);
      }
    });
  for (auto& t : threads) t.join();
  return errors;
}

}  // namespace mixle::test
