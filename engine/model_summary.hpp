// The planner's view of a model (plan::ModelSummary), made from a model or a layout: the one
// place the engine's models become the plain summary the planner sizes.
#pragma once

#include <mixle/fit.hpp>
#include <mixle/model.hpp>
#include <mixle/plan/placement.hpp>

#include <cstddef>
#include <vector>

namespace mixle::engine {

/// K and each part's family, columns and categories.
plan::ModelSummary summarise(const Model& model);

/// A model still to be fitted: `components` components whose parts `specs` lays out. A part
/// whose categories come from the data (categories 0) is counted with `unknown_categories`,
/// since the data may not be read yet.
plan::ModelSummary summarise(std::size_t components, const std::vector<PartSpec>& specs,
                             std::size_t unknown_categories);

/// The model a fit with `options` fits, before its data are read: the initial model
/// (InitMethod::model), or `components` components laid out by `layout` over `columns`, where a
/// part whose categories come from the data counts V = kUnreadCategories.
constexpr std::size_t kUnreadCategories = 2;
plan::ModelSummary summarise(const FitOptions& options, std::size_t columns);

}  // namespace mixle::engine
