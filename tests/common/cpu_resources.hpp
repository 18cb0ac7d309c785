// Resources of n CPU devices, cpu:0 … cpu:n−1, each with the same memory (or none stated): what
// the planning and sharding tests describe a machine with.
#pragma once

#include <mixle/plan/resources.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace mixle::test {

inline plan::Resources cpu_devices(int n, std::optional<std::uint64_t> memory) {
  std::vector<plan::DeviceSpec> devices;
  for (int i = 0; i < n; ++i) {
    plan::DeviceSpec d;
    d.name = "cpu:" + std::to_string(i);
    d.memory_bytes = memory;
    devices.push_back(d);
  }
  return plan::Resources(devices);
}

}  // namespace mixle::test
