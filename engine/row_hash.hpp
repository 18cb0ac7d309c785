// Counter-based randomness keyed by (seed, global row index): a row's draw never depends on
// which rank holds it or in what order rows are visited, so initialisation and sampling give
// the same result at every world size and thread count.
#pragma once

#include <cstdint>

namespace mixle::engine {

/// SplitMix64 finaliser (Steele, Lea & Flood 2014): a bijective 64-bit mix.
constexpr std::uint64_t mix64(std::uint64_t z) {
  z += 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

/// A 64-bit draw for (seed, stream, row).
constexpr std::uint64_t row_draw(std::uint64_t seed, std::uint64_t stream, std::uint64_t row) {
  return mix64(mix64(seed ^ (stream * 0xD1B54A32D192ED03ull)) ^ row);
}

/// Uniform in [0, 1) with 53 random bits.
constexpr double to_unit(std::uint64_t bits) { return static_cast<double>(bits >> 11) * 0x1.0p-53; }

}  // namespace mixle::engine
