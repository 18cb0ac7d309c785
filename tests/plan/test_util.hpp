// Helpers shared by the plan tests.
#pragma once

#include <mixle/plan.hpp>

#include <gtest/gtest.h>

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace mixle::plan::testing {

/// Runs `fn`, expects it to throw `E`, and returns the message (empty when it did not throw).
template <class E>
std::string message_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const E& e) {
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "threw a different exception type: " << e.what();
    return {};
  }
  ADD_FAILURE() << "did not throw";
  return {};
}

/// Expects every fragment to occur in `message`.
inline void expect_mentions(const std::string& message, const std::vector<std::string>& fragments) {
  for (const std::string& f : fragments) {
    EXPECT_NE(message.find(f), std::string::npos) << "message lacks \"" << f << "\": " << message;
  }
}

/// A device of the given name, throughput and (optional) memory.
inline DeviceSpec device(std::string name, double throughput, std::optional<std::uint64_t> memory = {}) {
  DeviceSpec d;
  d.name = std::move(name);
  d.throughput = throughput;
  d.memory_bytes = memory;
  return d;
}

/// A one-part gaussian_diag model summary: K components of d columns.
inline ModelSummary gmm(std::size_t k, std::size_t d) { return ModelSummary{k, {PartSummary{"gaussian_diag", d, 0}}}; }

}  // namespace mixle::plan::testing
