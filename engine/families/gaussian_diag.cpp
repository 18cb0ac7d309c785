// gaussian_diag: independent normal columns; parameters mean K×D, var K×D. lognormal runs its
// parameters (those of log x) through these operations too (engine/families/lognormal.cpp).
#include "engine/families/checks.hpp"
#include "engine/families/family_ops.hpp"

#include <algorithm>
#include <cmath>
#include <numbers>

namespace mixle::engine {
namespace {

constexpr ParamDescriptor kParams[] = {{"mean", ParamShape::per_column, &Part::mean},
                                       {"var", ParamShape::per_column, &Part::var}};

// Statistics Σr(x−s), Σr(x−s)²; E 4 flops and M 4 flops per (row, component, column).
constexpr FamilyDescriptor kDescriptor{
    .family = Family::gaussian_diag,
    .name = "gaussian_diag",
    .summary = "independent normal columns (mean, var)",
    .params = kParams,
    .statistics = {.per_column = 2},
    .free_parameters = {.per_column = 2},
    .flops = {.per_column = 8},
    .shifted = true,
};

class GaussianDiag final : public FamilyOps {
 public:
  const FamilyDescriptor& descriptor() const override { return kDescriptor; }
  int coef_stride(const Part& p) const override { return 2 * static_cast<int>(p.dims()); }

  void resize(Part& p, std::size_t K) const override {
    p.mean.assign(K * p.dims(), 0.0);
    p.var.assign(K * p.dims(), 1.0);
  }

  void validate(const Part& p, std::size_t K, const std::string& where) const override {
    // The fields as the part's family names them (lognormal's are "log_mean" and "log_var").
    const auto params = family_descriptor(p.family).params;
    const char* mean = params[0].name;
    const char* var = params[1].name;
    const std::size_t D = p.dims();
    require_size(p.mean, K * D, where, mean, "K×D");
    require_size(p.var, K * D, where, var, "K×D");
    for (std::size_t k = 0; k < K; ++k)
      for (std::size_t d = 0; d < D; ++d) {
        require_value(std::isfinite(p.mean[k * D + d]), where, mean, k, d, p.mean[k * D + d], "must be finite");
        const double v = p.var[k * D + d];
        require_value(std::isfinite(v) && v > 0.0, where, var, k, d, v, "must be finite and > 0");
      }
  }

  void check_data(const Part& p, const Dataset& data) const override {
    check_columns(p, data, "finite numbers", [](double v) { return std::isfinite(v); });
  }

  double pack(const Part& p, std::size_t k, double* coef) const override {
    const std::size_t D = p.dims();
    double log_norm = 0.0;
    for (std::size_t d = 0; d < D; ++d) {
      const double v = p.var[k * D + d];
      coef[d] = p.mean[k * D + d];
      coef[D + d] = -0.5 / v;
      log_norm -= 0.5 * std::log(2.0 * std::numbers::pi * v);
    }
    return log_norm;
  }

  void shift(const Part& p, std::size_t k, double* out) const override {
    std::copy_n(p.mean.begin() + k * p.dims(), p.dims(), out);
  }

  void m_step(Part& p, std::size_t k, const double* s, double mass, const double* column_mass, const double* shift,
              const MStepOptions& o) const override {
    const std::size_t D = p.dims();
    for (std::size_t d = 0; d < D; ++d) {
      const double md = column_mass_of(column_mass, d, mass);
      if (is_empty_mass(md)) continue;  // no row of the component observed column d
      const double m1 = s[d] / md;      // E[x − shift]
      const double m2 = s[D + d] / md;  // E[(x − shift)²]
      const double var = std::max(m2 - m1 * m1, 0.0);
      p.mean[k * D + d] = (shift ? shift[d] : 0.0) + m1;
      p.var[k * D + d] = var + o.reg_covar;
      // With reg_covar = 0 a column whose rows in this component are all equal gives variance
      // 0: an invalid model whose log-density is NaN/∞. Stop with the remedy, as
      // gaussian_full does for a singular covariance (and scikit-learn for both).
      if (!(p.var[k * D + d] > 0.0))
        throw InvalidInput(std::string(family_name(p.family)) + " component " + std::to_string(k) + ", column " +
                           std::to_string(p.col_begin + d) +
                           ": the variance collapsed to 0 (the component's rows are all equal "
                           "there); increase --reg-covar (reg_covar, default 1e-6)");
    }
  }

  bool observed_columns() const override { return true; }
  // lognormal's term adds −log x itself (engine/families/lognormal.cpp).
  double log_density_column(const Part& p, std::size_t k, std::size_t d, double x) const override {
    const double v = p.var[k * p.dims() + d], t = x - p.mean[k * p.dims() + d];
    return -0.5 * std::log(2.0 * std::numbers::pi * v) - t * t / (2.0 * v);
  }
  void accumulate_column(const Part& p, std::size_t d, double x, double weight, double shift,
                         double* stats) const override {
    const double t = x - shift;
    stats[d] += weight * t;
    stats[p.dims() + d] += weight * t * t;
  }

  void sample(const Part& p, std::size_t k, std::mt19937_64& rng, double* row) const override {
    const std::size_t D = p.dims();
    std::normal_distribution<double> normal(0.0, 1.0);
    for (std::size_t d = 0; d < D; ++d)
      row[p.col_begin + d] = p.mean[k * D + d] + std::sqrt(p.var[k * D + d]) * normal(rng);
  }

  // Centres N(0, 4²), scales U(0.5, 1.5); perturbed by half a scale and a variance factor.
  void draw_benchmark_parameters(Part& p, std::size_t K, std::mt19937_64& rng) const override {
    draw_benchmark_centres(p.mean, K * p.dims(), rng);
    std::uniform_real_distribution<double> scale(0.5, 1.5);
    p.var.resize(K * p.dims());
    for (auto& v : p.var) {
      const double s = scale(rng);
      v = s * s;
    }
  }
  void perturb(Part& p, std::mt19937_64& rng) const override {
    std::normal_distribution<double> normal(0.0, 1.0);
    std::uniform_real_distribution<double> factor(0.8, 1.25);
    for (std::size_t i = 0; i < p.mean.size(); ++i) {
      p.mean[i] += 0.5 * std::sqrt(p.var[i]) * normal(rng);
      p.var[i] *= factor(rng);
    }
  }
};

}  // namespace

const FamilyOps& gaussian_diag_ops() {
  static const GaussianDiag ops;
  return ops;
}

}  // namespace mixle::engine
