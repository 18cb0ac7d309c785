#include "engine/distributed_handle.hpp"
#include "comms/failpoint.hpp"
#include "engine/error_marks.hpp"
#include "kernels/cpu/cpu_kernels.hpp"

#include <mixle/error.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <exception>
#include <limits>

namespace mixle::engine {

std::vector<RowRange> align_row_ranges(const std::vector<std::size_t>& splits, std::size_t rows) {
  constexpr std::size_t kAlign = kernels::cpu::kBlockRows;
  std::vector<RowRange> out;
  std::size_t previous = 0;
  for (const std::size_t split : splits) {
    const std::size_t b = std::clamp((split + kAlign / 2) / kAlign * kAlign, previous, rows);
    out.push_back({previous, b});
    previous = b;
  }
  out.push_back({previous, rows});
  return out;
}

std::vector<RowRange> even_row_ranges(std::size_t rows, std::size_t parts) {
  std::vector<std::size_t> splits;
  // ⌊rows·w/parts⌋ without forming rows·w (which could overflow).
  for (std::size_t w = 1; w < parts; ++w) splits.push_back(rows / parts * w + rows % parts * w / parts);
  return align_row_ranges(splits, rows);
}

std::size_t largest_range(const std::vector<RowRange>& ranges) {
  std::size_t largest = 0;
  for (const RowRange& r : ranges) largest = std::max(largest, r.end - r.begin);
  return largest;
}

DistributedEncodedData::DistributedEncodedData(Dataset local, std::size_t global_rows, std::size_t first_row,
                                               comms::Communicator& comm, std::unique_ptr<Compute> compute)
    : DistributedEncodedData(std::move(local), global_rows, first_row, comm,
                             std::shared_ptr<Compute>(std::move(compute))) {}

DistributedEncodedData::DistributedEncodedData(Dataset local, std::size_t global_rows, std::size_t first_row,
                                               comms::Communicator& comm, std::shared_ptr<Compute> compute)
    : LocalEncodedData(std::move(local), std::move(compute)),
      global_rows_(global_rows),
      first_row_(first_row),
      comm_(comm) {}

void DistributedEncodedData::reduce_with_errors(std::vector<double>& values, const std::function<void()>& local,
                                                const char* what, bool on_device) {
  all_reduce_with_marks(comm_, values, local, what, [&](std::vector<double>& marked, bool failed_here) {
    comms::failpoint(comms::kFailpointAllReduce);
    const auto t0 = std::chrono::steady_clock::now();
    // Every rank makes one all-reduce of the same length either way (a failed rank on the host).
    if (!(on_device && !failed_here && compute().all_reduce_statistics(comm_, marked)))
      comm_.all_reduce_sum(std::span<double>(marked));
    collective_seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  });
}

void DistributedEncodedData::check(const Model& model) {
  std::vector<double> none;
  reduce_with_errors(
      none, [&] { LocalEncodedData::check(model); }, "checking the data");
}

double DistributedEncodedData::total_weight() {
  std::vector<double> total{LocalEncodedData::total_weight()};
  comm_.all_reduce_sum(std::span<double>(total));
  return total[0];
}

std::vector<double> DistributedEncodedData::column_max() {
  std::vector<double> mx = LocalEncodedData::column_max();
  comm_.all_reduce_max(std::span<double>(mx));
  return mx;
}

Statistics DistributedEncodedData::stream_accumulate(const Model& model, const EstimatorOptions& options) {
  Statistics s = Statistics::zero(static_cast<std::size_t>(stat_size(model, options)));
  reduce_with_errors(
      s.values,
      [&] {
        // An empty local range (more ranks than row blocks) contributes zeros.
        if (data_.rows() > 0) s = LocalEncodedData::stream_accumulate(model, options);
      },
      // marginalise adds host sums; streamed chunks are several Compute calls
      "the E-step", /*on_device=*/data_.rows() > 0 && !options.marginalise && one_call_per_pass());
  return s;
}

Statistics DistributedEncodedData::accumulate_assigned(const Model& shape, const Assigner& assign) {
  Statistics s = Statistics::zero(static_cast<std::size_t>(stat_layout(shape).size));
  reduce_with_errors(
      s.values,
      [&] {
        if (data_.rows() > 0) s = LocalEncodedData::accumulate_assigned(shape, assign);
      },
      "hard assignments (initialisation or an empty-component reseed)");
  return s;
}

void DistributedEncodedData::fold_rows(std::vector<double>& sums, const RowVisitor& visit) {
  reduce_with_errors(
      sums, [&] { LocalEncodedData::fold_rows(sums, visit); },
      "a pass over the rows (k-means or an empty-component reseed)");
}

Dataset DistributedEncodedData::sample(std::uint64_t seed, std::size_t target) {
  // No rows at all gives target / 0 = inf (or NaN for target 0): std::min keeps 1.0 either way.
  const double p = std::min(1.0, static_cast<double>(target) / static_cast<double>(global_rows_));
  const std::size_t C = data_.cols(), W = static_cast<std::size_t>(comm_.size());
  if (W == 1) return sample_local(seed, p);  // the gather below would copy it to itself
  // Gather counts (and whether rows are weighted: a rank without rows may not know), then every
  // rank's rows padded to the largest count, each with its weight as one more column when
  // weighted; ranks hold ascending contiguous ranges, so rank order is global row order — the
  // same sample as one process. The sample is held once beside what is gathered: this rank's
  // rows go into the send buffer and are dropped, and the gathered rows are packed in place.
  std::vector<double> counts(2 * W), send;
  std::size_t most = 0, S = C;  // rows of the rank with the most; values sent per row
  bool weighted = false;        // whether any rank's rows are (each then sends its weight too)
  {
    const Dataset mine = sample_local(seed, p);
    const std::vector<double> count{static_cast<double>(mine.rows()), mine.weighted() ? 1.0 : 0.0};
    comm_.all_gather(std::span<const double>(count), std::span<double>(counts));
    for (std::size_t w = 0; w < W; ++w) {
      most = std::max(most, static_cast<std::size_t>(counts[2 * w]));
      weighted = weighted || counts[2 * w + 1] != 0.0;
    }
    if (weighted) ++S;
    send.assign(most * S, 0.0);
    const double* values = mine.rows() ? mine.as<double>() : nullptr;  // sample_local's rows are float64
    for (std::size_t r = 0; r < mine.rows(); ++r) {
      std::copy_n(values + r * C, C, send.begin() + static_cast<std::ptrdiff_t>(r * S));
      if (weighted) send[r * S + C] = mine.weighted() ? mine.weights()[r] : 1.0;
    }
  }
  std::vector<double> rows(W * send.size()), weights;
  comm_.all_gather(std::span<const double>(send), std::span<double>(rows));
  std::vector<double>().swap(send);
  // Pack rank by rank, row by row: each row moves to an index at or below its own.
  std::size_t n = 0;
  for (std::size_t w = 0; w < W; ++w) {
    const std::size_t k = static_cast<std::size_t>(counts[2 * w]);
    for (std::size_t r = 0; r < k; ++r, ++n) {
      const std::size_t from = (w * most + r) * S;
      if (weighted) weights.push_back(rows[from + C]);
      if (from != n * C)
        std::copy(rows.begin() + static_cast<std::ptrdiff_t>(from),
                  rows.begin() + static_cast<std::ptrdiff_t>(from + C),
                  rows.begin() + static_cast<std::ptrdiff_t>(n * C));
    }
  }
  rows.resize(n * C);
  Dataset out = Dataset::from_vector(std::move(rows), n, C);
  return weighted ? out.with_weights(std::move(weights)) : out;
}

}  // namespace mixle::engine
