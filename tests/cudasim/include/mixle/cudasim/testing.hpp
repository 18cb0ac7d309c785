// What tests may ask the CUDA simulator beyond the CUDA API (SIM builds only: include it under
// `#if MIXLE_CUDA_SIM`): counters of the work done, the last fault's report, memory in use.
#pragma once

#include "mixle/cudasim/runtime.hpp"

#include <string>

namespace mixle::cudasim {

inline Counters counters() {
  auto lock = lock_sim();
  return sim().counters;
}

inline void reset_counters() {
  auto lock = lock_sim();
  sim().counters = Counters{};
}

/// The report of the most recent fault (kernel, block, thread and what went wrong), or empty.
inline std::string last_fault() {
  auto lock = lock_sim();
  return sim().last_fault;
}

/// Bytes of device memory allocated on `device` now, and at most so far.
inline std::size_t device_memory_used(int device) {
  auto lock = lock_sim();
  return sim().devices.at(static_cast<std::size_t>(device)).used;
}
inline std::size_t device_memory_peak(int device) {
  auto lock = lock_sim();
  return sim().devices.at(static_cast<std::size_t>(device)).peak;
}

}  // namespace mixle::cudasim
