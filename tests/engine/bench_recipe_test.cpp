// The benchmark's recipes, which live with each family (FamilyOps::draw_benchmark_parameters and
// perturb): every family draws a valid model in its documented ranges, and the perturbation
// moves every parameter by the documented fraction while keeping the model valid.
#include "engine/families/family_ops.hpp"

#include <mixle/family.hpp>
#include <mixle/model.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

namespace mixle {
namespace {

// K = 50 components of D = 4 columns: 200 draws per array, so a recipe's ranges are reached.
constexpr std::size_t K = 50, D = 4, V = 5;

double average(const std::vector<double>& v) {
  double mean = 0.0;
  for (double x : v) mean += x / v.size();
  return mean;
}

double standard_deviation(const std::vector<double>& v) {
  const double mean = average(v);
  double square = 0.0;
  for (double x : v) square += (x - mean) * (x - mean) / v.size();
  return std::sqrt(square);
}

Part drawn(Family family, std::mt19937_64& rng) {
  Part p;
  p.family = family;
  p.col_end = D;
  if (family_descriptor(family).categories) p.categories = V;
  engine::family_ops(family).draw_benchmark_parameters(p, K, rng);
  return p;
}

void expect_in(const std::vector<double>& values, double lo, double hi, const char* what) {
  ASSERT_FALSE(values.empty()) << what;
  for (double v : values) EXPECT_TRUE(v >= lo && v <= hi) << what << " " << v << " not in [" << lo << ", " << hi << "]";
}

/// after[i] / before[i] for every value.
std::vector<double> ratios(const std::vector<double>& after, const std::vector<double>& before) {
  std::vector<double> out;
  for (std::size_t i = 0; i < after.size(); ++i) out.push_back(after[i] / before[i]);
  return out;
}

TEST(BenchRecipes, DrawValidModelsInTheirRangesAndPerturbThem) {
  std::mt19937_64 rng(17);
  for (const FamilyDescriptor* family : family_descriptors()) {
    SCOPED_TRACE(family->name);
    const Part p = drawn(family->family, rng);
    Model m{std::vector<double>(K, 1.0 / K), {p}};
    ASSERT_NO_THROW(validate_model(m));
    Part q = p;
    engine::family_ops(family->family).perturb(q, rng);
    ASSERT_NO_THROW(validate_model(Model{m.weights, {q}}));
    switch (family->family) {
      case Family::gaussian_diag:
        expect_in(p.var, 0.25, 2.25, "var");
        // Scales U(0.5, 1.5), squared: 200 draws reach below 0.5 and above 2 (P(s > √2) = 8.6%).
        EXPECT_LT(*std::min_element(p.var.begin(), p.var.end()), 0.5);
        EXPECT_GT(*std::max_element(p.var.begin(), p.var.end()), 2.0);
        expect_in(ratios(q.var, p.var), 0.8, 1.25, "var factor");
        for (std::size_t i = 0; i < K * D; ++i) {
          EXPECT_NE(q.mean[i], p.mean[i]);
          EXPECT_LT(std::abs(q.mean[i] - p.mean[i]), 3.0 * std::sqrt(p.var[i])) << "half a standard deviation, 6σ";
        }
        EXPECT_NEAR(standard_deviation(p.mean), 4.0, 0.6) << "centres N(0, 4²)";
        break;
      case Family::gaussian_tied:
        // gaussian_full's recipe with component 0's matrix shared, drawn and perturbed alike.
        for (std::size_t k = 1; k < K; ++k)
          for (std::size_t i = 0; i < D * D; ++i) {
            EXPECT_EQ(p.cov[k * D * D + i], p.cov[i]);
            EXPECT_EQ(q.cov[k * D * D + i], q.cov[i]);
          }
        [[fallthrough]];
      case Family::gaussian_full:
        for (std::size_t k = 0; k < K; ++k) {
          const double f = q.cov[k * D * D] / p.cov[k * D * D];
          EXPECT_TRUE(f >= 0.8 && f <= 1.25) << f;
          for (std::size_t i = 0; i < D * D; ++i) EXPECT_NEAR(q.cov[k * D * D + i], f * p.cov[k * D * D + i], 1e-12);
          for (std::size_t d = 0; d < D; ++d) {
            EXPECT_GE(p.cov[k * D * D + d * D + d], 0.25) << "diag(s²) with s ≥ 0.5, plus A·Aᵀ/(2D) ≥ 0";
            // A·Aᵀ/(2D) adds a χ²(D)/(2D) to the diagonal: beyond 9.75 only above χ² = 78.
            EXPECT_LT(p.cov[k * D * D + d * D + d], 12.0);
            EXPECT_NE(q.mean[k * D + d], p.mean[k * D + d]);
          }
        }
        if (family->family == Family::gaussian_full) {  // tied shares one matrix: too few entries
          // A standard normal: A·Aᵀ/(2D) has mean 0 off the diagonal (sd 1/√(4D) per entry) and
          // 1/2 on it, where s² adds 13/12 on average.
          std::vector<double> off, on;
          for (std::size_t k = 0; k < K; ++k)
            for (std::size_t i = 0; i < D; ++i)
              for (std::size_t j = 0; j < D; ++j) (i == j ? on : off).push_back(p.cov[k * D * D + i * D + j]);
          EXPECT_NEAR(average(off), 0.0, 0.1);
          EXPECT_NEAR(average(on), 13.0 / 12.0 + 0.5, 0.2);
          // s² reaches down to 0.25 and A·Aᵀ/(2D) to near 0: of 200 diagonal entries some lie
          // below 0.75 (P ≈ 0.15 each).
          EXPECT_LT(*std::min_element(on.begin(), on.end()), 0.75);
        }
        break;
      case Family::categorical: {
        std::vector<int> favoured(V, 0);
        for (std::size_t kd = 0; kd < K * D; ++kd) {
          int favourites = 0;
          for (std::size_t v = 0; v < V; ++v) {
            const double x = p.prob[kd * V + v];
            favourites += x == 4.0 / (V + 3.0);
            favoured[v] += x == 4.0 / (V + 3.0);
            if (x != 4.0 / (V + 3.0)) EXPECT_EQ(x, 1.0 / (V + 3.0));
            EXPECT_DOUBLE_EQ(q.prob[kd * V + v], 0.8 * x + 0.2 / V);
          }
          EXPECT_EQ(favourites, 1);
        }
        for (std::size_t v = 0; v < V; ++v) EXPECT_GT(favoured[v], 0) << "category " << v << " is never favoured";
        break;
      }
      case Family::poisson:
        expect_in(p.rate, 1.0, 20.0, "rate");
        EXPECT_GT(*std::max_element(p.rate.begin(), p.rate.end()), 18.0);
        expect_in(ratios(q.rate, p.rate), 0.8, 1.25, "rate factor");
        break;
      case Family::exponential:
        expect_in(p.rate, 0.2, 5.0, "rate");
        EXPECT_GT(*std::max_element(p.rate.begin(), p.rate.end()), 4.5);
        expect_in(ratios(q.rate, p.rate), 0.8, 1.25, "rate factor");
        break;
      case Family::bernoulli:
        expect_in(p.prob, 0.05, 0.95, "prob");
        EXPECT_GT(*std::max_element(p.prob.begin(), p.prob.end()), 0.9);
        EXPECT_LT(*std::min_element(p.prob.begin(), p.prob.end()), 0.1);
        expect_in(q.prob, 0.02, 0.98, "perturbed prob");
        for (std::size_t i = 0; i < K * D; ++i) EXPECT_LT(std::abs(q.prob[i] - p.prob[i]), 0.3);
        break;
      case Family::gamma: {
        expect_in(p.shape, 2.0, 20.0, "shape");
        EXPECT_GT(*std::max_element(p.shape.begin(), p.shape.end()), 18.0);
        expect_in(ratios(p.shape, p.rate), 0.5, 20.0, "mean = shape / rate");
        expect_in(ratios(q.shape, p.shape), 0.8, 1.25, "shape factor");
        expect_in(ratios(q.rate, p.rate), 0.8, 1.25, "rate factor");
        break;
      }
      case Family::gaussian_spherical:
        ASSERT_EQ(p.var.size(), K) << "one variance per component";
        expect_in(p.var, 0.25, 2.25, "var");
        EXPECT_LT(*std::min_element(p.var.begin(), p.var.end()), 0.5) << "scales reach down to 0.5";
        expect_in(ratios(q.var, p.var), 0.8, 1.25, "var factor");
        for (std::size_t i = 0; i < K * D; ++i) {
          EXPECT_NE(q.mean[i], p.mean[i]);
          EXPECT_LT(std::abs(q.mean[i] - p.mean[i]), 3.0 * std::sqrt(p.var[i / D])) << "half a standard deviation, 6σ";
        }
        EXPECT_NEAR(standard_deviation(p.mean), 4.0, 0.6) << "centres N(0, 4²)";
        break;
      case Family::lognormal:
        expect_in(p.var, 0.01, 0.25, "log_var (spreads 0.1 to 0.5)");
        EXPECT_LT(*std::min_element(p.var.begin(), p.var.end()), 0.15 * 0.15) << "spreads reach down to 0.1";
        EXPECT_NEAR(standard_deviation(p.mean), 1.0, 0.15) << "log_mean N(0, 1)";
        EXPECT_NEAR(average(p.mean), 0.0, 0.3) << "log_mean N(0, 1): 200 draws, 4 standard errors";
        expect_in(ratios(q.var, p.var), 0.8, 1.25, "log_var factor");
        break;
    }
    // Every perturbed array differs from the drawn one somewhere.
    for (const ParamDescriptor& param : family->params) EXPECT_NE(q.*param.values, p.*param.values) << param.name;
  }
}

// bernoulli's perturbation moves each probability by N(0, 0.05²) and clamps it to [0.02, 0.98]:
// from either edge, about half the moves leave the range and stop exactly at the edge.
TEST(BenchRecipes, BernoulliPerturbationStopsAtItsEdges) {
  std::mt19937_64 rng(5);
  for (const double edge : {0.02, 0.98}) {
    Part p;
    p.family = Family::bernoulli;
    p.col_end = D;
    p.prob.assign(K * D, edge);
    engine::family_ops(Family::bernoulli).perturb(p, rng);
    expect_in(p.prob, 0.02, 0.98, "perturbed prob");
    const auto at_edge = std::count(p.prob.begin(), p.prob.end(), edge);
    EXPECT_GT(at_edge, 60) << "of 200 at " << edge;
    EXPECT_LT(at_edge, 140) << "of 200 at " << edge;
  }
}

// gaussian_full's draw is mean + L·z with L the Cholesky factor of the covariance and z the
// sampler's next D standard normals, in order: recomputed here from the same engine and
// distribution for a covariance with strong correlation, whose factor has large off-diagonal
// entries (a sign or an index wrong in the product moves the row far).
TEST(BenchRecipe, GaussianFullDrawsMeanPlusCholeskyTimesNormals) {
  Part p;
  p.family = Family::gaussian_full;
  p.col_begin = 0;
  p.col_end = 3;
  p.mean = {1.0, -2.0, 3.0};
  p.cov = {4.0, 3.8, 1.0, 3.8, 4.0, 1.2, 1.0, 1.2, 2.0};
  // Its Cholesky factor, by hand: L00 = 2, L10 = 1.9, L11 = √(4 − 1.9²), L20 = 0.5,
  // L21 = (1.2 − 1.9·0.5)/L11, L22 = √(2 − 0.25 − L21²).
  const double l11 = std::sqrt(4.0 - 1.9 * 1.9), l21 = (1.2 - 0.95) / l11, l22 = std::sqrt(1.75 - l21 * l21);
  std::mt19937_64 rng(41), same(41);
  for (int draw = 0; draw < 3; ++draw) {
    std::normal_distribution<double> normal(0.0, 1.0);  // a new one per draw, as the sampler's
    double row[3];
    engine::family_ops(Family::gaussian_full).sample(p, 0, rng, row);
    const double z0 = normal(same), z1 = normal(same), z2 = normal(same);
    EXPECT_NEAR(row[0], 1.0 + 2.0 * z0, 1e-12) << draw;
    EXPECT_NEAR(row[1], -2.0 + 1.9 * z0 + l11 * z1, 1e-12) << draw;
    EXPECT_NEAR(row[2], 3.0 + 0.5 * z0 + l21 * z1 + l22 * z2, 1e-12) << draw;
  }
}

}  // namespace
}  // namespace mixle
