// How `mixle score` cuts its rows into chunks: about 64 MiB of rows and responsibilities per chunk.
#pragma once

#include <mixle/error.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdlib>
#include <string>

namespace mixle::host {

/// Rows scored at once for a K-component model over rows of `row_bytes` bytes: 64 MiB of
/// float64 responsibilities and rows together, 64 MiB / (8 K + row_bytes) — at least 4096 rows,
/// a multiple of 128 (the CPU kernels' block). MIXLE_SCORE_CHUNK_ROWS=<rows> sets it (tests use
/// it to make several chunks of a small file).
inline std::size_t score_chunk_rows(std::size_t K, std::size_t row_bytes) {
  if (const char* text = std::getenv("MIXLE_SCORE_CHUNK_ROWS"); text && *text) {
    char* end = nullptr;
    const long long v = std::strtoll(text, &end, 10);
    if (*end != '\0' || v <= 0)
      throw UsageError(std::string("MIXLE_SCORE_CHUNK_ROWS=") + text + ": a positive number of rows expected");
    return static_cast<std::size_t>(v);
  }
  const std::size_t rows = (std::size_t{64} << 20) / std::max<std::size_t>(sizeof(double) * K + row_bytes, 1);
  return std::max<std::size_t>(4096, rows / 128 * 128);
}

/// Calls fn(begin, end) for the chunks [begin, end) of `rows` rows, in order.
template <class Fn>
void for_each_chunk(std::size_t rows, std::size_t chunk, Fn&& fn) {
  for (std::size_t begin = 0; begin < rows; begin += chunk) fn(begin, std::min(rows, begin + chunk));
}

}  // namespace mixle::host
