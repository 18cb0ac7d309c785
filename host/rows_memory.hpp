// How a process holds the rows it fits under a memory budget: resident (mapped or read, with a
// float32 copy when fp32 GPU compute of float64 rows can afford one) or streamed from the file in
// chunks on every pass (docs/streaming.md, "Memory").
#pragma once

#include "engine/local_handle.hpp"

#include <mixle/data.hpp>
#include <mixle/fit.hpp>

#include <cstddef>
#include <cstdint>
#include <string>

namespace mixle::host {

struct RowsMemory {
  std::uint64_t budget = 0;      ///< bytes the rows may take: FitOptions::memory_budget or the default
  bool given = false;            ///< the budget was FitOptions::memory_budget, not the default
  std::uint64_t rows_bytes = 0;  ///< the rows as mapped or read, with their weights
  std::uint64_t copy_bytes = 0;  ///< the float32 copy the Compute would make (engine::f32_copy_bytes; 0: none)
  bool f32_copy = true;          ///< that copy may be made
  std::size_t chunk_rows = 0;    ///< > 0: streamed in chunks of this many rows
  std::uint64_t chunk_bytes = 0;
  /// Why rows over the default budget stay resident (they are not mapped from a file, or
  /// `--missing` copies them); empty otherwise.
  std::string resident_because;

  /// One line for a fit's summary: "resident (1.2 GiB; budget 8.0 GiB)" or "streamed from the
  /// file in chunks of 65536 rows (16.0 MiB; budget 64.0 MiB)".
  std::string summary() const;
};

/// The default budget of one process: half the memory it may use (the least of MemTotal and its
/// cgroups' limits: usable_memory_bytes), divided among the `local_ranks` processes of its node;
/// 0 when no limit can be read (then nothing is streamed by default).
std::uint64_t default_memory_budget(int local_ranks);

/// How `rows` (one process's, already read: mapped when they come from a float .npy or raw
/// file) are held for `options` (memory_budget, precision, missing); `local_ranks` shares the
/// default budget. Rows, weights and copy within the budget stay resident (the copy is dropped
/// first); otherwise they are streamed in chunks of the most whole kernel tiles (2048 rows) that
/// half the budget left by the weights holds. A given budget that cannot be kept throws
/// UsageError naming what to change: below one chunk, a component-sharded fit (`sharded`: its
/// shards exchange every row's log-likelihoods, so it holds its rows resident), rows that are not
/// mapped (CSV, integer .npy) or `missing` other than "error" (it copies the rows it keeps); the
/// default budget then keeps the rows resident instead and says why (resident_because).
RowsMemory plan_rows_memory(const Dataset& rows, const FitOptions& options, int local_ranks, bool sharded = false);

/// Holds `handle`'s rows as `plan` says (LocalEncodedData::stream_rows, allow_f32_copy). A handle
/// of another backend (a host program's) holds its rows its own way and is left alone.
void hold_rows(EncodedData& handle, const RowsMemory& plan);

}  // namespace mixle::host
