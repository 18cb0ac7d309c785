// Runs a piece of a test with this thread's CPU affinity cut to one CPU: what the code (or a
// process started meanwhile, which inherits the mask) then counts as the cores it may use.
#pragma once

#include <sched.h>

#include <cerrno>
#include <system_error>

namespace mixle::test {

/// f() with this thread's affinity cut to the first CPU it may run on; the mask is restored
/// afterwards, whatever f does. Returns f's result.
template <class F>
auto on_one_cpu(F&& f) {
  struct Restore {
    cpu_set_t saved;
    ~Restore() { sched_setaffinity(0, sizeof saved, &saved); }
  };
  cpu_set_t saved;
  if (sched_getaffinity(0, sizeof saved, &saved) != 0)
    throw std::system_error(errno, std::generic_category(), "sched_getaffinity");
  int first = 0;
  while (!CPU_ISSET(first, &saved)) ++first;
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(first, &one);
  if (sched_setaffinity(0, sizeof one, &one) != 0)
    throw std::system_error(errno, std::generic_category(), "sched_setaffinity");
  const Restore restore{saved};
  return f();
}

}  // namespace mixle::test
