// Model → plan::ModelSummary.
#include "engine/model_summary.hpp"

#include <mixle/family.hpp>

namespace mixle::engine {

plan::ModelSummary summarise(const Model& model) {
  plan::ModelSummary summary;
  summary.components = model.components();
  for (const Part& p : model.parts) summary.parts.push_back({family_name(p.family), p.dims(), p.categories});
  return summary;
}

plan::ModelSummary summarise(std::size_t components, const std::vector<PartSpec>& specs,
                             std::size_t unknown_categories) {
  plan::ModelSummary summary;
  summary.components = components;
  for (const PartSpec& p : specs) {
    std::size_t categories = 0;
    if (family_descriptor(p.family).categories) categories = p.categories ? p.categories : unknown_categories;
    summary.parts.push_back({family_name(p.family), p.col_end - p.col_begin, categories});
  }
  return summary;
}

plan::ModelSummary summarise(const FitOptions& options, std::size_t columns) {
  if (options.init == InitMethod::model && options.init_model) return summarise(*options.init_model);
  return summarise(options.components, parse_layout(options.layout, columns), kUnreadCategories);
}

}  // namespace mixle::engine
