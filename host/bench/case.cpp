// Synthetic benchmark cases: a well-separated generating model per family, data drawn from it
// with mixle::sample (stored float32, as most users' data), and a perturbed copy to evaluate.
// Why perturbed: evaluating the generating model itself gives near-0/1 responsibilities on
// well-separated data, which flatters kernels that skip tiny responsibilities.
#include "host/bench/bench.hpp"

#include <mixle/error.hpp>
#include <mixle/fit.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <random>

namespace mixle::host::bench {
namespace {

// Memory the float32 data may take before we refuse (the float64 draw is twice this, briefly).
constexpr double kMaxDataBytes = 32.0 * (1ull << 30);

std::vector<double> uniform_weights(std::size_t K, std::mt19937_64& rng) {
  // Mildly unequal weights (0.5..1.5 before normalising) so no component is negligible.
  std::uniform_real_distribution<double> u(0.5, 1.5);
  std::vector<double> w(K);
  double sum = 0.0;
  for (auto& x : w) sum += (x = u(rng));
  for (auto& x : w) x /= sum;
  return w;
}

Part generating_part(const BenchCase& c, std::mt19937_64& rng) {
  const std::size_t K = c.components, D = c.dims;
  std::normal_distribution<double> normal(0.0, 1.0);
  Part p;
  p.family = c.family;
  p.col_begin = 0;
  p.col_end = D;
  switch (c.family) {
    case Family::gaussian_diag:
    case Family::gaussian_full: {
      // Centres N(0, 4²) and scales U(0.5, 1.5): the same recipe as the scikit-learn anchor.
      std::uniform_real_distribution<double> scale(0.5, 1.5);
      p.mean.resize(K * D);
      for (auto& m : p.mean) m = 4.0 * normal(rng);
      if (c.family == Family::gaussian_diag) {
        p.var.resize(K * D);
        for (auto& v : p.var) { const double s = scale(rng); v = s * s; }
      } else {
        // Σ = diag(s²) + A·Aᵀ/(2D): positive definite, with correlations of moderate size.
        p.cov.assign(K * D * D, 0.0);
        std::vector<double> a(D * D);
        for (std::size_t k = 0; k < K; ++k) {
          for (auto& x : a) x = normal(rng);
          double* S = p.cov.data() + k * D * D;
          for (std::size_t i = 0; i < D; ++i)
            for (std::size_t j = 0; j < D; ++j) {
              double dot = 0.0;
              for (std::size_t l = 0; l < D; ++l) dot += a[i * D + l] * a[j * D + l];
              S[i * D + j] = dot / (2.0 * static_cast<double>(D));
            }
          for (std::size_t i = 0; i < D; ++i) { const double s = scale(rng); S[i * D + i] += s * s; }
        }
      }
      break;
    }
    case Family::categorical: {
      // Each component favours one category per feature (weight 4 against 1 for the others).
      const std::size_t V = c.categories;
      p.categories = V;
      p.prob.resize(K * D * V);
      std::uniform_int_distribution<std::size_t> pick(0, V - 1);
      for (std::size_t kd = 0; kd < K * D; ++kd) {
        const std::size_t fav = pick(rng);
        for (std::size_t v = 0; v < V; ++v)
          p.prob[kd * V + v] = (v == fav ? 4.0 : 1.0) / (static_cast<double>(V) + 3.0);
      }
      break;
    }
    case Family::poisson: {
      std::uniform_real_distribution<double> rate(1.0, 20.0);
      p.rate.resize(K * D);
      for (auto& r : p.rate) r = rate(rng);
      break;
    }
    case Family::exponential: {
      std::uniform_real_distribution<double> rate(0.2, 5.0);
      p.rate.resize(K * D);
      for (auto& r : p.rate) r = rate(rng);
      break;
    }
    case Family::bernoulli: {
      std::uniform_real_distribution<double> prob(0.05, 0.95);
      p.prob.resize(K * D);
      for (auto& q : p.prob) q = prob(rng);
      break;
    }
  }
  return p;
}

// The evaluated model: every parameter moved by a fraction of its scale, weights re-drawn.
Model perturb(const Model& m, const BenchCase& c, std::mt19937_64& rng) {
  std::normal_distribution<double> normal(0.0, 1.0);
  std::uniform_real_distribution<double> factor(0.8, 1.25);
  Model out = m;
  out.weights = uniform_weights(c.components, rng);
  Part& p = out.parts.front();
  const std::size_t K = c.components, D = c.dims;
  switch (c.family) {
    case Family::gaussian_diag:
      for (std::size_t i = 0; i < K * D; ++i) {
        p.mean[i] += 0.5 * std::sqrt(p.var[i]) * normal(rng);
        p.var[i] *= factor(rng);
      }
      break;
    case Family::gaussian_full:
      for (std::size_t k = 0; k < K; ++k) {
        const double f = factor(rng);  // one factor per component keeps Σ positive definite
        for (std::size_t d = 0; d < D; ++d)
          p.mean[k * D + d] += 0.5 * std::sqrt(p.cov[k * D * D + d * D + d]) * normal(rng);
        for (std::size_t i = 0; i < D * D; ++i) p.cov[k * D * D + i] *= f;
      }
      break;
    case Family::categorical:
      // Mix 20% uniform in: still a probability vector, and every code stays possible.
      for (auto& q : p.prob) q = 0.8 * q + 0.2 / static_cast<double>(c.categories);
      break;
    case Family::poisson:
    case Family::exponential:
      for (auto& r : p.rate) r *= factor(rng);
      break;
    case Family::bernoulli:
      for (auto& q : p.prob) q = std::clamp(q + 0.05 * normal(rng), 0.02, 0.98);
      break;
  }
  return out;
}

}  // namespace

void validate_case(const BenchCase& c) {
  auto need = [](bool ok, const std::string& what) {
    if (!ok) throw InvalidInput(what);
  };
  need(c.rows >= 1, "--rows 0: benchmark at least 1 row");
  need(c.dims >= 1, "--dims 0: at least 1 dimension");
  need(c.components >= 1, "--components 0: at least 1 component");
  need(c.iters >= 1, "--iters " + std::to_string(c.iters) + ": time at least 1 repetition");
  need(c.warmup >= 0, "--warmup " + std::to_string(c.warmup) + ": must be ≥ 0");
  need(c.threads >= 0, "--threads " + std::to_string(c.threads) + ": must be ≥ 0 (0 = all)");
  need(c.check_rows >= 1, "check rows must be ≥ 1");
  if (c.family == Family::categorical)
    need(c.categories >= 2, "--categories " + std::to_string(c.categories) + ": categorical needs ≥ 2");
  const double bytes = 4.0 * static_cast<double>(c.rows) * static_cast<double>(c.dims);
  need(bytes <= kMaxDataBytes, "--rows " + std::to_string(c.rows) + " × --dims " + std::to_string(c.dims) +
                                   " needs " + std::to_string(bytes / 1e9) + " GB of float32 data; the "
                                   "benchmark allows at most 32 GiB");
}

PreparedCase prepare_case(const BenchCase& c) {
  validate_case(c);
  const auto t0 = std::chrono::steady_clock::now();
  std::mt19937_64 rng(c.seed * 0x9E3779B97F4A7C15ull + 0x6d69786c65ull);
  PreparedCase out;
  out.spec = c;
  out.generating.weights = uniform_weights(c.components, rng);
  out.generating.parts.push_back(generating_part(c, rng));
  validate_model(out.generating);
  out.evaluated = perturb(out.generating, c, rng);
  validate_model(out.evaluated);

  // mixle::sample draws float64; the benchmark stores float32, what the kernels stream.
  const Dataset drawn = sample(out.generating, c.rows, c.seed);
  const double* src = drawn.as<double>();
  std::vector<float> values(drawn.rows() * drawn.cols());
  for (std::size_t i = 0; i < values.size(); ++i) values[i] = static_cast<float>(src[i]);
  out.data = Dataset::from_vector(std::move(values), drawn.rows(), drawn.cols());
  out.prepare_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return out;
}

}  // namespace mixle::host::bench
