#include "engine/report.hpp"

#include <mixle/error.hpp>

#include <vector>

namespace mixle::engine {

void raise_for(const kernels::PassReport& report, const std::string& source, std::size_t first_row) {
  if (report.impossible_rows == 0 && report.nan_rows == 0) return;
  std::string rows;
  std::vector<std::size_t> listed;
  for (int i = 0; i < report.num_listed; ++i) {
    listed.push_back(first_row + static_cast<std::size_t>(report.listed[i]));
    rows += (i ? ", " : "") + std::to_string(listed.back());
  }
  const std::int64_t total = report.impossible_rows + report.nan_rows;
  if (total > report.num_listed) rows += ", …";
  if (report.impossible_rows > 0)
    throw ImpossibleEvidence(source + ": " + std::to_string(report.impossible_rows) +
                                 " row(s) have zero probability under every component (rows " + rows +
                                 "); check the data against the model (e.g. a categorical code whose "
                                 "probability is 0 everywhere, or a value outside a family's support)",
                             std::move(listed));
  throw InvalidInput(source + ": " + std::to_string(report.nan_rows) + " row(s) gave a NaN log-density (rows " + rows +
                     "); the data or the model parameters hold NaN or overflow");
}

}  // namespace mixle::engine
