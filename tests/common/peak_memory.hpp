// This process's resident memory and its peak, from /proc/self/status, with the peak reset
// through /proc/self/clear_refs (Linux ≥ 4.0): tests measure what one call adds at its peak.
#pragma once

#include <fstream>
#include <string>

namespace mixle::test {

/// A field of /proc/self/status in KiB ("VmHWM", "VmRSS", "RssFile"); -1 when absent.
inline long status_kib(const std::string& field) {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line))
    if (line.rfind(field + ":", 0) == 0) return std::stol(line.substr(field.size() + 1));
  return -1;
}

/// Resets this process's peak resident set (VmHWM) to its current size; false where Linux does
/// not offer it.
inline bool reset_peak() {
  std::ofstream clear("/proc/self/clear_refs");
  clear << "5";
  clear.flush();
  return clear.good();
}

}  // namespace mixle::test
