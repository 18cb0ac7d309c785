// A CSV converted once to a .npy, with a record of the CSV it came from, and reused while that
// CSV is unchanged: fits and scores then map the .npy (no parsing; streamable under a memory
// budget) instead of reading the text into memory on every run (docs/streaming.md, "Memory").
#pragma once

#include <mixle/data.hpp>

#include <cstddef>
#include <string>

namespace mixle::host {

struct CsvCache {
  std::string path;        ///< the .npy to read
  bool converted = false;  ///< false: an up-to-date cache was reused
  std::size_t rows = 0, cols = 0;
};

/// Makes `cache` (a .npy path) hold the rows of the CSV `csv`, read with `options` (its
/// csv_dtype is the cache's element type; row ranges and weights are ignored), unless it already
/// does: the record beside it, `cache` + ".source", names the same CSV (absolute path), size,
/// modification time and element type, and the .npy has the recorded shape. Converting reads the
/// CSV once (into memory: the parser is whole-file), writes the .npy and then the record, each
/// atomically — an interrupted conversion leaves no record and is redone. Throws InvalidInput
/// naming the CSV's bad row and column, and UsageError when `cache` does not end in .npy.
CsvCache ensure_csv_cache(const std::string& csv, const std::string& cache, const ReadOptions& options);

}  // namespace mixle::host
