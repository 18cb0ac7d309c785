// Option checks whose messages say what is accepted. CLI11's NonNegativeNumber and PositiveNumber
// state their range as "0.000000 to 1.797…e308" (and PositiveNumber's as starting at 0 although
// it refuses 0); these name the floor and its meaning instead. Each reads the text with CLI11's
// own conversion, the one the option's value comes from, so every form that conversion takes
// ("+0", "0x0", "1e400") is checked as the value it becomes.
#pragma once

#include <CLI/CLI.hpp>

#include <cmath>
#include <limits>
#include <sstream>
#include <string>

namespace mixle::host {

/// An integer option from `lo` to `hi` (both included): "--nproc: 0 is below 1; accepted:
/// <accepted>", "--nproc: 5000 is above 4096; …". Text that is no integer is left to the
/// option's own conversion, which names it.
inline CLI::Validator whole_in(long long lo, long long hi, const std::string& accepted) {
  return CLI::Validator(
      [lo, hi, accepted](std::string& text) -> std::string {
        long long value = 0;
        if (!CLI::detail::lexical_cast(text, value)) return {};
        if (value < lo) return text + " is below " + std::to_string(lo) + "; accepted: " + accepted;
        if (value > hi) return text + " is above " + std::to_string(hi) + "; accepted: " + accepted;
        return {};
      },
      // in --help, one word (the help keeps TYPE=DEFAULT together): INT:≥1, INT:[1,4096]
      hi == std::numeric_limits<long long>::max() ? "≥" + std::to_string(lo)
                                                  : "[" + std::to_string(lo) + "," + std::to_string(hi) + "]");
}

/// An integer option of at least `min`: "--batch-size: -5 is below 0; accepted: <accepted>".
inline CLI::Validator at_least(long long min, const std::string& accepted) {
  return whole_in(min, std::numeric_limits<long long>::max(), accepted);
}

/// A real-number option from `lo` (itself refused when `lo_open`) up to `hi` (included; +inf:
/// no ceiling), and finite: "--tol: -1 is below 0; accepted: <accepted>", "--init-p: 0 is not
/// above 0; …", "--init-p: 1.5 is above 1; …". Text that is no number is left to the option's
/// own conversion, which names it.
inline CLI::Validator number_in(double lo, bool lo_open, double hi, const std::string& accepted) {
  const auto shown = [](double v) {
    std::ostringstream out;
    out << v;
    return out.str();
  };
  const bool ceiling = std::isfinite(hi);
  return CLI::Validator(
      [=](std::string& text) -> std::string {
        double value = 0.0;
        if (!CLI::detail::lexical_cast(text, value)) return {};
        std::string why;
        if (!std::isfinite(value))  // "inf", "nan", and past the largest double ("1e400")
          why = " is not a finite number";
        else if (value < lo || (lo_open && value == lo))
          why = (lo_open ? " is not above " : " is below ") + shown(lo);
        else if (value > hi)
          why = " is above " + shown(hi);
        else
          return {};
        return text + why + "; accepted: " + accepted;
      },
      // in --help, one word: NUMBER:>0, NUMBER:≥0, NUMBER:(0,1]
      ceiling ? (lo_open ? "(" : "[") + shown(lo) + "," + shown(hi) + "]" : (lo_open ? ">" : "≥") + shown(lo));
}

/// A finite real-number option of at least `min`.
inline CLI::Validator number_at_least(double min, const std::string& accepted) {
  return number_in(min, false, std::numeric_limits<double>::infinity(), accepted);
}

/// A finite real-number option above `min`.
inline CLI::Validator number_above(double min, const std::string& accepted) {
  return number_in(min, true, std::numeric_limits<double>::infinity(), accepted);
}

}  // namespace mixle::host
