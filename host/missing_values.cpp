#include "host/missing_values.hpp"

#include <mixle/error.hpp>
#include <mixle/family.hpp>

#include <cmath>
#include <memory>

namespace mixle::host {

MissingPolicy missing_policy_from_name(const std::string& name) {
  if (name == "error") return MissingPolicy::error;
  if (name == "drop") return MissingPolicy::drop;
  if (name == "marginalise" || name == "marginalize") return MissingPolicy::marginalise;
  throw InvalidInput("missing-value policy '" + name + "' is not one of: error, drop, marginalise");
}

std::vector<PartSpec> modelled_parts(const FitOptions& options, std::size_t columns) {
  if (options.init != InitMethod::model || !options.init_model) return parse_layout(options.layout, columns);
  std::vector<PartSpec> parts;
  for (const Part& p : options.init_model->parts)
    parts.push_back(PartSpec{p.family, p.col_begin, p.col_end, p.categories});
  return parts;
}

namespace {

template <class T>
DroppedRows drop_typed(const Dataset& data, const std::vector<PartSpec>& parts, bool marginalise) {
  const std::size_t rows = data.rows(), cols = data.cols();
  const T* x = data.as<T>();
  // Per column: modelled, and the value that replaces NaN there.
  std::vector<char> modelled(cols, 0);
  std::vector<T> neutral(cols, T(1));
  for (const PartSpec& p : parts)
    for (std::size_t c = p.col_begin; c < p.col_end && c < cols; ++c) {
      modelled[c] = 1;
      neutral[c] = family_descriptor(p.family).discrete ? T(0) : T(1);
    }
  auto missing = [&](std::size_t r) {
    for (std::size_t c = 0; c < cols; ++c)
      if (modelled[c] && std::isnan(x[r * cols + c])) return true;
    return false;
  };
  DroppedRows out;
  std::size_t first_missing = rows;
  for (std::size_t r = 0; r < rows && first_missing == rows; ++r)
    if (missing(r)) first_missing = r;
  if (first_missing == rows) {
    out.data = data;
    return out;
  }
  auto values = std::make_shared<std::vector<T>>(x, x + rows * cols);
  std::vector<double> weights(rows, 1.0);
  if (const double* w = data.weights()) weights.assign(w, w + rows);
  std::vector<std::size_t> columns;
  for (std::size_t r = first_missing; r < rows; ++r) {
    if (!missing(r)) continue;
    columns.clear();
    for (std::size_t c = 0; c < cols; ++c)
      if (modelled[c] && std::isnan((*values)[r * cols + c])) {
        (*values)[r * cols + c] = neutral[c];
        columns.push_back(c);
      }
    if (marginalise) out.incomplete.add(r, weights[r], columns);
    weights[r] = 0.0;
    if (out.first.size() < kDroppedListed) out.first.push_back(data.first_row() + r);
    ++out.count;
  }
  const T* copy = values->data();
  out.data = Dataset::from_storage(std::move(values), copy, data.dtype(), rows, cols, data.source(), data.first_row())
                 .with_weights(std::move(weights), data.source());
  return out;
}

}  // namespace

DroppedRows drop_missing_rows(const Dataset& data, const std::vector<PartSpec>& parts) {
  return data.dtype() == DType::f32 ? drop_typed<float>(data, parts, false) : drop_typed<double>(data, parts, false);
}

DroppedRows drop_missing_rows(const Dataset& data, const FitOptions& options) {
  if (data.empty()) return DroppedRows{data, 0, {}, {}};
  return drop_missing_rows(data, modelled_parts(options, data.cols()));
}

DroppedRows marginalise_missing_rows(const Dataset& data, const std::vector<PartSpec>& parts) {
  engine::require_observed_columns(parts);
  return data.dtype() == DType::f32 ? drop_typed<float>(data, parts, true) : drop_typed<double>(data, parts, true);
}

DroppedRows handle_missing_rows(const Dataset& data, const FitOptions& options) {
  switch (missing_policy_from_name(options.missing)) {
    case MissingPolicy::error: break;
    case MissingPolicy::drop: return drop_missing_rows(data, options);
    case MissingPolicy::marginalise: {
      const std::vector<PartSpec> parts = modelled_parts(options, data.cols());
      engine::require_observed_columns(parts);  // on every rank, an empty share's too
      if (data.empty()) break;
      return marginalise_missing_rows(data, parts);
    }
  }
  return DroppedRows{data, 0, {}, {}};
}

void refuse_all_missing(std::size_t count, std::size_t rows, const std::string& source, const FitOptions& options,
                        const std::string& scope) {
  if (count == 0 || count < rows) return;
  const MissingPolicy policy = missing_policy_from_name(options.missing);
  if (policy == MissingPolicy::drop)
    throw InvalidInput(source + ": every row" + scope +
                       " has a missing value (NaN) in a modelled column; none is left to fit");
  if (policy == MissingPolicy::marginalise && options.init != InitMethod::model)
    throw InvalidInput(source + ": every row" + scope +
                       " has a missing value (NaN) in a modelled column, and an initialisation starts "
                       "from complete rows; give an initial model (--init-model) to marginalise them all");
}

void refuse_marginalise_sharded(const FitOptions& options) {
  if (missing_policy_from_name(options.missing) == MissingPolicy::marginalise)
    throw InvalidInput(
        "--missing marginalise does not run with component sharding (no rank holds a row's whole-mixture "
        "log-likelihood); use --missing drop, or a data-parallel backend");
}

engine::LocalEncodedData& local_handle_of(engine::EncodedData& handle) {
  auto* local = dynamic_cast<engine::LocalEncodedData*>(&handle);
  if (!local)
    throw InvalidInput("--missing marginalise needs the rows in this process; the " + handle.backend() +
                       " backend holds them elsewhere");
  return *local;
}

void note_missing_rows(FitResult& result, const FitOptions& options, std::size_t count,
                       const std::vector<std::size_t>& first) {
  if (count == 0) return;
  std::string rows;
  for (std::size_t i = 0; i < first.size(); ++i) rows += (i ? ", " : "") + std::to_string(first[i]);
  if (count > first.size()) rows += ", …";
  if (missing_policy_from_name(options.missing) == MissingPolicy::marginalise) {
    result.marginalised_rows = count;
    result.warnings.insert(result.warnings.begin(),
                           std::to_string(count) + " row(s) have a missing value (NaN) in a modelled column (rows " +
                               rows + ", counted from 0); their missing values were left out (marginalised)");
    return;
  }
  result.dropped_rows = count;
  result.rows -= count;
  result.warnings.insert(result.warnings.begin(), "dropped " + std::to_string(count) +
                                                      " row(s) with a missing value (NaN) in a modelled column (rows " +
                                                      rows + ", counted from 0); they take no part in the fit");
}

}  // namespace mixle::host
