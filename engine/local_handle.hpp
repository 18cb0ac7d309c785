// The in-process `local` handle: all rows in this process, one Compute.
#pragma once

#include "engine/encoded_data.hpp"
#include "engine/incomplete_rows.hpp"

namespace mixle::engine {

class LocalEncodedData : public EncodedData {
 public:
  LocalEncodedData(Dataset data, std::unique_ptr<Compute> compute);
  /// A handle whose Compute is shared with others (stepwise EM's batch handles share the whole
  /// data's: one set of device buffers, not one per batch). Handles sharing a Compute must not
  /// run passes at the same time.
  LocalEncodedData(Dataset data, std::shared_ptr<Compute> compute);
  static std::unique_ptr<EncodedData> create(const Dataset& data, const EncodedDataOptions& options);

  std::string backend() const override { return "local"; }
  std::size_t rows() const override { return data_.rows(); }
  double total_weight() override;
  std::size_t columns() const override { return data_.cols(); }
  void check(const Model& model) override;
  std::vector<double> column_max() override;
  Statistics stream_accumulate(const Model& model, const EstimatorOptions& options) override;
  Statistics accumulate_assigned(const Model& shape, const Assigner& assign) override;
  void fold_rows(std::vector<double>& sums, const RowVisitor& visit) override;
  Dataset sample(std::uint64_t seed, std::size_t target) override;

  const Dataset& data() const { return data_; }
  /// Rows of data() with missing values, held there with weight 0 and placeholders: every E-step
  /// under EstimatorOptions::marginalise folds them in from their observed columns
  /// (engine/incomplete_rows.hpp) on `threads` CPU threads (0: OpenMP's default).
  void set_incomplete_rows(IncompleteRows rows, int threads) {
    incomplete_ = std::move(rows);
    incomplete_threads_ = threads;
  }
  Compute& compute() { return *compute_; }
  /// This handle's Compute, for another handle to share.
  const std::shared_ptr<Compute>& shared_compute() const { return compute_; }

  /// Streams the rows instead of holding them resident: every pass walks them in chunks of
  /// `chunk_rows` rows and releases each chunk's pages after it (Dataset::release: rows mapped
  /// from a file then never become resident whole), and float64 rows computed in float32 are
  /// converted block by block by the kernels instead of copied whole. `chunk_rows` must be a
  /// multiple of kernels::cpu::kTileRows: the statistics are then bit-identical to the resident
  /// passes'. 0 (the default): resident.
  void stream_rows(std::size_t chunk_rows);
  std::size_t chunk_rows() const { return chunk_rows_; }
  /// Whether float64 rows computed in float32 by a GPU Compute may be copied to float32 once,
  /// whole (half the bytes per pass; by default when the copy takes at most an eighth of physical
  /// memory; the CPU kernels convert block by block instead). A memory budget the copy does not
  /// fit in turns it off.
  void allow_f32_copy(bool allow) { allow_f32_copy_ = allow; }
  /// (row, component) pairs the last stream_accumulate evaluated per row (exact pruning: K
  /// where every pair was); 0 before the first one, or where the Compute does not count them.
  double pairs_per_row() const {
    return last_pass_.pairs > 0 && data_.rows() > 0
               ? static_cast<double>(last_pass_.evaluated_pairs) / static_cast<double>(data_.rows())
               : 0.0;
  }

 protected:
  /// The global row index of this handle's row 0 (non-zero for a rank's shard).
  virtual std::size_t first_global_row() const { return 0; }
  /// Rows considered by sample(): local rows chosen with probability p (global-row keyed).
  Dataset sample_local(std::uint64_t seed, double p) const;

  /// The rows in the form the E-step streams for `precision` (a float32 copy of float64 rows
  /// for fp32 compute on a GPU, made once when it fits comfortably in memory; else the rows
  /// themselves).
  const Dataset& encoded_for(Precision precision);
  /// Whether an E-step is one Compute call over all rows (resident, or a single chunk): only then
  /// does the Compute hold exactly the step's statistics (Compute::all_reduce_statistics).
  bool one_call_per_pass() const { return chunk_rows_ == 0 || data_.rows() <= chunk_rows_; }
  /// Calls visit(rows, begin) for consecutive chunks of data_ (rows [begin, begin + rows.rows())),
  /// of `chunk` rows, releasing each one's pages after its visit when streaming.
  template <class Visit>
  void for_each_chunk(std::size_t chunk, Visit&& visit) const;

  Dataset data_;
  Dataset encoded_f32_;
  std::shared_ptr<Compute> compute_;
  IncompleteRows incomplete_;
  int incomplete_threads_ = 0;
  std::size_t chunk_rows_ = 0;  // 0: resident
  bool allow_f32_copy_ = true;
  kernels::PassReport last_pass_;  // of the last stream_accumulate
};

/// Checks the data's columns against the model's parts (shared by every handle).
void check_data_against(const Model& model, const Dataset& data);

}  // namespace mixle::engine
