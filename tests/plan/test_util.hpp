// Helpers shared by the plan tests.
#pragma once

#include <gtest/gtest.h>

#include <functional>
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

}  // namespace mixle::plan::testing
