// Option checks whose messages say what is accepted. CLI11's NonNegativeNumber and PositiveNumber
// state their range as "0.000000 to 1.797…e308" (and PositiveNumber's as starting at 0 although
// it refuses 0); these name the floor and its meaning instead.
#pragma once

#include <CLI/CLI.hpp>

#include <charconv>
#include <string>

namespace mixle::host {

/// An integer option of at least `min`: "--batch-size: -5 is below 0; accepted: <accepted>".
/// Text that is no integer is left to the option's own conversion, which names it.
inline CLI::Validator at_least(long long min, const std::string& accepted) {
  return CLI::Validator(
      [min, accepted](std::string& text) -> std::string {
        long long value = 0;
        const char* end = text.data() + text.size();
        const auto [ptr, ec] = std::from_chars(text.data(), end, value);
        if (ec != std::errc() || ptr != end || value >= min) return {};
        return text + " is below " + std::to_string(min) + "; accepted: " + accepted;
      },
      "≥" + std::to_string(min));  // in --help: UINT:≥1 (no space: the help keeps TYPE=DEFAULT one word)
}

}  // namespace mixle::host
