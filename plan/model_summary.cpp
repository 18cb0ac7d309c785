// The memory model of a mixture's fixed state (docs/planning.md, "Fixed bytes").
#include <mixle/plan/placement.hpp>

#include <mixle/error.hpp>
#include <mixle/family.hpp>

#include <limits>

namespace mixle::plan {

namespace {

constexpr std::uint64_t kFloat64Bytes = 8;
// The flat statistics buffer ends with the total log-likelihood and the row count.
constexpr std::uint64_t kGlobalStatisticValues = 2;

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

/// c₀ + a·D + b·D² + c·D·V without overflowing (the rules of family descriptors are non-negative).
std::uint64_t checked_count(const SizeRule& rule, std::uint64_t d, std::uint64_t v, const char* what) {
  const auto coefficient = [](std::int64_t c) { return static_cast<std::uint64_t>(c); };
  std::uint64_t n =
      checked_add(coefficient(rule.per_component), checked_mul(coefficient(rule.per_column), d, what), what);
  n = checked_add(n, checked_mul(coefficient(rule.per_column_pair), checked_mul(d, d, what), what), what);
  n = checked_add(n, checked_mul(coefficient(rule.per_category), checked_mul(d, v, what), what), what);
  return n / coefficient(rule.divisor);
}

/// The part's family descriptor; `where` prefixes the error for an unknown name.
const FamilyDescriptor& descriptor_of(const PartSummary& part, const std::string& where = "model: ") {
  const FamilyDescriptor* family = find_family(part.family);
  if (family == nullptr) {
    throw InvalidInput(where + "family='" + part.family + "' is not known; accepted: " + family_names());
  }
  return *family;
}

/// Parameter values one component holds for a part (its descriptor's arrays).
std::uint64_t parameter_values(const PartSummary& part) {
  std::uint64_t n = 0;
  for (const ParamDescriptor& param : descriptor_of(part).params) {
    const SizeRule rule{.per_component = param.shape == ParamShape::per_component,
                        .per_column = param.shape == ParamShape::per_column,
                        .per_column_pair = param.shape == ParamShape::per_column_pair,
                        .per_category = param.shape == ParamShape::per_category};
    n = checked_add(n, checked_count(rule, part.dims, part.categories, "parameter count"), "parameter count");
  }
  return n;
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
    const FamilyDescriptor& family = descriptor_of(p, where);
    if (p.dims == 0) throw InvalidInput(where + "dims=0 is invalid; accepted: dims ≥ 1");
    if (family.categories && p.categories < 1) {
      throw InvalidInput(where + "categories=0 is invalid for a " + p.family + " part; accepted: categories ≥ 1");
    }
    if (!family.categories && p.categories != 0) {
      throw InvalidInput(where + "categories=" + std::to_string(p.categories) + " is set for family '" + p.family +
                         "', which has none; accepted: categories 0");
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
  for (const PartSummary& p : parts) total = checked_add(total, parameter_values(p), "parameter count");
  return total;
}

std::uint64_t ModelSummary::statistic_values_per_component() const {
  std::uint64_t total = 1;  // the responsibility count
  for (const PartSummary& p : parts) {
    const SizeRule& rule = descriptor_of(p).statistics;
    total = checked_add(total, checked_count(rule, p.dims, p.categories, "statistic count"), "statistic count");
  }
  return total;
}

std::uint64_t ModelSummary::parameter_bytes() const {
  validate();
  return checked_mul(checked_mul(components, parameter_values_per_component(), "parameter count"), kFloat64Bytes,
                     "parameter bytes");
}

std::uint64_t ModelSummary::statistic_bytes() const {
  validate();
  const std::uint64_t values = checked_add(checked_mul(components, statistic_values_per_component(), "statistic count"),
                                           kGlobalStatisticValues, "statistic count");
  return checked_mul(values, kFloat64Bytes, "statistic bytes");
}

}  // namespace mixle::plan
