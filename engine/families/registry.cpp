// The family registry: the one list of families. A family's descriptor and operations come from
// its file in engine/families; names, lists and lookups here read the descriptors.
#include "engine/families/family_ops.hpp"
#include "kernels/model_view.hpp"

#include <mixle/error.hpp>

#include <array>
#include <string>

namespace mixle::engine {

const FamilyOps& gaussian_diag_ops();
const FamilyOps& gaussian_full_ops();
const FamilyOps& categorical_ops();
const FamilyOps& poisson_ops();
const FamilyOps& exponential_ops();
const FamilyOps& bernoulli_ops();
const FamilyOps& gamma_ops();
const FamilyOps& lognormal_ops();
const FamilyOps& gaussian_spherical_ops();
const FamilyOps& gaussian_tied_ops();

double FamilyOps::log_density_column(const Part& part, std::size_t, std::size_t, double) const {
  throw InvalidInput(std::string(family_name(part.family)) +
                     " has no per-column log-density: a missing value cannot be left out of it");
}

void FamilyOps::accumulate_column(const Part& part, std::size_t, double, double, double, double*) const {
  throw InvalidInput(std::string(family_name(part.family)) +
                     " has no per-column statistics: a missing value cannot be left out of them");
}

namespace {

/// Registration order is Family's order (and, for families with kernels of their own, the
/// kernels' PartKind's).
constexpr std::array kRegistered = {gaussian_diag_ops,      gaussian_full_ops, categorical_ops, poisson_ops,
                                    exponential_ops,        bernoulli_ops,     gamma_ops,       lognormal_ops,
                                    gaussian_spherical_ops, gaussian_tied_ops};

}  // namespace

// The kernels' PartKind mirrors Family so packing is a cast.
static_assert(static_cast<int>(kernels::PartKind::gaussian_diag) == static_cast<int>(Family::gaussian_diag));
static_assert(static_cast<int>(kernels::PartKind::gaussian_full) == static_cast<int>(Family::gaussian_full));
static_assert(static_cast<int>(kernels::PartKind::categorical) == static_cast<int>(Family::categorical));
static_assert(static_cast<int>(kernels::PartKind::poisson) == static_cast<int>(Family::poisson));
static_assert(static_cast<int>(kernels::PartKind::exponential) == static_cast<int>(Family::exponential));
static_assert(static_cast<int>(kernels::PartKind::bernoulli) == static_cast<int>(Family::bernoulli));
static_assert(static_cast<int>(kernels::PartKind::gamma) == static_cast<int>(Family::gamma));
static_assert(static_cast<int>(kernels::PartKind::lognormal) == static_cast<int>(Family::lognormal));

const FamilyOps& family_ops(Family family) {
  const auto i = static_cast<std::size_t>(family);
  if (i >= kRegistered.size()) throw InvalidInput("unknown family id " + std::to_string(i));
  return kRegistered[i]();
}

}  // namespace mixle::engine

namespace mixle {

std::span<const FamilyDescriptor* const> family_descriptors() noexcept {
  static const auto all = [] {
    std::array<const FamilyDescriptor*, engine::kRegistered.size()> out{};
    for (std::size_t i = 0; i < out.size(); ++i) out[i] = &engine::kRegistered[i]().descriptor();
    return out;
  }();
  return all;
}

const FamilyDescriptor& family_descriptor(Family family) noexcept {
  return *family_descriptors()[static_cast<std::size_t>(family)];
}

const FamilyDescriptor* find_family(std::string_view name) noexcept {
  for (const FamilyDescriptor* d : family_descriptors())
    if (name == d->name) return d;
  return nullptr;
}

std::string family_names() {
  std::string out;
  for (const FamilyDescriptor* d : family_descriptors()) out += std::string(out.empty() ? "" : ", ") + d->name;
  return out;
}

std::string flop_formula(const SizeRule& flops) {
  std::string out;
  auto term = [&](std::int64_t c, const char* dims) {
    if (c != 0) out += (out.empty() ? "" : " + ") + std::to_string(c) + "*N*K*" + dims;
  };
  term(flops.per_column_pair, "D^2");
  term(flops.per_column, "D");
  term(flops.per_category, "D*V");
  if (flops.per_component != 0) out += (out.empty() ? "" : " + ") + std::to_string(flops.per_component) + "*N*K";
  return out;
}

const char* family_name(Family family) noexcept { return family_descriptor(family).name; }

Family family_from_name(std::string_view name) {
  if (const FamilyDescriptor* d = find_family(name)) return d->family;
  throw InvalidInput("unknown family \"" + std::string(name) + "\"; accepted: " + family_names());
}

bool family_is_discrete(Family family) noexcept { return family_descriptor(family).discrete; }

}  // namespace mixle
