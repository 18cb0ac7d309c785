// Skips that must not be silent in CI: a test that needs something the project's own setup
// provides (scripts/install-deps installs Gloo, Open MPI and numpy) skips visibly where it is
// missing, and fails instead under MIXLE_REQUIRE_TOOLS=1, which scripts/test sets.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

namespace mixle::test {

inline bool tools_required() {
  const char* v = std::getenv("MIXLE_REQUIRE_TOOLS");
  return v != nullptr && std::string(v) == "1";
}

}  // namespace mixle::test

/// In a test body: `MIXLE_SKIP_UNLESS_BUILT_WITH(MIXLE_HAVE_GLOO, "gloo");`
#define MIXLE_SKIP_UNLESS_BUILT_WITH(have, what)                                                         \
  do {                                                                                                   \
    if (!(have)) {                                                                                       \
      if (::mixle::test::tools_required())                                                               \
        FAIL() << "built without " what " but MIXLE_REQUIRE_TOOLS=1 (scripts/install-deps installs it)"; \
      GTEST_SKIP() << "built without " what;                                                             \
    }                                                                                                    \
  } while (0)
