// Option checks whose messages say what is accepted. CLI11's NonNegativeNumber and PositiveNumber
// state their range as "0.000000 to 1.797…e308" (and PositiveNumber's as starting at 0 although
// it refuses 0); these name the floor and its meaning instead. Each reads the text with CLI11's
// own conversion, the one the option's value comes from, so every form that conversion takes
// ("+0", "0x0", "1e400") is checked as the value it becomes.
#pragma once

#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <iomanip>
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
  // 15 significant digits (digits10): a bound written as a decimal of up to 15 digits reads as
  // written — a year is 31536000, not 3.1536e+07, and 0.1 is not 0.10000000000000001.
  const auto shown = [](double v) {
    std::ostringstream out;
    out << std::setprecision(std::numeric_limits<double>::digits10) << v;
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

/// The longest `--timeout`: a year, in seconds.
inline constexpr double kMaxTimeoutSeconds = 365.0 * 24 * 3600;

/// `--timeout` of the commands that wait for other ranks: seconds in (0, a year].
inline CLI::Validator timeout_seconds() {
  return number_in(0, true, kMaxTimeoutSeconds, "seconds > 0, at most a year (31536000)");
}

/// `--timeout` seconds as the milliseconds the communicators take, rounded up (a whole number
/// of milliseconds that the decimal-to-binary conversion left a hair above stays itself), and at
/// least 1 ms, not a 0 they would refuse. `seconds` is in (0, kMaxTimeoutSeconds].
inline std::chrono::milliseconds timeout_ms(double seconds) {
  const double ms = seconds * 1000.0, whole = std::round(ms);
  const double up = std::abs(ms - whole) <= 1e-6 * std::max(1.0, whole) ? whole : std::ceil(ms);
  return std::chrono::milliseconds(std::max(1LL, static_cast<long long>(up)));
}

/// Integers on the command line are decimal, as Python's and torchrun's are: CLI11 reads them
/// with C's base detection, where "010" is octal 8 and "0x10" is 16. This transform, run before
/// an option's checks, drops a decimal's leading zeros ("010" → "10", "-007" → "-7") and refuses
/// a hexadecimal prefix, naming it; other text is left to the option's own conversion.
inline std::string decimal_integer(std::string text) {
  const std::size_t digits = !text.empty() && (text[0] == '+' || text[0] == '-') ? 1 : 0;
  if (text.size() < digits + 2 || text[digits] != '0') return text;
  if (text[digits + 1] == 'x' || text[digits + 1] == 'X')
    throw CLI::ValidationError(text + " is not a decimal integer; accepted: decimal digits (no 0x prefix)");
  if (text.find_first_not_of("0123456789", digits) != std::string::npos) return text;
  const std::size_t first = std::min(text.find_first_not_of('0', digits), text.size() - 1);
  return text.substr(0, digits) + text.substr(first);
}

/// Gives every integer option of `app` and of its subcommands and option groups, however deep,
/// the decimal_integer transform. Call it once every option has been added.
inline void decimal_integers(CLI::App& app) {
  for (CLI::Option* option : app.get_options()) {
    const std::string type = option->get_type_name();
    const std::string base = type.substr(0, type.find(':'));
    if (base == "INT" || base == "UINT") option->transform(decimal_integer);
  }
  for (CLI::App* sub : app.get_subcommands(std::function<bool(CLI::App*)>{})) decimal_integers(*sub);
}

}  // namespace mixle::host
