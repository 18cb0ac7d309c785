// The family registry: Family → its operations, and the names users type.
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

// The kernels' PartKind mirrors Family so packing is a cast.
static_assert(static_cast<int>(kernels::PartKind::gaussian_diag) == static_cast<int>(Family::gaussian_diag));
static_assert(static_cast<int>(kernels::PartKind::gaussian_full) == static_cast<int>(Family::gaussian_full));
static_assert(static_cast<int>(kernels::PartKind::categorical) == static_cast<int>(Family::categorical));
static_assert(static_cast<int>(kernels::PartKind::poisson) == static_cast<int>(Family::poisson));
static_assert(static_cast<int>(kernels::PartKind::exponential) == static_cast<int>(Family::exponential));
static_assert(static_cast<int>(kernels::PartKind::bernoulli) == static_cast<int>(Family::bernoulli));

const FamilyOps& family_ops(Family family) {
  switch (family) {
    case Family::gaussian_diag: return gaussian_diag_ops();
    case Family::gaussian_full: return gaussian_full_ops();
    case Family::categorical: return categorical_ops();
    case Family::poisson: return poisson_ops();
    case Family::exponential: return exponential_ops();
    case Family::bernoulli: return bernoulli_ops();
  }
  throw InvalidInput("unknown family id " + std::to_string(static_cast<int>(family)));
}

}  // namespace mixle::engine

namespace mixle {
namespace {
constexpr std::array<const char*, 6> kFamilyNames = {
    "gaussian_diag", "gaussian_full", "categorical", "poisson", "exponential", "bernoulli"};
}

const char* family_name(Family family) noexcept {
  return kFamilyNames[static_cast<std::size_t>(family)];
}

Family family_from_name(std::string_view name) {
  for (std::size_t i = 0; i < kFamilyNames.size(); ++i)
    if (name == kFamilyNames[i]) return static_cast<Family>(i);
  std::string accepted;
  for (const char* n : kFamilyNames) accepted += std::string(accepted.empty() ? "" : ", ") + n;
  throw InvalidInput("unknown family \"" + std::string(name) + "\"; accepted: " + accepted);
}

bool family_is_discrete(Family family) noexcept {
  return family == Family::categorical || family == Family::poisson || family == Family::bernoulli;
}

}  // namespace mixle
