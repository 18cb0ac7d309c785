// gamma: positive reals, one shape α and one rate β per column:
//   log p(x) = Σ_d α_d log β_d − log Γ(α_d) + (α_d − 1) log x_d − β_d x_d
// Statistics Σ r x and Σ r log x. The M-step is the maximum-likelihood one: with the weighted
// means x̄ and l̄ = mean of log x, α solves log α − ψ(α) = log x̄ − l̄ (Newton's method from
// Minka's closed-form start, "Estimating a Gamma distribution", 2002), and β = α / x̄.
#include "engine/families/checks.hpp"
#include "engine/families/family_ops.hpp"
#include "engine/families/gamma_shape.hpp"
#include "kernels/common/math.hpp"

#include <algorithm>
#include <cmath>

namespace mixle::engine {
namespace {

constexpr ParamDescriptor kParams[] = {{"shape", ParamShape::per_column, &Part::shape},
                                       {"rate", ParamShape::per_column, &Part::rate}};

// E: (α−1)·log x − β·x, M: Σ r x and Σ r log x — 8 flops per (row, component, column).
constexpr FamilyDescriptor kDescriptor{
    .family = Family::gamma,
    .name = "gamma",
    .summary = "positive reals (shape, rate)",
    .params = kParams,
    .statistics = {.per_column = 2},
    .free_parameters = {.per_column = 2},
    .flops = {.per_column = 8},
};

/// The smallest gap log x̄ − l̄ the M-step uses. The gap is 0 when a component's values in a
/// column are all equal (α → ∞); at 1e-6, α ≈ 5·10⁵ (a relative spread of 0.14%), which keeps
/// the log-density's terms within float32's reach, as reg_covar does for a Gaussian variance.
constexpr double kMinLogGap = 1e-6;

class Gamma final : public FamilyOps {
 public:
  const FamilyDescriptor& descriptor() const override { return kDescriptor; }
  int coef_stride(const Part& p) const override { return 2 * static_cast<int>(p.dims()); }

  void resize(Part& p, std::size_t K) const override {
    p.shape.assign(K * p.dims(), 1.0);
    p.rate.assign(K * p.dims(), 1.0);
  }

  void validate(const Part& p, std::size_t K, const std::string& where) const override {
    const std::size_t D = p.dims();
    require_size(p.shape, K * D, where, "shape", "K×D");
    require_size(p.rate, K * D, where, "rate", "K×D");
    for (std::size_t i = 0; i < K * D; ++i) {
      require_value(std::isfinite(p.shape[i]) && p.shape[i] > 0.0, where, "shape", i / D, i % D, p.shape[i],
                    "must be finite and > 0");
      require_value(std::isfinite(p.rate[i]) && p.rate[i] > 0.0, where, "rate", i / D, i % D, p.rate[i],
                    "must be finite and > 0");
    }
  }

  void check_data(const Part& p, const Dataset& data) const override {
    check_columns(p, data, "finite numbers > 0", [](double v) { return std::isfinite(v) && v > 0.0; });
  }

  double pack(const Part& p, std::size_t k, double* coef) const override {
    const std::size_t D = p.dims();
    double log_norm = 0.0;
    for (std::size_t d = 0; d < D; ++d) {
      const double alpha = p.shape[k * D + d], beta = p.rate[k * D + d];
      coef[d] = alpha - 1.0;  // on log x
      coef[D + d] = beta;     // the kernels add −β·x
      log_norm += alpha * std::log(beta) - kernels::log_gamma(alpha);
    }
    return log_norm;
  }

  void m_step(Part& p, std::size_t k, const double* s, double mass, const double* column_mass, const double*,
              const MStepOptions&) const override {
    const std::size_t D = p.dims();
    for (std::size_t d = 0; d < D; ++d) {
      const double md = column_mass_of(column_mass, d, mass);
      if (is_empty_mass(md)) continue;  // no row of the component observed column d
      const double mean = s[d] / md, mean_log = s[D + d] / md;
      const double alpha = gamma_shape(std::max(std::log(mean) - mean_log, kMinLogGap));
      p.shape[k * D + d] = alpha;
      p.rate[k * D + d] = alpha / mean;
    }
  }

  bool observed_columns() const override { return true; }
  double log_density_column(const Part& p, std::size_t k, std::size_t d, double x) const override {
    const double alpha = p.shape[k * p.dims() + d], beta = p.rate[k * p.dims() + d];
    return alpha * std::log(beta) - kernels::log_gamma(alpha) + (alpha - 1.0) * std::log(x) - beta * x;
  }
  void accumulate_column(const Part& p, std::size_t d, double x, double weight, double, double* stats) const override {
    stats[d] += weight * x;
    stats[p.dims() + d] += weight * std::log(x);
  }

  void sample(const Part& p, std::size_t k, std::mt19937_64& rng, double* row) const override {
    const std::size_t D = p.dims();
    for (std::size_t d = 0; d < D; ++d) {
      std::gamma_distribution<double> dist(p.shape[k * D + d], 1.0 / p.rate[k * D + d]);
      row[p.col_begin + d] = dist(rng);
    }
  }

  // Shapes U(2, 20) and means U(0.5, 20) (rate = shape / mean); perturbed by factors.
  void draw_benchmark_parameters(Part& p, std::size_t K, std::mt19937_64& rng) const override {
    std::uniform_real_distribution<double> shape(2.0, 20.0), mean(0.5, 20.0);
    p.shape.resize(K * p.dims());
    p.rate.resize(K * p.dims());
    for (std::size_t i = 0; i < p.shape.size(); ++i) {
      p.shape[i] = shape(rng);
      p.rate[i] = p.shape[i] / mean(rng);
    }
  }
  void perturb(Part& p, std::mt19937_64& rng) const override {
    scale_by_random_factors(p.shape, rng);
    scale_by_random_factors(p.rate, rng);
  }
};

}  // namespace

const FamilyOps& gamma_ops() {
  static const Gamma ops;
  return ops;
}

}  // namespace mixle::engine
