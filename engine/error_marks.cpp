// Failures carried through collectives (engine/error_marks.hpp).
#include "engine/error_marks.hpp"

#include <mixle/error.hpp>

#include <array>
#include <cmath>
#include <cstdio>
#include <span>
#include <string>

namespace mixle::engine {

double error_mark(const std::exception_ptr& error, int rank) {
  return error ? (rank < 52 ? std::ldexp(1.0, rank) : 1.0) : 0.0;
}

void raise_marks(double failed, const std::exception_ptr& error, comms::Communicator& comm, const char* what) {
  if (failed == 0.0) return;
  std::string ranks;
  int first = -1;  // unknown beyond 52 ranks (the marks are then all 1)
  if (comm.size() <= 52) {
    for (int r = 0; r < comm.size(); ++r)
      if (std::fmod(std::floor(failed / std::ldexp(1.0, r)), 2.0) == 1.0) {
        ranks += (ranks.empty() ? "" : ", ") + std::to_string(r);
        if (first < 0) first = r;
      }
  } else {
    ranks = "some rank";
  }
  std::array<char, 1024> message{};
  if (first >= 0) {
    if (comm.rank() == first && error) try {
        std::rethrow_exception(error);
      } catch (const std::exception& e) {
        std::snprintf(message.data(), message.size(), "%s", e.what());
      } catch (...) {
      }
    comm.broadcast(std::span<char>(message), first);
  }
  if (error) std::rethrow_exception(error);
  throw InvalidInput(std::string(what) + " failed on rank " + ranks +
                     (message[0] ? " (rank " + std::to_string(first) + ": " + message.data() + ")"
                                 : " (its own message says why)") +
                     "; rank " + std::to_string(comm.rank()) + " stops too");
}

}  // namespace mixle::engine
