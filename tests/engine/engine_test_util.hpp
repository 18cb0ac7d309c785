// Helpers shared by the engine tests: small model builders and checks.
#pragma once

#include <mixle/error.hpp>
#include <mixle/fit.hpp>
#include <mixle/model.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <numeric>
#include <string>
#include <vector>

namespace mixle::test {

/// Expects `fn` to throw InvalidInput whose message holds every fragment.
inline void expect_invalid_input(const std::function<void()>& fn, const std::vector<std::string>& fragments) {
  try {
    fn();
    ADD_FAILURE() << "no InvalidInput";
  } catch (const InvalidInput& e) {
    for (const auto& f : fragments)
      EXPECT_NE(std::string(e.what()).find(f), std::string::npos) << "lacks \"" << f << "\": " << e.what();
  }
}

/// The component-parallel and component-sharded tests' truth models: "diag" (gaussian_diag, K=4,
/// 3 columns), "full" (gaussian_full, K=2, 2 columns), otherwise a mixed record (K=2; gaussian_diag
/// 0-2, categorical 2-3 with 3 categories, poisson 3-4).
inline Model truth_model(const std::string& kind) {
  const std::string text = kind == "diag"
                               ? R"({"format":"mixle-model","version":1,"weights":[0.25,0.25,0.25,0.25],"parts":[
               {"family":"gaussian_diag","columns":[0,3],"mean":[[0,0,0],[4,0,0],[0,4,0],[0,0,4]],
                "var":[[1,1,1],[1,2,1],[0.5,1,1],[1,1,0.3]]}]})"
                           : kind == "full" ? R"({"format":"mixle-model","version":1,"weights":[0.5,0.5],"parts":[
               {"family":"gaussian_full","columns":[0,2],"mean":[[0,0],[5,5]],
                "cov":[[[2,1],[1,2]],[[1,-0.3],[-0.3,0.5]]]}]})"
                                            : R"({"format":"mixle-model","version":1,"weights":[0.6,0.4],"parts":[
               {"family":"gaussian_diag","columns":[0,2],"mean":[[0,0],[3,3]],"var":[[1,1],[1,1]]},
               {"family":"categorical","columns":[2,3],"categories":3,"prob":[[0.8,0.1,0.1],[0.1,0.1,0.8]]},
               {"family":"poisson","columns":[3,4],"rate":[[2],[9]]}]})";
  return model_from_json(text);
}

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
    if (!ok(p.mean) || !ok(p.var) || !ok(p.cov) || !ok(p.prob) || !ok(p.rate) || !ok(p.shape)) return false;
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
