// Helpers shared by the engine tests: small model builders and checks.
#pragma once

#include <mixle/fit.hpp>
#include <mixle/model.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

namespace mixle::test {

inline Part make_part(Family family, std::size_t begin, std::size_t end, std::size_t categories = 0) {
  Part p;
  p.family = family;
  p.col_begin = begin;
  p.col_end = end;
  p.categories = categories;
  return p;
}

/// True when every parameter of `model` is finite.
inline bool all_finite(const Model& model) {
  auto ok = [](const std::vector<double>& v) {
    return std::all_of(v.begin(), v.end(), [](double x) { return std::isfinite(x); });
  };
  if (!ok(model.weights)) return false;
  for (const Part& p : model.parts)
    if (!ok(p.mean) || !ok(p.var) || !ok(p.cov) || !ok(p.prob) || !ok(p.rate)) return false;
  return true;
}

/// The permutation perm (fitted component perm[k] ↔ true component k) minimising Σ cost(k, perm[k]).
/// Brute force: K ≤ 8 gives at most 40320 permutations.
template <class Cost>
std::vector<std::size_t> best_permutation(std::size_t K, Cost cost) {
  std::vector<std::size_t> perm(K), best;
  std::iota(perm.begin(), perm.end(), std::size_t{0});
  double best_cost = INFINITY;
  do {
    double c = 0.0;
    for (std::size_t k = 0; k < K && c < best_cost; ++k) c += cost(k, perm[k]);
    if (c < best_cost) best_cost = c, best = perm;
  } while (std::next_permutation(perm.begin(), perm.end()));
  return best;
}

/// The per-iteration mean log-likelihood never decreases by more than `rel` relative.
inline void expect_monotone(const std::vector<double>& ll, double rel) {
  ASSERT_FALSE(ll.empty());
  for (std::size_t i = 1; i < ll.size(); ++i)
    EXPECT_GE(ll[i], ll[i - 1] - rel * std::abs(ll[i - 1]))
        << "mean log-likelihood fell from " << ll[i - 1] << " to " << ll[i] << " at iteration " << i + 1;
}

}  // namespace mixle::test
