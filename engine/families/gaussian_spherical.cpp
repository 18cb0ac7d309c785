// gaussian_spherical: normal columns sharing one variance per component (scikit-learn's
// "spherical" covariance); parameters mean K×D, var K.
//   log p(x) = −(D/2) log(2π var) − Σ_d (x_d − mean_d)² / (2 var)
// That is gaussian_diag's density with every column's variance equal, so it packs gaussian_diag's
// coefficients (the variance repeated) and runs gaussian_diag's kernels and statistics,
// Σr(x−s) and Σr(x−s)² per column: no kernel of its own, on the CPU or CUDA. Its M-step pools the
// columns' second moments into one variance, var = mean_d E[(x_d − mean_d)²] + reg_covar.
#include "engine/families/checks.hpp"
#include "engine/families/family_ops.hpp"

#include <algorithm>
#include <cmath>
#include <numbers>

namespace mixle::engine {

const FamilyOps& gaussian_diag_ops();

namespace {

constexpr ParamDescriptor kParams[] = {{"mean", ParamShape::per_column, &Part::mean},
                                       {"var", ParamShape::per_component, &Part::var}};

// gaussian_diag's statistics and work per (row, component, column); D means and one variance.
constexpr FamilyDescriptor kDescriptor{
    .family = Family::gaussian_spherical,
    .name = "gaussian_spherical",
    .summary = "normal columns with one variance per component (mean, var)",
    .params = kParams,
    .statistics = {.per_column = 2},
    .free_parameters = {.per_component = 1, .per_column = 1},
    .flops = {.per_column = 8},
    .shifted = true,
};

class GaussianSpherical final : public FamilyOps {
 public:
  const FamilyDescriptor& descriptor() const override { return kDescriptor; }
  Family kernel_family() const override { return Family::gaussian_diag; }
  int coef_stride(const Part& p) const override { return 2 * static_cast<int>(p.dims()); }

  void resize(Part& p, std::size_t K) const override {
    p.mean.assign(K * p.dims(), 0.0);
    p.var.assign(K, 1.0);
  }

  void validate(const Part& p, std::size_t K, const std::string& where) const override {
    const std::size_t D = p.dims();
    require_size(p.mean, K * D, where, "mean", "K×D");
    require_size(p.var, K, where, "var", "K (one variance per component)");
    for (std::size_t k = 0; k < K; ++k) {
      for (std::size_t d = 0; d < D; ++d)
        require_value(std::isfinite(p.mean[k * D + d]), where, "mean", k, d, p.mean[k * D + d], "must be finite");
      if (!(std::isfinite(p.var[k]) && p.var[k] > 0.0))
        throw InvalidInput(where + ": var[" + std::to_string(k) + "] = " + format_number(p.var[k]) +
                           " is invalid: must be finite and > 0");
    }
  }

  void check_data(const Part& p, const Dataset& data) const override {
    check_columns(p, data, "finite numbers", [](double v) { return std::isfinite(v); });
  }

  // gaussian_diag's coefficients with var_d = var for every column.
  double pack(const Part& p, std::size_t k, double* coef) const override {
    const std::size_t D = p.dims();
    const double v = p.var[k];
    for (std::size_t d = 0; d < D; ++d) {
      coef[d] = p.mean[k * D + d];
      coef[D + d] = -0.5 / v;
    }
    return -0.5 * static_cast<double>(D) * std::log(2.0 * std::numbers::pi * v);
  }

  void shift(const Part& p, std::size_t k, double* out) const override {
    std::copy_n(p.mean.begin() + static_cast<std::ptrdiff_t>(k * p.dims()), p.dims(), out);
  }

  // The variance pools every column's squared deviations over the mass that observed it (with
  // every row complete: the mean of the columns' variances).
  void m_step(Part& p, std::size_t k, const double* s, double mass, const double* column_mass, const double* shift,
              const MStepOptions& o) const override {
    const std::size_t D = p.dims();
    double pooled = 0.0, observed = 0.0;  // Σ_d m_d·E_d[(x_d − mean_d)²], Σ_d m_d
    for (std::size_t d = 0; d < D; ++d) {
      const double md = column_mass_of(column_mass, d, mass);
      if (is_empty_mass(md)) continue;  // no row of the component observed column d
      const double m1 = s[d] / md;      // E[x − shift]
      const double m2 = s[D + d] / md;  // E[(x − shift)²]
      pooled += md * std::max(m2 - m1 * m1, 0.0);
      observed += md;
      p.mean[k * D + d] = (shift ? shift[d] : 0.0) + m1;
    }
    if (!(observed > 0.0)) return;
    p.var[k] = pooled / observed + o.reg_covar;
    if (!(p.var[k] > 0.0))
      throw InvalidInput("gaussian_spherical component " + std::to_string(k) +
                         ": the variance collapsed to 0 (the component's rows are all equal); increase "
                         "--reg-covar (reg_covar, default 1e-6)");
  }

  bool observed_columns() const override { return true; }
  double log_density_column(const Part& p, std::size_t k, std::size_t d, double x) const override {
    const double v = p.var[k], t = x - p.mean[k * p.dims() + d];
    return -0.5 * std::log(2.0 * std::numbers::pi * v) - t * t / (2.0 * v);
  }
  void accumulate_column(const Part& p, std::size_t d, double x, double weight, double shift,
                         double* stats) const override {
    gaussian_diag_ops().accumulate_column(p, d, x, weight, shift, stats);  // the same statistics layout
  }

  void sample(const Part& p, std::size_t k, std::mt19937_64& rng, double* row) const override {
    const std::size_t D = p.dims();
    std::normal_distribution<double> normal(0.0, 1.0);
    const double sd = std::sqrt(p.var[k]);
    for (std::size_t d = 0; d < D; ++d) row[p.col_begin + d] = p.mean[k * D + d] + sd * normal(rng);
  }

  // Centres N(0, 4²), scales U(0.5, 1.5); perturbed by half a scale and a variance factor.
  void draw_benchmark_parameters(Part& p, std::size_t K, std::mt19937_64& rng) const override {
    draw_benchmark_centres(p.mean, K * p.dims(), rng);
    std::uniform_real_distribution<double> scale(0.5, 1.5);
    p.var.resize(K);
    for (auto& v : p.var) {
      const double s = scale(rng);
      v = s * s;
    }
  }
  void perturb(Part& p, std::mt19937_64& rng) const override {
    std::normal_distribution<double> normal(0.0, 1.0);
    std::uniform_real_distribution<double> factor(0.8, 1.25);
    const std::size_t D = p.dims();
    for (std::size_t i = 0; i < p.mean.size(); ++i) p.mean[i] += 0.5 * std::sqrt(p.var[i / D]) * normal(rng);
    for (auto& v : p.var) v *= factor(rng);
  }
};

}  // namespace

const FamilyOps& gaussian_spherical_ops() {
  static const GaussianSpherical ops;
  return ops;
}

}  // namespace mixle::engine
