// categorical: each of the part's D columns holds a code in [0, V); parameters prob K×D×V.
#include "engine/families/checks.hpp"
#include "engine/families/family_ops.hpp"

#include <cmath>

namespace mixle::engine {
namespace {

constexpr ParamDescriptor kParams[] = {{"prob", ParamShape::per_category, &Part::prob}};

// Statistics Σr[x_d = v] [D×V]; free: V − 1 per column; work: a gather and a scatter-add per
// (row, component, column).
constexpr FamilyDescriptor kDescriptor{
    .family = Family::categorical,
    .name = "categorical",
    .summary = "codes 0…V−1 in each column (prob per category)",
    .params = kParams,
    .statistics = {.per_category = 1},
    .free_parameters = {.per_column = -1, .per_category = 1},
    .flops = {.per_column = 2},
    .discrete = true,
    .categories = true,
    .log_probabilities = true,
};

class Categorical final : public FamilyOps {
 public:
  const FamilyDescriptor& descriptor() const override { return kDescriptor; }
  int coef_stride(const Part& p) const override { return static_cast<int>(p.dims() * p.categories); }

  void resize(Part& p, std::size_t K) const override {
    p.prob.assign(K * p.dims() * p.categories, p.categories ? 1.0 / p.categories : 0.0);
  }

  void validate(const Part& p, std::size_t K, const std::string& where) const override {
    const std::size_t D = p.dims(), V = p.categories;
    if (V < 1) throw InvalidInput(where + ": \"categories\" must be ≥ 1 (the number of codes V)");
    require_size(p.prob, K * D * V, where, "prob", "K×D×V");
    for (std::size_t k = 0; k < K; ++k)
      for (std::size_t d = 0; d < D; ++d) {
        double sum = 0.0;
        for (std::size_t v = 0; v < V; ++v) {
          const double q = p.prob[(k * D + d) * V + v];
          require_value(std::isfinite(q) && q >= 0.0 && q <= 1.0, where, "prob", k, d * V + v, q, "must be in [0, 1]");
          sum += q;
        }
        if (std::abs(sum - 1.0) > 1e-6)
          throw InvalidInput(where + ": prob[" + std::to_string(k) + "] for column " + std::to_string(p.col_begin + d) +
                             " sums to " + format_number(sum) +
                             "; each row of V probabilities must sum to 1 (within 1e-6)");
      }
  }

  void check_data(const Part& p, const Dataset& data) const override {
    const double V = static_cast<double>(p.categories);
    const std::string accepted = "integer codes 0 … " + std::to_string(p.categories - 1);
    check_columns(p, data, accepted.c_str(), [V](double v) { return is_integer(v) && v >= 0.0 && v < V; });
  }

  double pack(const Part& p, std::size_t k, double* coef) const override {
    const std::size_t n = p.dims() * p.categories;
    for (std::size_t i = 0; i < n; ++i) coef[i] = std::log(p.prob[k * n + i]);
    return 0.0;
  }

  void m_step(Part& p, std::size_t k, const double* s, double mass, const double* column_mass, const double*,
              const MStepOptions& o) const override {
    const std::size_t D = p.dims(), V = p.categories;
    for (std::size_t d = 0; d < D; ++d) {
      const double md = column_mass_of(column_mass, d, mass);
      if (is_empty_mass(md)) continue;  // no row of the component observed column d
      const double denom = md + o.pseudo_count * static_cast<double>(V);
      for (std::size_t v = 0; v < V; ++v) p.prob[(k * D + d) * V + v] = (s[d * V + v] + o.pseudo_count) / denom;
    }
  }

  bool observed_columns() const override { return true; }
  double log_density_column(const Part& p, std::size_t k, std::size_t d, double x) const override {
    return std::log(p.prob[(k * p.dims() + d) * p.categories + static_cast<std::size_t>(x)]);
  }
  void accumulate_column(const Part& p, std::size_t d, double x, double weight, double, double* stats) const override {
    stats[d * p.categories + static_cast<std::size_t>(x)] += weight;
  }

  void sample(const Part& p, std::size_t k, std::mt19937_64& rng, double* row) const override {
    const std::size_t D = p.dims(), V = p.categories;
    std::uniform_real_distribution<double> u(0.0, 1.0);
    for (std::size_t d = 0; d < D; ++d) {
      double x = u(rng), acc = 0.0;
      std::size_t code = V - 1;
      for (std::size_t v = 0; v < V; ++v) {
        acc += p.prob[(k * D + d) * V + v];
        if (x < acc) {
          code = v;
          break;
        }
      }
      row[p.col_begin + d] = static_cast<double>(code);
    }
  }

  // Each component favours one category per column (weight 4 against 1 for the others); the
  // perturbation mixes 20% uniform in, so every code stays possible.
  void draw_benchmark_parameters(Part& p, std::size_t K, std::mt19937_64& rng) const override {
    const std::size_t V = p.categories;
    p.prob.resize(K * p.dims() * V);
    std::uniform_int_distribution<std::size_t> pick(0, V - 1);
    for (std::size_t kd = 0; kd < K * p.dims(); ++kd) {
      const std::size_t favourite = pick(rng);
      for (std::size_t v = 0; v < V; ++v)
        p.prob[kd * V + v] = (v == favourite ? 4.0 : 1.0) / (static_cast<double>(V) + 3.0);
    }
  }
  void perturb(Part& p, std::mt19937_64&) const override {
    for (auto& q : p.prob) q = 0.8 * q + 0.2 / static_cast<double>(p.categories);
  }
};

}  // namespace

const FamilyOps& categorical_ops() {
  static const Categorical ops;
  return ops;
}

}  // namespace mixle::engine
