// The memory model of a mixture's fixed state (docs/planning.md, "Fixed bytes").
#include <mixle/plan/placement.hpp>

#include <mixle/error.hpp>

#include <limits>

namespace mixle::plan {

namespace {

constexpr std::uint64_t kFloat64Bytes = 8;
// The flat statistics buffer ends with the total log-likelihood and the row count.
constexpr std::uint64_t kGlobalStatisticValues = 2;
constexpr const char* kFamilies =
    "gaussian_diag, gaussian_full, categorical, poisson, exponential, bernoulli";

std::uint64_t checked_mul(std::uint64_t a, std::uint64_t b, const char* what) {
  if (a != 0 && b > std::numeric_limits<std::uint64_t>::max() / a) {
    throw InvalidInput(std::string(what) + " overflows 64 bits; the model is too large to plan");
  }
  return a * b;
}

std::uint64_t checked_add(std::uint64_t a, std::uint64_t b, const char* what) {
  if (b > std::numeric_limits<std::uint64_t>::max() - a) {
    throw InvalidInput(std::string(what) + " overflows 64 bits; the model is too large to plan");
  }
  return a + b;
}

/// Values one component holds for a part; parameters and statistics have the same count for
/// every family (mean+var ↔ Σx+Σx², mean+precision factor ↔ Σx+Σxxᵀ, probabilities ↔ counts).
std::uint64_t part_values(const PartSummary& part) {
  const std::uint64_t d = part.dims;
  if (part.family == "gaussian_diag") return checked_mul(2, d, "gaussian_diag size");
  if (part.family == "gaussian_full") {
    return checked_add(d, checked_mul(d, d, "gaussian_full size"), "gaussian_full size");
  }
  if (part.family == "categorical") return checked_mul(d, part.categories, "categorical size");
  return d;  // poisson, exponential, bernoulli: one rate or probability per column
}

}  // namespace

void ModelSummary::validate() const {
  if (components == 0) {
    throw InvalidInput("model components=0 is invalid; accepted: K ≥ 1");
  }
  if (parts.empty()) {
    throw InvalidInput("model parts=[] is empty; accepted: at least one part (family over columns)");
  }
  for (std::size_t i = 0; i < parts.size(); ++i) {
    const PartSummary& p = parts[i];
    const std::string where = "model part " + std::to_string(i) + ": ";
    const bool known = p.family == "gaussian_diag" || p.family == "gaussian_full" ||
                       p.family == "categorical" || p.family == "poisson" ||
                       p.family == "exponential" || p.family == "bernoulli";
    if (!known) {
      throw InvalidInput(where + "family='" + p.family + "' is not known; accepted: " + kFamilies);
    }
    if (p.dims == 0) throw InvalidInput(where + "dims=0 is invalid; accepted: dims ≥ 1");
    if (p.family == "categorical" && p.categories < 2) {
      throw InvalidInput(where + "categories=" + std::to_string(p.categories) +
                         " is invalid for a categorical part; accepted: categories ≥ 2");
    }
    if (p.family != "categorical" && p.categories != 0) {
      throw InvalidInput(where + "categories=" + std::to_string(p.categories) + " is set for family '" +
                         p.family + "'; accepted: categories only for categorical parts");
    }
  }
}

std::size_t ModelSummary::columns() const {
  std::size_t total = 0;
  for (const PartSummary& p : parts) total += p.dims;
  return total;
}

std::uint64_t ModelSummary::parameter_values_per_component() const {
  std::uint64_t total = 1;  // the mixture weight
  for (const PartSummary& p : parts) total = checked_add(total, part_values(p), "parameter count");
  return total;
}

std::uint64_t ModelSummary::statistic_values_per_component() const {
  std::uint64_t total = 1;  // the responsibility count
  for (const PartSummary& p : parts) total = checked_add(total, part_values(p), "statistic count");
  return total;
}

std::uint64_t ModelSummary::parameter_bytes() const {
  validate();
  return checked_mul(checked_mul(components, parameter_values_per_component(), "parameter count"),
                     kFloat64Bytes, "parameter bytes");
}

std::uint64_t ModelSummary::statistic_bytes() const {
  validate();
  const std::uint64_t values =
      checked_add(checked_mul(components, statistic_values_per_component(), "statistic count"),
                  kGlobalStatisticValues, "statistic count");
  return checked_mul(values, kFloat64Bytes, "statistic bytes");
}

}  // namespace mixle::plan
