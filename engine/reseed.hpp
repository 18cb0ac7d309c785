// Restarting empty components (`--empty reseed`): a component that captured no rows is moved to
// the rows the current model explains worst, so that the fit keeps the K components it was
// asked for instead of carrying one at weight 0.
#pragma once

#include "engine/encoded_data.hpp"

#include <cstddef>
#include <string>
#include <vector>

namespace mixle::engine {

/// What to do with a component whose responsibility mass falls to kEmptyMass or below.
enum class EmptyPolicy {
  keep,    // it keeps its previous parameters with weight 0 (scikit-learn's behaviour, the default)
  reseed,  // it restarts from the worst-explained rows (reseed_component), once per run
};
EmptyPolicy empty_policy_from_name(const std::string& name);

/// How badly a row is explained, as a bin of u = −log p(x): eight bins per doubling of 1 + |u|
/// on either side of 0 (bin kBadnessZero + floor(8 · sign(u) · log2(1 + |u|))), so that one pass
/// of summed counts sorts rows of any scale into a few hundred bins with a resolution of about
/// 9% of 1 + |u|, on any number of ranks. Worse rows have higher bins; the last holds every row
/// beyond 2^64 nats, impossible rows (log p = −inf) included, and bin 0 the rows at +inf or NaN.
constexpr std::size_t kBadnessZero = 8 * 64;
constexpr std::size_t kBadnessBins = 2 * kBadnessZero + 1;
std::size_t badness_bin(double loglik) noexcept;
/// The first of the worst bins (the highest) that together hold at least `wanted` of the weight
/// (and some weight): the rows a reseed takes are those of bins ≥ it. 0 when no such bins.
std::size_t first_worst_bin(const std::vector<double>& weight_in, double wanted) noexcept;

/// One reseeded component: the rows it was restarted from (their total sample weight) and its
/// new mixture weight.
struct Reseeded {
  std::size_t component = 0;
  double rows = 0.0;
  double weight = 0.0;
};

/// Restarts component k (one that captured no rows) from the rows worst explained by
/// `evaluated`, the model whose E-step found k empty: the rows of the worst badness bins that
/// together hold at least 1/K of the total sample weight (first_worst_bin) are given to k alone;
/// k's parameters become the M-step of those rows (float64, the family's regularisation; shared
/// parameters such as gaussian_tied's covariance stay as they are) and its weight their share of
/// the total weight, at most 1/K, the other weights shrinking in proportion. Component k is set
/// so in both `next` (the M-step's model, the one EM continues from) and `evaluated`, so that
/// reseeding several components one after the other spreads them over different rows.
/// Deterministic: the same rows on any number of ranks and threads. Two passes over the data
/// (collective on a distributed handle).
Reseeded reseed_component(EncodedData& data, Model& evaluated, Model& next, std::size_t k,
                          const EstimatorOptions& options, int threads);

}  // namespace mixle::engine
