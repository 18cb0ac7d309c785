// Missing values (`--missing`): what a fit does with a row that holds NaN in a column its model
// covers — refuse it (the default: the family's value rules name the row), drop it, or leave its
// missing values out of its log-density and statistics (marginalise).
#pragma once

#include "engine/incomplete_rows.hpp"
#include "engine/local_handle.hpp"

#include <mixle/data.hpp>
#include <mixle/fit.hpp>
#include <mixle/model.hpp>

#include <cstddef>
#include <string>
#include <vector>

namespace mixle::host {

enum class MissingPolicy { error, drop, marginalise };
MissingPolicy missing_policy_from_name(const std::string& name);

/// The parts a fit with `options` models on `columns` columns: the initial model's, or the layout's.
std::vector<PartSpec> modelled_parts(const FitOptions& options, std::size_t columns);

struct DroppedRows {
  Dataset data;                       // the rows to fit: `data` itself, or the copy described below
  std::size_t count = 0;              // rows dropped (or, marginalised, rows with a missing value)
  std::vector<std::size_t> first;     // the first few of them, numbered in their source (data.first_row() + r)
  engine::IncompleteRows incomplete;  // marginalised: those rows, for the handle (set_incomplete_rows)
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

/// `--missing marginalise`: the copy drop_missing_rows makes, and in `incomplete` each of those
/// rows with its weight and its missing columns, for the E-step to fold in from the observed
/// columns. Throws InvalidInput when a part's family cannot leave a value out
/// (engine::require_observed_columns), whether or not its columns miss one.
DroppedRows marginalise_missing_rows(const Dataset& data, const std::vector<PartSpec>& parts);

/// What `options.missing` asks of `data` (a rank's share): `data` itself under `error` (the
/// family's value rules then refuse a NaN), drop_missing_rows or marginalise_missing_rows.
DroppedRows handle_missing_rows(const Dataset& data, const FitOptions& options);

/// Refuses a fit in which every one of `rows` rows (`source` names them; `scope` follows "every
/// row" in the message, e.g. " (of every rank)") has a missing value: dropped, none is left;
/// marginalised, only an initial model (init = model) can start it, for an initialisation draws
/// complete rows.
void refuse_all_missing(std::size_t count, std::size_t rows, const std::string& source, const FitOptions& options,
                        const std::string& scope = "");
/// Component sharding cannot marginalise: no rank holds a row's whole-mixture log-likelihood.
void refuse_marginalise_sharded(const FitOptions& options);
/// The handle of a fit with rows in this process (local, component_parallel): marginalised rows
/// are attached to it. Throws InvalidInput for a backend whose handle holds no rows here.
engine::LocalEncodedData& local_handle_of(engine::EncodedData& handle);

/// Records rows with missing values in a fit's result under `options.missing`: dropped —
/// dropped_rows, rows (less the dropped ones) and a warning naming the first of them — or
/// marginalised (marginalised_rows and a note naming them). Nothing when `count` is 0.
void note_missing_rows(FitResult& result, const FitOptions& options, std::size_t count,
                       const std::vector<std::size_t>& first);

}  // namespace mixle::host
