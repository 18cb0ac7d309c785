// Component families described as plain data. Everything that is bookkeeping rather than
// arithmetic reads these descriptors: the model file's fields and shapes, summaries, the planner's
// byte counts, free-parameter counts (BIC/AIC), the benchmark's work model and the CLI's family
// lists. The arithmetic of a family (validation, packing, M-step, sampling) lives with its
// descriptor in engine/families, its kernels in kernels/<backend>/families (docs/design.md §5).
#pragma once

#include <mixle/model.hpp>

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace mixle {

/// How one parameter array of a part is shaped per component; K leads every array.
enum class ParamShape {
  per_component,    ///< 1 value: K (e.g. gaussian_spherical's one variance per component)
  per_column,       ///< D values: K×D
  per_column_pair,  ///< D×D values: K×D×D
  per_category,     ///< D×V values: K×D×V (written K×V in model files when D = 1)
};

/// One parameter array of a family: its model-file field, its shape and where a Part keeps it.
struct ParamDescriptor {
  const char* name;
  ParamShape shape;
  std::vector<double> Part::*values;
};

/// A count per component that grows with the part's columns D and categories V:
/// (per_component + per_column·D + per_column_pair·D² + per_category·D·V) / divisor.
struct SizeRule {
  std::int64_t per_component = 0;
  std::int64_t per_column = 0;
  std::int64_t per_column_pair = 0;
  std::int64_t per_category = 0;
  std::int64_t divisor = 1;

  constexpr std::int64_t count(std::int64_t D, std::int64_t V) const noexcept {
    return (per_component + per_column * D + per_column_pair * D * D + per_category * D * V) / divisor;
  }
};

/// What a family is, as data. The flags default to false; a descriptor states those it sets.
struct FamilyDescriptor {
  Family family{};
  const char* name = "";                    ///< the name users type and files hold
  const char* summary = "";                 ///< one line: what its columns hold and what its parameters are
  std::span<const ParamDescriptor> params;  ///< in model-file order; summaries show the first
  SizeRule statistics;                      ///< statistic values per component (the kernels' stat_stride)
  SizeRule free_parameters;                 ///< per component, for BIC/AIC
  SizeRule flops;                           ///< floating-point operations per (row, component) of one EM iteration
  bool discrete = false;                    ///< its columns hold integers (codes, counts, 0/1)
  bool categories = false;                  ///< a part states V, the categories of each column
  bool log_probabilities = false;           ///< packs log-probabilities, which may be −inf (probability 0)
  bool row_constant = false;                ///< adds a per-row term of x alone (poisson's −log x!)
  bool shifted = false;                     ///< accumulates its statistics about a per-component shift
};

/// The descriptor of `family`.
const FamilyDescriptor& family_descriptor(Family family) noexcept;
/// The descriptor named `name`, or null.
const FamilyDescriptor* find_family(std::string_view name) noexcept;
/// Every family, in registration order.
std::span<const FamilyDescriptor* const> family_descriptors() noexcept;
/// The families' names joined by ", " (for help texts and errors).
std::string family_names();

/// Values one parameter array of shape `shape` holds per component.
constexpr std::int64_t param_values(ParamShape shape, std::int64_t D, std::int64_t V) noexcept {
  switch (shape) {
    case ParamShape::per_component: return 1;
    case ParamShape::per_column: return D;
    case ParamShape::per_column_pair: return D * D;
    case ParamShape::per_category: return D * V;
  }
  return 0;
}

/// The benchmark's work model as text, e.g. "4*N*K*D^2 + 4*N*K*D".
std::string flop_formula(const SizeRule& flops);

}  // namespace mixle
