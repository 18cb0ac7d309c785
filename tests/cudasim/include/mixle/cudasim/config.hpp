// The simulator's knobs, all read from the environment:
//   MIXLE_SIM_DEVICES=N            simulated devices (default 1; 0: cudaGetDeviceCount fails with
//                                  cudaErrorNoDevice, as on a machine without a GPU), then
//                                  CUDA_VISIBLE_DEVICES filters them as CUDA does. Read once, at
//                                  the first call into the runtime, like CUDA's own device list.
//   MIXLE_SIM_DEVICE_MEMORY=BYTES  memory of each simulated device (default 16 GiB; K, M, G
//                                  suffixes are powers of 1024). Read at every allocation and
//                                  cudaMemGetInfo, so a test can make a device small.
//   MIXLE_SIM_SCHEDULE=forward|reverse|random:SEED
//                                  the order in which the threads of a block run between two
//                                  synchronisation points, and the order of blocks in a grid.
//                                  Read at every launch.
#pragma once

#include <cctype>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace mixle::cudasim {

/// A knob set to something the simulator does not understand: say so and stop, because a
/// typo would otherwise silently test something else.
[[noreturn]] inline void bad_knob(const char* name, const char* value, const char* accepted) {
  std::fprintf(stderr, "mixle CUDA simulator: %s=\"%s\" is not understood; accepted: %s\n", name, value, accepted);
  std::abort();
}

inline std::size_t parse_bytes(const char* name, const char* text) {
  char* end = nullptr;
  const unsigned long long v = std::strtoull(text, &end, 10);
  if (end == text) bad_knob(name, text, "a byte count, optionally with a K, M or G suffix");
  std::size_t scale = 1;
  switch (std::toupper(static_cast<unsigned char>(*end))) {
    case '\0': break;
    case 'K': scale = std::size_t{1} << 10, ++end; break;
    case 'M': scale = std::size_t{1} << 20, ++end; break;
    case 'G': scale = std::size_t{1} << 30, ++end; break;
    default: bad_knob(name, text, "a byte count, optionally with a K, M or G suffix");
  }
  if (*end != '\0' && !(std::toupper(static_cast<unsigned char>(*end)) == 'B' && end[1] == '\0'))
    bad_knob(name, text, "a byte count, optionally with a K, M or G suffix");
  return static_cast<std::size_t>(v) * scale;
}

constexpr std::size_t kDefaultDeviceMemory = std::size_t{16} << 30;

inline std::size_t device_memory_bytes() {
  const char* v = std::getenv("MIXLE_SIM_DEVICE_MEMORY");
  return v && *v ? parse_bytes("MIXLE_SIM_DEVICE_MEMORY", v) : kDefaultDeviceMemory;
}

/// The simulated devices' ordinals as the process sees them: 0..N-1 of MIXLE_SIM_DEVICES,
/// reordered and filtered by CUDA_VISIBLE_DEVICES (a list of ordinals; like CUDA, the list
/// stops at the first entry that is not a valid ordinal).
inline std::vector<int> visible_devices() {
  int physical = 1;
  if (const char* v = std::getenv("MIXLE_SIM_DEVICES"); v && *v) {
    char* end = nullptr;
    const long n = std::strtol(v, &end, 10);
    if (*end != '\0' || n < 0 || n > 64) bad_knob("MIXLE_SIM_DEVICES", v, "an integer from 0 to 64");
    physical = static_cast<int>(n);
  }
  std::vector<int> out;
  const char* mask = std::getenv("CUDA_VISIBLE_DEVICES");
  if (!mask) {
    for (int d = 0; d < physical; ++d) out.push_back(d);
    return out;
  }
  std::string text(mask);
  std::size_t at = 0;
  while (at <= text.size()) {
    const std::size_t comma = text.find(',', at);
    const std::string item = text.substr(at, comma == std::string::npos ? std::string::npos : comma - at);
    char* end = nullptr;
    const long d = std::strtol(item.c_str(), &end, 10);
    if (item.empty() || *end != '\0' || d < 0 || d >= physical) break;
    out.push_back(static_cast<int>(d));
    if (comma == std::string::npos) break;
    at = comma + 1;
  }
  return out;
}

enum class Order { forward, reverse, random };

struct Schedule {
  Order order = Order::forward;
  std::uint64_t seed = 0;
};

inline Schedule schedule() {
  const char* v = std::getenv("MIXLE_SIM_SCHEDULE");
  if (!v || !*v || std::string(v) == "forward") return {};
  const std::string text(v);
  if (text == "reverse") return {Order::reverse, 0};
  if (text.rfind("random", 0) == 0) {
    if (text == "random") return {Order::random, 1};
    if (text[6] == ':' && text.size() > 7) {
      char* end = nullptr;
      const unsigned long long seed = std::strtoull(text.c_str() + 7, &end, 10);
      if (*end == '\0') return {Order::random, seed};
    }
  }
  bad_knob("MIXLE_SIM_SCHEDULE", v, "forward, reverse, random:SEED");
}

}  // namespace mixle::cudasim
