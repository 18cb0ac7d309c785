#include "engine/incomplete_rows.hpp"
#include "engine/report.hpp"

#include <mixle/error.hpp>

#include <algorithm>
#include <cmath>
#include <limits>

#include <omp.h>

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

namespace {

/// What folding one incomplete row needs, fixed for a pass.
struct Fold {
  const Model& model;
  const Dataset& rows;
  const IncompleteRows& incomplete;
  StatLayout layout;
  ShiftTable shifts;
  std::size_t K, C;
};

/// Folds incomplete rows [begin, end) into `stats` (zeroed by the caller), using `logp` (K) and
/// `missing` (C) as scratch; impossible or NaN rows go to `report` instead.
void fold_rows(const Fold& f, std::size_t begin, std::size_t end, std::vector<double>& stats, std::vector<double>& logp,
               std::vector<char>& missing, kernels::PassReport& report) {
  const IncompleteRows& in = f.incomplete;
  for (std::size_t i = begin; i < end; ++i) {
    const std::size_t r = in.rows[i];
    const double w = in.weights[i];
    if (w == 0.0) continue;
    std::fill(missing.begin(), missing.end(), 0);
    // Missing columns are modelled ones, so each is below C.
    for (std::size_t j = in.missing_begin[i]; j < in.missing_begin[i + 1]; ++j) missing[in.missing[j]] = 1;
    double most = -std::numeric_limits<double>::infinity();
    for (std::size_t k = 0; k < f.K; ++k) {
      double lp = std::log(f.model.weights[k]);
      for (const Part& p : f.model.parts) {
        const FamilyOps& ops = family_ops(p.family);
        for (std::size_t d = 0; d < p.dims(); ++d)
          if (!missing[p.col_begin + d]) lp += ops.log_density_column(p, k, d, f.rows.at(r, p.col_begin + d));
      }
      logp[k] = lp;
      most = std::max(most, lp);
    }
    double sum = 0.0;
    for (std::size_t k = 0; k < f.K; ++k) sum += std::exp(logp[k] - most);
    // −inf under every component is an impossible row (not the NaN that −inf − −inf would give).
    const double loglik = most == -std::numeric_limits<double>::infinity() ? most : most + std::log(sum);
    if (!std::isfinite(loglik)) {
      // The kernels' report, so messages name the row as theirs do.
      (std::isnan(loglik) ? report.nan_rows : report.impossible_rows) += 1;
      if (report.num_listed < kernels::PassReport::kMaxListed)
        report.listed[report.num_listed++] = static_cast<std::int64_t>(r);
      continue;
    }
    stats[0] += w * loglik;
    stats[1] += w;
    for (std::size_t k = 0; k < f.K; ++k) {
      const double wr = w * std::exp(logp[k] - loglik);
      if (wr == 0.0) continue;
      stats[kernels::kStatHeader + k] += wr;
      for (std::size_t c = 0; c < f.C; ++c)
        if (missing[c]) stats[static_cast<std::size_t>(f.layout.size) + k * f.C + c] += wr;
      for (std::size_t pi = 0; pi < f.model.parts.size(); ++pi) {
        const Part& p = f.model.parts[pi];
        const FamilyOps& ops = family_ops(p.family);
        double* block =
            stats.data() + f.layout.part_offset[pi] + static_cast<std::int64_t>(k) * f.layout.part_stride[pi];
        const double* shift =
            f.shifts.part_offset[pi] >= 0 ? f.shifts.values.data() + f.shifts.part_offset[pi] + k * p.dims() : nullptr;
        for (std::size_t d = 0; d < p.dims(); ++d)
          if (!missing[p.col_begin + d])
            ops.accumulate_column(p, d, f.rows.at(r, p.col_begin + d), wr, shift ? shift[d] : 0.0, block);
      }
    }
  }
}

}  // namespace

void accumulate_incomplete(const Model& model, const Dataset& rows, const IncompleteRows& incomplete,
                           Precision precision, int threads, std::vector<double>& stats) {
  if (incomplete.empty()) return;
  const Fold f{model,          rows, incomplete, stat_layout(model), shift_table(model, precision), model.components(),
               model.columns()};
  if (static_cast<std::int64_t>(stats.size()) != f.layout.size + missing_mass_size(model))
    throw InvalidInput("marginalised statistics have " + std::to_string(stats.size()) + " values; the model needs " +
                       std::to_string(f.layout.size + missing_mass_size(model)));
  // Chunks of kChunk rows, each folded into sums of its own, the sums added in chunk order: the
  // result does not depend on the number of threads.
  constexpr std::size_t kChunk = 256;
  const std::size_t chunks = (incomplete.size() + kChunk - 1) / kChunk;
  const std::size_t wave =
      std::min<std::size_t>(chunks, static_cast<std::size_t>(threads > 0 ? threads : omp_get_max_threads()));
  std::vector<std::vector<double>> sums(wave, std::vector<double>(stats.size()));
  std::vector<kernels::PassReport> reports(wave);
  kernels::PassReport report;
  for (std::size_t first = 0; first < chunks; first += wave) {
    const std::size_t count = std::min(wave, chunks - first);
#pragma omp parallel for num_threads(static_cast <int>(count)) if (count > 1) schedule(static, 1)
    for (std::size_t c = 0; c < count; ++c) {
      std::vector<double> logp(f.K);
      std::vector<char> missing(f.C);
      std::fill(sums[c].begin(), sums[c].end(), 0.0);
      reports[c] = kernels::PassReport{};
      const std::size_t begin = (first + c) * kChunk;
      fold_rows(f, begin, std::min(incomplete.size(), begin + kChunk), sums[c], logp, missing, reports[c]);
    }
    for (std::size_t c = 0; c < count; ++c) {
      for (std::size_t i = 0; i < stats.size(); ++i) stats[i] += sums[c][i];
      report.merge(reports[c]);
    }
  }
  raise_for(report, rows.source(), rows.first_row());
}

}  // namespace mixle::engine
