#include "engine/estimator.hpp"

#include <mixle/error.hpp>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <string>

namespace mixle {

Precision precision_from_name(const std::string& name) {
  if (name == "fp32" || name == "float32") return Precision::fp32;
  if (name == "fp64" || name == "float64") return Precision::fp64;
  if (name == "tf32") return Precision::tf32;
  throw InvalidInput("unknown precision \"" + name + "\"; accepted: fp32, fp64, tf32 (CUDA only)");
}

const char* precision_name(Precision precision) noexcept {
  switch (precision) {
    case Precision::fp32: return "fp32";
    case Precision::fp64: return "fp64";
    case Precision::tf32: return "tf32";
  }
  return "?";
}

}  // namespace mixle

namespace mixle::engine {
namespace {

/// The shortest text that reads back as `v` ("1e+300", "-5e+299", "0.1"): std::to_string would
/// print 1e300 as 301 digits and 1e-300 as "0.000000".
std::string shortest_text(double v) {
  char text[32];
  const auto [end, ec] = std::to_chars(text, text + sizeof text, v);
  return std::string(text, end);
}

}  // namespace

StatLayout stat_layout(const Model& model) {
  StatLayout layout;
  layout.components = model.components();
  std::int64_t offset = kernels::stat_header_size(static_cast<int>(layout.components));
  for (const Part& p : model.parts) {
    const int stride = family_ops(p.family).stat_stride(p);
    layout.part_offset.push_back(offset);
    layout.part_stride.push_back(stride);
    offset += static_cast<std::int64_t>(stride) * static_cast<std::int64_t>(layout.components);
  }
  layout.size = offset;
  return layout;
}

std::int64_t missing_mass_size(const Model& model) {
  return static_cast<std::int64_t>(model.components() * model.columns());
}

std::int64_t stat_size(const Model& model, const EstimatorOptions& options) {
  return stat_layout(model).size + (options.marginalise ? missing_mass_size(model) : 0);
}

ShiftTable shift_table(const Model& model, Precision precision, bool zero_shift) {
  ShiftTable table;
  std::size_t total = 0;
  const std::size_t K = model.components();
  for (const Part& p : model.parts) {
    if (!family_ops(p.family).shifted()) {
      table.part_offset.push_back(-1);
      continue;
    }
    table.part_offset.push_back(static_cast<std::int64_t>(total));
    total += K * p.dims();
  }
  table.values.assign(total, 0.0);
  if (zero_shift) return table;
  for (std::size_t i = 0; i < model.parts.size(); ++i) {
    if (table.part_offset[i] < 0) continue;
    const Part& p = model.parts[i];
    for (std::size_t k = 0; k < K; ++k)
      family_ops(p.family).shift(p, k, table.values.data() + table.part_offset[i] + k * p.dims());
  }
  if (precision != Precision::fp64)
    for (double& v : table.values) v = static_cast<double>(static_cast<float>(v));
  return table;
}

template <class T>
PackedModel<T> pack_model(const Model& model, std::size_t data_columns, bool zero_shift) {
  const std::size_t K = model.components();
  const StatLayout layout = stat_layout(model);
  PackedModel<T> packed;
  std::vector<double> log_const(K);
  for (std::size_t k = 0; k < K; ++k) log_const[k] = std::log(model.weights[k]);

  std::vector<std::int64_t> coef_offset;
  std::size_t coef_total = 0;
  for (const Part& p : model.parts) {
    coef_offset.push_back(static_cast<std::int64_t>(coef_total));
    coef_total += K * static_cast<std::size_t>(family_ops(p.family).coef_stride(p));
  }
  std::vector<double> coef(coef_total);
  for (std::size_t i = 0; i < model.parts.size(); ++i) {
    const Part& p = model.parts[i];
    const FamilyOps& ops = family_ops(p.family);
    const std::size_t stride = static_cast<std::size_t>(ops.coef_stride(p));
    for (std::size_t k = 0; k < K; ++k) log_const[k] += ops.pack(p, k, coef.data() + coef_offset[i] + k * stride);
  }
  const ShiftTable shifts = shift_table(model, sizeof(T) == 8 ? Precision::fp64 : Precision::fp32, zero_shift);
  packed.log_const.assign(log_const.begin(), log_const.end());
  packed.coef.assign(coef.begin(), coef.end());
  packed.shift.assign(shifts.values.begin(), shifts.values.end());

  // Valid float64 parameters can leave the compute precision's range (a variance of 1e-300
  // gives −1/(2 var) = −inf in float32, a rate of 1e300 is +inf): the kernels would then make
  // NaN log-densities and misreport the rows. Only log-probabilities (categorical, bernoulli)
  // and log weights may be −inf (probability 0); nothing may be NaN or +inf.
  // In float32 the way out is float64; in float64, only larger floors are left. The shifts need
  // no check of their own: a shifted family packs its shift, the mean, as its first coefficients.
  const bool fp64 = sizeof(T) == 8;
  const std::string precision = fp64 ? "fp64" : "fp32";
  auto out_of_range = [&](std::size_t part, std::size_t k, const std::string& what, double value) {
    const Part& p = model.parts[part];
    return InvalidInput(
        "model parts[" + std::to_string(part) + "] (" + family_name(p.family) + "), component " + std::to_string(k) +
        ": " + what + " " + shortest_text(value) + " is outside the range of the compute precision " + precision +
        (fp64 ? "; raise --reg-covar / --rate-floor" : "; use --precision fp64 (or raise --reg-covar / --rate-floor)"));
  };
  for (std::size_t i = 0; i < model.parts.size(); ++i) {
    const Part& p = model.parts[i];
    const bool log_prob = family_descriptor(p.family).log_probabilities;
    const std::size_t stride = static_cast<std::size_t>(family_ops(p.family).coef_stride(p));
    for (std::size_t k = 0; k < K; ++k)
      for (std::size_t j = 0; j < stride; ++j) {
        const T c = packed.coef[static_cast<std::size_t>(coef_offset[i]) + k * stride + j];
        const bool ok = log_prob ? !std::isnan(c) && c != std::numeric_limits<T>::infinity() : std::isfinite(c);
        if (!ok)
          throw out_of_range(i, k, "packed coefficient (from a parameter)", coef[coef_offset[i] + k * stride + j]);
      }
  }
  for (std::size_t k = 0; k < K; ++k)
    if (std::isnan(packed.log_const[k]) || packed.log_const[k] == std::numeric_limits<T>::infinity())
      throw InvalidInput("model component " + std::to_string(k) + ": its normalising constant " +
                         shortest_text(log_const[k]) + " is outside the range of the compute precision " + precision +
                         (fp64 ? "" : "; use --precision fp64"));

  for (std::size_t i = 0; i < model.parts.size(); ++i) {
    const Part& p = model.parts[i];
    const FamilyOps& ops = family_ops(p.family);
    kernels::PartView<T> v;
    v.kind = static_cast<kernels::PartKind>(family_ops(p.family).kernel_family());
    v.col_begin = static_cast<int>(p.col_begin);
    v.dims = static_cast<int>(p.dims());
    v.categories = static_cast<int>(p.categories);
    v.coef = packed.coef.data() + coef_offset[i];
    v.coef_stride = ops.coef_stride(p);
    v.shift = shifts.part_offset[i] >= 0 ? packed.shift.data() + shifts.part_offset[i] : nullptr;
    v.stat_offset = layout.part_offset[i];
    v.stat_stride = layout.part_stride[i];
    packed.parts.push_back(v);
  }
  auto& view = packed.view;
  view.components = static_cast<int>(K);
  view.columns = static_cast<int>(std::max(data_columns, model.columns()));
  view.log_const = packed.log_const.data();
  view.parts = packed.parts.data();
  view.num_parts = static_cast<int>(packed.parts.size());
  view.stat_size = layout.size;
  view.row_offset = std::any_of(model.parts.begin(), model.parts.end(),
                                [](const Part& p) { return family_descriptor(p.family).row_constant; });
  return packed;
}

template PackedModel<float> pack_model<float>(const Model&, std::size_t, bool);
template PackedModel<double> pack_model<double>(const Model&, std::size_t, bool);

MStepResult m_step(const Model& prev, const std::vector<double>& stats, const ShiftTable& shifts,
                   const EstimatorOptions& options) {
  const std::size_t K = prev.components();
  const StatLayout layout = stat_layout(prev);
  const std::int64_t given = static_cast<std::int64_t>(stats.size());
  // (K·C > 0 in a valid model, so the two sizes never coincide.)
  const bool marginalised = given == layout.size + missing_mass_size(prev);
  if (given != layout.size && !marginalised)
    throw InvalidInput("statistics have " + std::to_string(stats.size()) + " values; the model needs " +
                       std::to_string(layout.size) + " (or " + std::to_string(layout.size + missing_mass_size(prev)) +
                       " with missing values marginalised)");
  const std::size_t C = prev.columns();
  std::vector<double> column_mass;
  MStepResult result;
  result.model = prev;
  Model& next = result.model;
  double total_mass = 0.0;
  for (std::size_t k = 0; k < K; ++k) total_mass += stats[kernels::kStatHeader + k];
  if (!(total_mass > 0.0)) throw InvalidInput("M-step: no responsibility mass at all (no valid rows were folded in)");
  for (std::size_t k = 0; k < K; ++k) {
    const double mass = stats[kernels::kStatHeader + k];
    next.weights[k] = mass / total_mass;
    if (is_empty_mass(mass)) {
      result.empty_components.push_back(k);
      next.weights[k] = 0.0;
      continue;  // keeps its previous parameters; run_em reseeds it under EmptyPolicy::reseed
    }
    for (std::size_t i = 0; i < prev.parts.size(); ++i) {
      Part& p = next.parts[i];
      const double* s = stats.data() + layout.part_offset[i] + static_cast<std::int64_t>(k) * layout.part_stride[i];
      const double* shift =
          shifts.part_offset[i] >= 0 ? shifts.values.data() + shifts.part_offset[i] + k * p.dims() : nullptr;
      if (marginalised) {
        const double* missing = stats.data() + layout.size + static_cast<std::int64_t>(k * C + p.col_begin);
        column_mass.resize(p.dims());
        // A column's mass is a difference of sums: at most 1e-10 of the component's mass (and
        // at most kEmptyMass) it is rounding, not rows, and the column keeps its parameters.
        const double floor = std::max(kEmptyMass, 1e-10 * mass);
        for (std::size_t d = 0; d < p.dims(); ++d) column_mass[d] = mass - missing[d] > floor ? mass - missing[d] : 0.0;
      }
      family_ops(p.family).m_step(p, k, s, mass, marginalised ? column_mass.data() : nullptr, shift, options.m_step);
    }
  }
  // Parameters the components share (gaussian_tied's covariance), from the components that
  // captured rows.
  std::vector<double> masses(K, 0.0);
  for (std::size_t k = 0; k < K; ++k)
    if (!is_empty_mass(stats[kernels::kStatHeader + k])) masses[k] = stats[kernels::kStatHeader + k];
  for (Part& p : next.parts) family_ops(p.family).m_step_shared(p, masses, options.m_step);
  // Renormalise exactly so the weights stay a simplex after dropping empty components.
  double sum = 0.0;
  for (double w : next.weights) sum += w;
  for (double& w : next.weights) w /= sum;
  return result;
}

}  // namespace mixle::engine
