// Synthetic benchmark cases: a well-separated generating model per family, data drawn from it
// with mixle::sample (stored float32, as most users' data), and a perturbed copy to evaluate.
// Why perturbed: evaluating the generating model itself gives near-0/1 responsibilities on
// well-separated data, which flatters kernels that skip tiny responsibilities.
#include "host/bench/bench.hpp"
#include "engine/families/family_ops.hpp"

#include <mixle/error.hpp>
#include <mixle/fit.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <random>

namespace mixle::host::bench {
namespace {

// Memory the float32 data may take before we refuse (the float64 draw is twice this, briefly).
constexpr double kGiB = 1ull << 30;
constexpr double kMaxDataBytes = 32 * kGiB;

std::vector<double> uniform_weights(std::size_t K, std::mt19937_64& rng) {
  // Mildly unequal weights (0.5..1.5 before normalising) so no component is negligible.
  std::uniform_real_distribution<double> u(0.5, 1.5);
  std::vector<double> w(K);
  double sum = 0.0;
  for (auto& x : w) sum += (x = u(rng));
  for (auto& x : w) x /= sum;
  return w;
}

// The family's recipe (FamilyOps::draw_benchmark_parameters) over all D columns.
Part generating_part(const BenchCase& c, std::mt19937_64& rng) {
  Part p;
  p.family = c.family;
  p.col_begin = 0;
  p.col_end = c.dims;
  if (family_descriptor(c.family).categories) p.categories = c.categories;
  engine::family_ops(c.family).draw_benchmark_parameters(p, c.components, rng);
  return p;
}

bool gaussian(Family f) {
  return f == Family::gaussian_diag || f == Family::gaussian_full || f == Family::gaussian_spherical ||
         f == Family::gaussian_tied;
}

// The evaluated model: every parameter moved by a fraction of its scale, weights re-drawn.
Model perturb(const Model& m, const BenchCase& c, std::mt19937_64& rng) {
  Model out = m;
  out.weights = uniform_weights(c.components, rng);
  engine::family_ops(c.family).perturb(out.parts.front(), rng);
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
  need(std::isfinite(c.centre_scale) && c.centre_scale > 0,
       "--centre-scale " + std::to_string(c.centre_scale) + ": the means' scale must be finite and > 0");
  if (family_descriptor(c.family).categories)
    need(c.categories >= 2, "--categories " + std::to_string(c.categories) + ": " + family_name(c.family) +
                                " needs ≥ 2 (one category is never worth a benchmark)");
  const double bytes = 4.0 * static_cast<double>(c.rows) * static_cast<double>(c.dims);
  need(bytes <= kMaxDataBytes, "--rows " + std::to_string(c.rows) + " × --dims " + std::to_string(c.dims) + " needs " +
                                   std::to_string(bytes / kGiB) +
                                   " GiB of float32 data; the benchmark allows at most 32 GiB");
}

PreparedCase prepare_case(const BenchCase& c) {
  validate_case(c);
  const auto t0 = std::chrono::steady_clock::now();
  std::mt19937_64 rng(c.seed * 0x9E3779B97F4A7C15ull + 0x6d69786c65ull);
  PreparedCase out;
  out.spec = c;
  out.generating.weights = uniform_weights(c.components, rng);
  out.generating.parts.push_back(generating_part(c, rng));
  if (gaussian(c.family))
    for (double& m : out.generating.parts.front().mean) m *= c.centre_scale / engine::kBenchmarkCentreScale;
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
