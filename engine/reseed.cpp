#include "engine/reseed.hpp"

#include "engine/compute.hpp"

#include <mixle/error.hpp>

#include <algorithm>
#include <cmath>

namespace mixle::engine {

EmptyPolicy empty_policy_from_name(const std::string& name) {
  if (name == "keep") return EmptyPolicy::keep;
  if (name == "reseed") return EmptyPolicy::reseed;
  throw InvalidInput("empty-component policy '" + name + "' is not one of: keep, reseed");
}

std::size_t badness_bin(double loglik) noexcept {
  if (std::isnan(loglik)) return 0;
  const double u = -loglik;
  const double t = std::floor(8.0 * std::copysign(std::log2(1.0 + std::abs(u)), u));
  const double bin = static_cast<double>(kBadnessZero) + t;  // ±inf stay infinite
  if (!(bin > 0.0)) return 0;
  return static_cast<std::size_t>(std::min(bin, static_cast<double>(kBadnessBins - 1)));
}

std::size_t first_worst_bin(const std::vector<double>& weight_in, double wanted) noexcept {
  std::size_t first = weight_in.size();
  double taken = 0.0;
  while (first > 0 && !(taken >= wanted && taken > 0.0)) taken += weight_in[--first];
  return first;
}

namespace {

/// Every row's badness bin under `model` (fp64 scores on the CPU: a reseed is rare and must
/// pick the same rows whatever device runs the E-step).
void badness_bins(Compute& cpu, const Model& model, const Dataset& rows, std::vector<double>& loglik,
                  std::vector<std::size_t>& bin) {
  loglik.resize(rows.rows());
  bin.resize(rows.rows());
  cpu.score(model, rows, Precision::fp64, loglik.data(), nullptr);
  for (std::size_t r = 0; r < rows.rows(); ++r) bin[r] = badness_bin(loglik[r]);
}

/// Component k of `model` from its rows' statistics `s` (accumulated about zero, `mass` their
/// weight), with mixture weight `share`; the other weights shrink in proportion.
void restart(Model& model, std::size_t k, const Statistics& s, double mass, double share, const MStepOptions& options) {
  const std::size_t K = model.components();
  const StatLayout layout = stat_layout(model);
  for (std::size_t i = 0; i < model.parts.size(); ++i) {
    Part& p = model.parts[i];
    const double* stats =
        s.values.data() + layout.part_offset[i] + static_cast<std::int64_t>(k) * layout.part_stride[i];
    const FamilyOps& ops = family_ops(p.family);
    ops.m_step(p, k, stats, mass, nullptr, nullptr, options);
    if (ops.shares_parameters(p)) {
      // The shared parameters (gaussian_tied's covariance) stay as they are: pooled from one
      // other component alone, they are that component's, which every component holds.
      std::vector<double> one(K, 0.0);
      one[k == 0 ? 1 : 0] = 1.0;
      ops.m_step_shared(p, one, options);
    }
  }
  double others = 0.0;
  for (std::size_t j = 0; j < K; ++j)
    if (j != k) others += model.weights[j];
  for (std::size_t j = 0; j < K; ++j)
    model.weights[j] = j == k ? share : others > 0.0 ? model.weights[j] * (1.0 - share) / others : 0.0;
}

}  // namespace

Reseeded reseed_component(EncodedData& data, Model& evaluated, Model& next, std::size_t k,
                          const EstimatorOptions& options, int threads) {
  const std::size_t K = next.components();
  if (k >= K || evaluated.components() != K)
    throw InvalidInput("reseed: component " + std::to_string(k) + " of a " + std::to_string(K) + "-component model");
  const auto cpu = make_cpu_compute(threads);
  std::vector<double> loglik;
  std::vector<std::size_t> bin;

  // Pass 1: the sample weight in each badness bin, over every rank's rows.
  std::vector<double> weight_in(kBadnessBins, 0.0);
  data.fold_rows(weight_in, [&](const Dataset& rows, std::size_t) {
    badness_bins(*cpu, evaluated, rows, loglik, bin);
    const double* w = rows.weights();
    for (std::size_t r = 0; r < rows.rows(); ++r) weight_in[bin[r]] += w ? w[r] : 1.0;
  });
  double total = 0.0;
  for (double w : weight_in) total += w;
  const double wanted = total / static_cast<double>(K);
  const std::size_t first_bin = first_worst_bin(weight_in, wanted);

  // Pass 2: those rows, and only those, to component k; its M-step from them. They hold weight
  // (first_worst_bin), and their log-likelihoods are finite: the E-step that found k empty
  // refused impossible and NaN rows.
  const Statistics s =
      data.accumulate_assigned(evaluated, [&](const Dataset& rows, std::size_t, std::size_t, std::size_t* label) {
        badness_bins(*cpu, evaluated, rows, loglik, bin);
        for (std::size_t r = 0; r < rows.rows(); ++r)
          if (bin[r] >= first_bin) label[r] = k;
      });
  const double mass = s.values[kernels::kStatHeader + k];
  // Coarse bins (rows alike, say) may hold far more than 1/K of the weight: the weight is capped.
  const double share = std::min(mass, wanted) / total;
  restart(next, k, s, mass, share, options.m_step);
  restart(evaluated, k, s, mass, share, options.m_step);
  return Reseeded{k, mass, share};
}

}  // namespace mixle::engine
