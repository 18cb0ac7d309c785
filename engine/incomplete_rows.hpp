// Rows with missing values left out of their log-density and statistics (`--missing
// marginalise`). The rows a handle streams hold such a row with weight 0 and a placeholder in
// each missing column, so the kernels fold it into nothing; this pass then folds it in float64
// on the host, column by column, from the observed columns only: its log-likelihood
// log Σ_k w_k Π_{observed d} p_d(x_d | k), its responsibilities, each observed column's
// statistics, and the mass of each missing column (the statistics' missing-mass region,
// engine/estimator.hpp), from which the M-step takes each column's own mass.
//
// The work is rows × K × observed columns scalar float64 operations, beside the kernels' vector
// ones: the path is for data in which rows with missing values are a minority.
#pragma once

#include "engine/estimator.hpp"

#include <mixle/data.hpp>
#include <mixle/model.hpp>

#include <cstddef>
#include <vector>

namespace mixle::engine {

struct IncompleteRows {
  std::vector<std::size_t> rows;              // indices in the handle's rows, ascending
  std::vector<double> weights;                // their sample weights (the handle's rows hold 0)
  std::vector<std::size_t> missing_begin{0};  // row i's missing columns: missing[missing_begin[i], missing_begin[i+1])
  std::vector<std::size_t> missing;           // data column indices

  std::size_t size() const { return rows.size(); }
  bool empty() const { return rows.empty(); }
  /// Appends a row (index `row`, sample weight `weight`) missing `columns`.
  void add(std::size_t row, double weight, const std::vector<std::size_t>& columns);
};

/// Checks that every one of `parts` can leave a missing value out (FamilyOps::observed_columns);
/// throws InvalidInput naming the first that cannot, and the remedies.
void require_observed_columns(const std::vector<PartSpec>& parts);

/// Adds the statistics of `incomplete` (rows of `rows`) under `model` to `stats`
/// (stat_size(model, options) values with options.marginalise): shifted moments about
/// shift_table(model, precision), as the kernels accumulate them, on `threads` CPU threads (0:
/// OpenMP's default) — the same sums for any number of threads. A row impossible under every
/// component (or NaN) raises the kernels' error, naming the row in `rows`' source.
void accumulate_incomplete(const Model& model, const Dataset& rows, const IncompleteRows& incomplete,
                           Precision precision, int threads, std::vector<double>& stats);

}  // namespace mixle::engine
