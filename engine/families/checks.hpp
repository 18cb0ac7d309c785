// Helpers shared by the family implementations: messages and the data-column scan.
#pragma once

#include <mixle/data.hpp>
#include <mixle/error.hpp>
#include <mixle/model.hpp>

#include <cmath>
#include <cstddef>
#include <sstream>
#include <string>
#include <vector>

namespace mixle::engine {

inline std::string format_number(double v) {
  std::ostringstream os;
  os.precision(17);
  os << v;
  return os.str();
}

/// Throws InvalidInput unless `array` has `expected` values.
inline void require_size(const std::vector<double>& array, std::size_t expected, const std::string& where,
                         const char* field, const char* shape) {
  if (array.size() != expected)
    throw InvalidInput(where + ": \"" + field + "\" has " + std::to_string(array.size()) + " values; expected " +
                       std::to_string(expected) + " (" + shape + ")");
}

/// Throws InvalidInput naming parameter `field`[k][i] unless `ok`.
inline void require_value(bool ok, const std::string& where, const char* field, std::size_t k, std::size_t i,
                          double value, const char* rule) {
  if (!ok)
    throw InvalidInput(where + ": " + field + "[" + std::to_string(k) + "][" + std::to_string(i) +
                       "] = " + format_number(value) + " is invalid: " + rule);
}

/// Calls rule(value) for every value of columns [part.col_begin, part.col_end) of `data`, and
/// throws InvalidInput naming the source, row, column and the accepted values at the first
/// failure.
template <class Rule>
void check_columns(const Part& part, const Dataset& data, const char* accepted, Rule rule) {
  const std::size_t rows = data.rows(), cols = data.cols();
  auto scan = [&](const auto* x) {
    for (std::size_t r = 0; r < rows; ++r) {
      const auto* row = x + r * cols;
      for (std::size_t c = part.col_begin; c < part.col_end; ++c) {
        const double v = static_cast<double>(row[c]);
        if (!rule(v))
          throw InvalidInput(data.source() + ": row " + std::to_string(data.first_row() + r) + ", column " +
                             std::to_string(c) + ": value " + format_number(v) + " is not valid for " +
                             family_name(part.family) + " (accepted: " + accepted + "; rows and columns count from 0)");
      }
    }
  };
  if (data.dtype() == DType::f32)
    scan(data.as<float>());
  else
    scan(data.as<double>());
}

inline bool is_integer(double v) { return std::isfinite(v) && v == std::floor(v); }

}  // namespace mixle::engine
