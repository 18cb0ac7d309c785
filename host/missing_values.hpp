// Missing values (`--missing`): what a fit does with a row that holds NaN in a column its model
// covers — refuse it (the default: the family's value rules name the row) or drop it.
#pragma once

#include <mixle/data.hpp>
#include <mixle/fit.hpp>
#include <mixle/model.hpp>

#include <cstddef>
#include <string>
#include <vector>

namespace mixle::host {

enum class MissingPolicy { error, drop };
MissingPolicy missing_policy_from_name(const std::string& name);

/// The parts a fit with `options` models on `columns` columns: the initial model's, or the layout's.
std::vector<PartSpec> modelled_parts(const FitOptions& options, std::size_t columns);

struct DroppedRows {
  Dataset data;                    // the rows to fit: `data` itself, or the copy described below
  std::size_t count = 0;           // rows dropped
  std::vector<std::size_t> first;  // the first few of them, numbered in their source (data.first_row() + r)
};
constexpr std::size_t kDroppedListed = 8;

/// Every row of `data` that holds NaN in a column of `parts` takes weight 0: it keeps its place —
/// messages still name the file's rows, ranks keep their shares, the same rows are drawn for an
/// initialisation — but takes no part in the fit, which then equals the fit of the file without
/// those rows from the same initial model. Its NaN values become a value every family accepts (0
/// in a discrete family's columns, 1 elsewhere) in a copy of the rows; a row that was already
/// weighted keeps its weight only when complete. Without such a row, `data` itself (no copy).
DroppedRows drop_missing_rows(const Dataset& data, const std::vector<PartSpec>& parts);
/// The same for the parts a fit with `options` models (modelled_parts); `data` itself when it
/// has no rows (a rank's empty share).
DroppedRows drop_missing_rows(const Dataset& data, const FitOptions& options);

/// Records dropped rows in a fit's result: dropped_rows, rows (less the dropped ones) and a
/// warning naming the first of them. Nothing when `count` is 0.
void note_dropped_rows(FitResult& result, std::size_t count, const std::vector<std::size_t>& first);

}  // namespace mixle::host
