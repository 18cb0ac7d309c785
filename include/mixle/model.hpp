// Mixture models: K components, each a product of parts; each part is one family over a column
// range. All K components share the structure, so every parameter is stacked with K leading.
// The JSON file format is documented in docs/formats.md (docs/design.md §4).
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace mixle {

/// The component families; each is described by its FamilyDescriptor (<mixle/family.hpp>).
/// Adding one: docs/design.md §4, "Adding a family".
enum class Family {
  gaussian_diag,
  gaussian_full,
  categorical,
  poisson,
  exponential,
  bernoulli,
  gamma,
  lognormal,
  gaussian_spherical,
  gaussian_tied
};

/// "gaussian_diag", … ; family_from_name throws InvalidInput listing the accepted names.
const char* family_name(Family family) noexcept;
Family family_from_name(std::string_view name);
/// True for families whose columns hold integers (categorical codes, counts, 0/1).
bool family_is_discrete(Family family) noexcept;

/// One part of every component: a family over columns [col_begin, col_end).
/// Parameters are host float64 arrays, row-major with the component index leading:
///   gaussian_diag : mean K×D, var K×D (variances > 0)
///   gaussian_full : mean K×D, cov K×D×D (symmetric positive definite)
///   categorical   : prob K×D×V (each length-V row a probability vector), categories = V
///   poisson       : rate K×D (> 0);  exponential: rate K×D (> 0)
///   bernoulli     : prob K×D (in [0, 1])
///   gamma         : shape K×D (> 0), rate K×D (> 0)
///   lognormal     : mean K×D and var K×D (> 0) of log x (the file's "log_mean", "log_var")
///   gaussian_spherical : mean K×D, var K (one variance per component, shared by its columns)
///   gaussian_tied : mean K×D, cov K×D×D (one covariance shared by all components: every
///                   component's matrix the same)
/// where D = col_end − col_begin. Unused arrays stay empty.
struct Part {
  Family family = Family::gaussian_diag;
  std::size_t col_begin = 0;
  std::size_t col_end = 0;
  std::size_t categories = 0;  // V, categorical only
  std::vector<double> mean;
  std::vector<double> var;
  std::vector<double> cov;
  std::vector<double> prob;
  std::vector<double> rate;
  std::vector<double> shape;

  std::size_t dims() const noexcept { return col_end - col_begin; }
};

/// A finite mixture: weights (length K, a probability vector) and parts covering columns.
struct Model {
  std::vector<double> weights;
  std::vector<Part> parts;

  std::size_t components() const noexcept { return weights.size(); }
  /// One past the highest column any part reads.
  std::size_t columns() const noexcept;
  /// Number of free parameters (for BIC/AIC).
  std::size_t free_parameters() const noexcept;
};

/// The structure of a part without parameters, used to build and initialise models.
struct PartSpec {
  Family family = Family::gaussian_diag;
  std::size_t col_begin = 0;
  std::size_t col_end = 0;
  std::size_t categories = 0;  // categorical: V (0 = infer from the data's largest code + 1)
};

/// Parses a part layout such as "gaussian_diag:0-4,categorical:4-5:3,poisson:5-7"
/// (family:begin-end[:V], columns half-open) or a single family name, which then covers all
/// `columns`. Throws InvalidInput naming the bad item.
std::vector<PartSpec> parse_layout(std::string_view text, std::size_t columns);

/// Checks every field of `model` (shapes, finiteness, simplex sums within 1e-6, positive
/// definiteness, overlapping parts); throws InvalidInput naming the field and the rule broken.
void validate_model(const Model& model);

/// Reads / writes the model JSON ({"format":"mixle-model","version":1,…}). Reading validates
/// fully; writing is atomic (temporary file + rename).
Model load_model(const std::string& path);
void save_model(const Model& model, const std::string& path);
std::string model_to_json(const Model& model, int indent = 1);
Model model_from_json(const std::string& text, const std::string& source = "<string>");

}  // namespace mixle
