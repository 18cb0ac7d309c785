#include "comms/failpoint.hpp"

#include <mixle/error.hpp>

#include <csignal>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>

namespace mixle::comms {

namespace {

int this_rank() {
  const char* r = std::getenv("RANK");
  return r && *r ? std::atoi(r) : 0;
}

}  // namespace

FailpointSpec parse_failpoint(const char* text) {
  FailpointSpec a;
  if (!text || !*text) return a;
  const std::string v = text;
  a.signal = SIGKILL;
  const std::string form = "MIXLE_FAILPOINT = '" + v + "' is not NAME@RANK[:kill|:stop][#N]";
  const auto at = v.find('@');
  if (at == std::string::npos || at == 0) {
    a.error = form;
    return a;
  }
  // After the '@' only: a name may hold ':' or '#'.
  const auto colon = v.find(':', at), hash = v.find('#', at);
  const auto rank_end = std::min(colon, hash);
  char* end = nullptr;
  if (rank_end == at + 1 || at + 1 == v.size()) {
    a.error = form;
    return a;
  }
  a.name = v.substr(0, at);
  const std::string rank = v.substr(at + 1, rank_end - at - 1);
  a.rank = static_cast<int>(std::strtol(rank.c_str(), &end, 10));
  if (*end != '\0' || a.rank < 0) a.error = "MIXLE_FAILPOINT = '" + v + "': rank '" + rank + "' is not a rank";
  if (colon != std::string::npos) {
    const std::string action = v.substr(colon + 1, hash == std::string::npos ? std::string::npos : hash - colon - 1);
    if (action == "kill")
      a.signal = SIGKILL;
    else if (action == "stop")
      a.signal = SIGSTOP;
    else
      a.error = "MIXLE_FAILPOINT = '" + v + "': action '" + action + "' is not kill or stop";
  }
  if (hash != std::string::npos) {
    a.nth = std::strtol(v.c_str() + hash + 1, &end, 10);
    if (*end != '\0' || a.nth < 1) a.error = "MIXLE_FAILPOINT = '" + v + "': #N must be a count ≥ 1";
  }
  return a;
}

void failpoint(const char* name) {
  static const FailpointSpec armed = parse_failpoint(std::getenv("MIXLE_FAILPOINT"));
  static std::mutex mutex;
  static long reached = 0;
  if (!armed.error.empty()) throw InvalidInput(armed.error);
  if (armed.name.empty() || armed.name != name || armed.rank != this_rank()) return;
  std::lock_guard<std::mutex> lock(mutex);
  if (++reached == armed.nth) std::raise(armed.signal);
}

}  // namespace mixle::comms
