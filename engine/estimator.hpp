// The estimator: how a Model maps onto the kernels (packing, statistics layout) and the M-step
// that turns reduced statistics into the next Model. Kernels never see a Model, only the
// packed view; the engine never sees a kernel loop.
#pragma once

#include "engine/families/family_ops.hpp"
#include "kernels/model_view.hpp"

#include <mixle/estimator.hpp>
#include <mixle/model.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace mixle::engine {

using mixle::EstimatorOptions;
using mixle::MStepResult;
using mixle::Precision;
using mixle::precision_from_name;
using mixle::precision_name;

// A component is empty when its responsibility mass is at most kEmptyMass
// (engine/families/family_ops.hpp). The M-step gives an empty component weight 0 and keeps its
// previous parameters (so it stays finite and never produces NaN) and reports it; the EM loop
// warns, naming it, and under EmptyPolicy::reseed restarts it (engine/reseed.hpp).

/// Offsets of each part's statistics in the flat buffer (kernels/model_view.hpp's layout).
struct StatLayout {
  std::size_t components = 0;
  std::vector<std::int64_t> part_offset;
  std::vector<int> part_stride;
  std::int64_t size = 0;
};
StatLayout stat_layout(const Model& model);

/// The statistics' missing-mass region, after stat_layout(model).size values when missing values
/// are marginalised: Σ w·r_k over the rows whose column c is missing, at k·columns + c (K ×
/// model.columns() values). A column's own mass is its component's mass less this.
std::int64_t missing_mass_size(const Model& model);
/// Values in the statistics of an E-step under `options`: the layout, and the missing-mass region
/// when options.marginalise.
std::int64_t stat_size(const Model& model, const EstimatorOptions& options);

/// The per-component shifts moments are accumulated about: each shifted part's means, rounded
/// through the compute precision exactly as the kernels see them (so the M-step adds back the
/// very value that was subtracted). Unshifted parts have offset −1.
struct ShiftTable {
  std::vector<double> values;
  std::vector<std::int64_t> part_offset;
};
ShiftTable shift_table(const Model& model, Precision precision, bool zero_shift = false);

/// A model packed for the kernels in precision T: owns the arrays its ModelView points to.
template <class T>
struct PackedModel {
  std::vector<T> log_const, coef, shift;
  std::vector<kernels::PartView<T>> parts;
  kernels::ModelView<T> view;
};

/// Packs `model` (validated) for the kernels. Throws InvalidInput when a covariance is not
/// positive definite. With `zero_shift`, moments are accumulated about 0 (initialisation).
template <class T>
PackedModel<T> pack_model(const Model& model, std::size_t data_columns, bool zero_shift = false);

/// M-step: the next model from reduced statistics `stats` accumulated about `shifts`:
/// stat_layout(prev).size values, or that and the missing-mass region (missing_mass_size).
MStepResult m_step(const Model& prev, const std::vector<double>& stats, const ShiftTable& shifts,
                   const EstimatorOptions& options);

}  // namespace mixle::engine
