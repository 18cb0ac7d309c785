#include "host/rows_memory.hpp"

#include "engine/compute.hpp"
#include "host/bytes_text.hpp"
#include "host/resources_discovery.hpp"
#include "kernels/cpu/cpu_kernels.hpp"

#include <mixle/error.hpp>

#include <algorithm>

namespace mixle::host {

std::string RowsMemory::summary() const {
  const std::string of = budget ? "; budget " + bytes_text(budget) + (given ? ")" : ", the default)") : ")";
  if (chunk_rows > 0)
    return "streamed from the file in chunks of " + std::to_string(chunk_rows) + " rows (" + bytes_text(chunk_bytes) +
           of;
  std::string text = "resident (" + bytes_text(rows_bytes + (f32_copy ? copy_bytes : 0));
  if (copy_bytes > 0) text += f32_copy ? ", a float32 copy included" : ", float32 converted per block";
  text += of;
  if (!resident_because.empty()) text += ", over the budget: " + resident_because;
  return text;
}

std::uint64_t default_memory_budget(int local_ranks) {
  const std::optional<std::uint64_t> usable = usable_memory_bytes();
  if (!usable) return 0;
  return *usable / 2 / static_cast<std::uint64_t>(std::max(local_ranks, 1));
}

RowsMemory plan_rows_memory(const Dataset& rows, const FitOptions& options, int local_ranks, bool sharded) {
  RowsMemory plan;
  plan.given = options.memory_budget > 0;
  plan.budget = plan.given ? options.memory_budget : default_memory_budget(local_ranks);
  const std::uint64_t row_bytes = rows.cols() * dtype_size(rows.dtype());
  const std::uint64_t weight_bytes = rows.weighted() ? sizeof(double) : 0;
  plan.rows_bytes = rows.rows() * (row_bytes + weight_bytes);
  plan.copy_bytes = engine::f32_copy_bytes(options.device, engine::precision_from_name(options.precision), rows);
  if (plan.budget == 0 || plan.rows_bytes + plan.copy_bytes <= plan.budget) return plan;
  plan.f32_copy = false;
  if (plan.rows_bytes <= plan.budget) return plan;

  const std::string budget_text = "--memory-budget " + bytes_text(plan.budget);
  const std::string what = rows.source() + ": its " + std::to_string(rows.rows()) + " rows take " +
                           bytes_text(plan.rows_bytes) + ", more than " + budget_text;
  std::string cannot;
  if (sharded)
    cannot = "a component-sharded fit holds its rows resident; raise the budget or spread the rows over more ranks";
  else if (!rows.mapped())
    cannot =
        "rows read into memory (CSV, an integer or misaligned .npy) cannot be streamed; write them as a "
        "float32 or float64 .npy (or raw) file";
  else if (options.missing != "error")
    cannot = "--missing " + options.missing + " copies the rows it keeps; use --missing error on streamed rows";
  if (!cannot.empty()) {
    if (plan.given) throw UsageError(what + ": " + cannot);
    plan.resident_because = cannot;
    return plan;
  }
  // Weights stay resident; half of what is left holds one chunk, the rest the passes' own buffers.
  const std::uint64_t weights = rows.rows() * weight_bytes;
  const std::uint64_t room = (plan.budget - std::min(plan.budget, weights)) / 2;
  const std::uint64_t tile_bytes = kernels::cpu::kTileRows * row_bytes;
  const std::uint64_t tiles = room / std::max<std::uint64_t>(tile_bytes, 1);
  if (tiles == 0)
    throw UsageError(what + ", and streamed rows need at least " + bytes_text(2 * tile_bytes + weights) +
                     " (twice one chunk of " + std::to_string(kernels::cpu::kTileRows) + " rows" +
                     (weights ? ", plus the weights" : "") + "); raise the budget");
  plan.chunk_rows = static_cast<std::size_t>(tiles) * kernels::cpu::kTileRows;
  plan.chunk_bytes = plan.chunk_rows * row_bytes;
  return plan;
}

void hold_rows(EncodedData& handle, const RowsMemory& plan) {
  auto* local = dynamic_cast<engine::LocalEncodedData*>(&handle);
  if (!local) return;
  local->allow_f32_copy(plan.f32_copy);
  local->stream_rows(plan.chunk_rows);
}

}  // namespace mixle::host
