// The `distributed` encoded-data handle (aliases `torchrun`, `mpi`): this rank holds only its
// contiguous row range; every operation accumulates locally and all-reduces the flat float64
// statistics once, so every rank runs the identical M-step on identical bytes (docs/design.md §8).
#pragma once

#include "comms/communicator.hpp"
#include "engine/local_handle.hpp"

#include <functional>
#include <memory>
#include <vector>

namespace mixle::engine {

/// Row range [begin, end) of one rank.
struct RowRange {
  std::size_t begin = 0;
  std::size_t end = 0;
};

/// The number of rows (or components) of the largest of `ranges`; 0 for none.
std::size_t largest_range(const std::vector<RowRange>& ranges);

/// Rounds placement boundaries to multiples of the kernels' row block so that every world size
/// folds the same rows into the same compute-precision block sums (results then agree across
/// world sizes to float64 rounding). `splits` are the W−1 ascending points between consecutive
/// ranks' rows (rank 0 starts at row 0, the last ends at `rows`); W ranges are returned.
std::vector<RowRange> align_row_ranges(const std::vector<std::size_t>& splits, std::size_t rows);
/// `rows` split evenly over `parts` ≥ 1 ranks (split points ⌊rows·w/parts⌋), then aligned as above.
std::vector<RowRange> even_row_ranges(std::size_t rows, std::size_t parts);

class DistributedEncodedData final : public LocalEncodedData {
 public:
  /// `local` holds rows [first_row, first_row + local.rows()) of `global_rows`; `comm` must
  /// outlive the handle. Collectives time out per the communicator.
  DistributedEncodedData(Dataset local, std::size_t global_rows, std::size_t first_row, comms::Communicator& comm,
                         std::unique_ptr<Compute> compute);
  /// The same over a Compute shared with other handles (LocalEncodedData's shared form).
  DistributedEncodedData(Dataset local, std::size_t global_rows, std::size_t first_row, comms::Communicator& comm,
                         std::shared_ptr<Compute> compute);

  std::string backend() const override { return "distributed"; }
  std::size_t rows() const override { return global_rows_; }
  double total_weight() override;
  void check(const Model& model) override;
  std::vector<double> column_max() override;
  Statistics stream_accumulate(const Model& model, const EstimatorOptions& options) override;
  Statistics accumulate_assigned(const Model& shape, const Assigner& assign) override;
  void fold_rows(std::vector<double>& sums, const RowVisitor& visit) override;
  Dataset sample(std::uint64_t seed, std::size_t target) override;

  comms::Communicator& communicator() { return comm_; }
  /// Keeps `owner` (the communicator this handle uses) alive as long as the handle.
  void own(std::shared_ptr<comms::Communicator> owner) { owned_ = std::move(owner); }
  std::size_t first_row() const { return first_row_; }
  std::size_t local_rows() const { return data_.rows(); }
  /// Wall seconds this rank spent inside the statistics all-reduces (waiting for slower ranks
  /// included), for receipts and the all-reduce share in benchmarks.
  double collective_seconds() const { return collective_seconds_; }

 protected:
  std::size_t first_global_row() const override { return first_row_; }

 private:
  /// all_reduce_with_marks (engine/error_marks.hpp) of `values` after `local`, timed into
  /// collective_seconds: a failure on one rank becomes an error on every rank instead of a hang. With `on_device`,
  /// `local` ran one accumulate of this rank's Compute into zeros: the sums are then taken where that Compute holds
  /// them (Compute::all_reduce_statistics), on the host otherwise.
  void reduce_with_errors(std::vector<double>& values, const std::function<void()>& local, const char* what,
                          bool on_device = false);

  std::size_t global_rows_;
  std::size_t first_row_;
  comms::Communicator& comm_;
  std::shared_ptr<comms::Communicator> owned_;
  double collective_seconds_ = 0.0;
};

}  // namespace mixle::engine
