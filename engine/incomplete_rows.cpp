#include "engine/incomplete_rows.hpp"
#include "engine/report.hpp"

#include <mixle/error.hpp>

#include <algorithm>
#include <cmath>
#include <limits>

namespace mixle::engine {

void IncompleteRows::add(std::size_t row, double weight, const std::vector<std::size_t>& columns) {
  rows.push_back(row);
  weights.push_back(weight);
  missing.insert(missing.end(), columns.begin(), columns.end());
  missing_begin.push_back(missing.size());
}

void require_observed_columns(const std::vector<PartSpec>& parts) {
  for (std::size_t i = 0; i < parts.size(); ++i) {
    const PartSpec& p = parts[i];
    if (family_ops(p.family).observed_columns()) continue;
    throw InvalidInput(
        "--missing marginalise leaves a missing value out of a row's log-density, which needs a family "
        "whose log-density is a sum over its columns; parts[" +
        std::to_string(i) + "] (" + family_name(p.family) + ", columns " + std::to_string(p.col_begin) + "-" +
        std::to_string(p.col_end - 1) +
        ") is not one (its missing values would need the observed block of the covariance). Use "
        "--missing drop, or model those columns with gaussian_diag");
  }
}

void accumulate_incomplete(const Model& model, const Dataset& rows, const IncompleteRows& incomplete,
                           Precision precision, std::vector<double>& stats) {
  if (incomplete.empty()) return;
  const std::size_t K = model.components(), C = model.columns();
  const StatLayout layout = stat_layout(model);
  if (static_cast<std::int64_t>(stats.size()) != layout.size + missing_mass_size(model))
    throw InvalidInput("marginalised statistics have " + std::to_string(stats.size()) + " values; the model needs " +
                       std::to_string(layout.size + missing_mass_size(model)));
  const ShiftTable shifts = shift_table(model, precision);
  std::vector<double> logp(K);
  std::vector<char> missing(C);
  kernels::PassReport report;
  for (std::size_t i = 0; i < incomplete.size(); ++i) {
    const std::size_t r = incomplete.rows[i];
    const double w = incomplete.weights[i];
    if (w == 0.0) continue;
    std::fill(missing.begin(), missing.end(), 0);
    for (std::size_t j = incomplete.missing_begin[i]; j < incomplete.missing_begin[i + 1]; ++j)
      if (incomplete.missing[j] < C) missing[incomplete.missing[j]] = 1;
    double most = -std::numeric_limits<double>::infinity();
    for (std::size_t k = 0; k < K; ++k) {
      double lp = std::log(model.weights[k]);
      for (const Part& p : model.parts) {
        const FamilyOps& ops = family_ops(p.family);
        for (std::size_t d = 0; d < p.dims(); ++d)
          if (!missing[p.col_begin + d]) lp += ops.log_density_column(p, k, d, rows.at(r, p.col_begin + d));
      }
      logp[k] = lp;
      most = std::max(most, lp);
    }
    double sum = 0.0;
    for (std::size_t k = 0; k < K; ++k) sum += std::exp(logp[k] - most);
    const double loglik = most + std::log(sum);
    if (!std::isfinite(loglik)) {
      // The kernels' report, so messages name the row as theirs do.
      (std::isnan(loglik) ? report.nan_rows : report.impossible_rows) += 1;
      if (report.num_listed < kernels::PassReport::kMaxListed)
        report.listed[report.num_listed++] = static_cast<std::int64_t>(r);
      continue;
    }
    stats[0] += w * loglik;
    stats[1] += w;
    for (std::size_t k = 0; k < K; ++k) {
      const double wr = w * std::exp(logp[k] - loglik);
      if (wr == 0.0) continue;
      stats[kernels::kStatHeader + k] += wr;
      for (std::size_t c = 0; c < C; ++c)
        if (missing[c]) stats[static_cast<std::size_t>(layout.size) + k * C + c] += wr;
      for (std::size_t pi = 0; pi < model.parts.size(); ++pi) {
        const Part& p = model.parts[pi];
        const FamilyOps& ops = family_ops(p.family);
        double* block = stats.data() + layout.part_offset[pi] + static_cast<std::int64_t>(k) * layout.part_stride[pi];
        const double* shift =
            shifts.part_offset[pi] >= 0 ? shifts.values.data() + shifts.part_offset[pi] + k * p.dims() : nullptr;
        for (std::size_t d = 0; d < p.dims(); ++d)
          if (!missing[p.col_begin + d])
            ops.accumulate_column(p, d, rows.at(r, p.col_begin + d), wr, shift ? shift[d] : 0.0, block);
      }
    }
  }
  raise_for(report, rows.source(), rows.first_row());
}

}  // namespace mixle::engine
