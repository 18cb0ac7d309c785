// lognormal: positive reals whose logarithms are independent normal columns; parameters the mean
// and variance of log x (K×D each, the model file's "log_mean" and "log_var").
//   log p(x) = Σ_d −log x_d − ½ log(2π var_d) − (log x_d − mean_d)² / (2 var_d)
// Its parameters, packing, shift and M-step are gaussian_diag's applied to log x, so those
// operations are gaussian_diag's; the kernels read log x and add −Σ log x per row.
#include "engine/families/checks.hpp"
#include "engine/families/family_ops.hpp"

#include <cmath>
#include <utility>
#include <vector>

namespace mixle::engine {

const FamilyOps& gaussian_diag_ops();

namespace {

constexpr ParamDescriptor kParams[] = {{"log_mean", ParamShape::per_column, &Part::mean},
                                       {"log_var", ParamShape::per_column, &Part::var}};

// Statistics Σr(log x − s), Σr(log x − s)²; the work model counts gaussian_diag's 8 flops per
// (row, component, column) — the logarithms are once per row, not per component.
constexpr FamilyDescriptor kDescriptor{
    .family = Family::lognormal,
    .name = "lognormal",
    .summary = "positive reals whose logs are normal (log_mean, log_var)",
    .params = kParams,
    .statistics = {.per_column = 2},
    .free_parameters = {.per_column = 2},
    .flops = {.per_column = 8},
    .row_constant = true,  // −Σ log x
    .shifted = true,
};

class Lognormal final : public FamilyOps {
 public:
  const FamilyDescriptor& descriptor() const override { return kDescriptor; }
  int coef_stride(const Part& p) const override { return normal().coef_stride(p); }
  void resize(Part& p, std::size_t K) const override { normal().resize(p, K); }
  void validate(const Part& p, std::size_t K, const std::string& where) const override {
    normal().validate(p, K, where);
  }
  void check_data(const Part& p, const Dataset& data) const override {
    check_columns(p, data, "finite numbers > 0", [](double v) { return std::isfinite(v) && v > 0.0; });
  }
  double pack(const Part& p, std::size_t k, double* coef) const override { return normal().pack(p, k, coef); }
  void shift(const Part& p, std::size_t k, double* out) const override { normal().shift(p, k, out); }
  void m_step(Part& p, std::size_t k, const double* stats, double mass, const double* column_mass, const double* shift,
              const MStepOptions& options) const override {
    normal().m_step(p, k, stats, mass, column_mass, shift, options);
  }
  bool observed_columns() const override { return true; }
  // The normal term of log x, and −log x (the change of variable).
  double log_density_column(const Part& p, std::size_t k, std::size_t d, double x) const override {
    const double y = std::log(x);
    return normal().log_density_column(p, k, d, y) - y;
  }
  void accumulate_column(const Part& p, std::size_t d, double x, double weight, double shift,
                         double* stats) const override {
    normal().accumulate_column(p, d, std::log(x), weight, shift, stats);
  }
  void sample(const Part& p, std::size_t k, std::mt19937_64& rng, double* row) const override {
    normal().sample(p, k, rng, row);
    for (std::size_t c = p.col_begin; c < p.col_end; ++c) row[c] = std::exp(row[c]);
  }
  // Log-scale centres N(0, 1) and spreads U(0.1, 0.5); perturbed as a Gaussian's.
  void draw_benchmark_parameters(Part& p, std::size_t K, std::mt19937_64& rng) const override {
    std::normal_distribution<double> centre(0.0, 1.0);
    std::uniform_real_distribution<double> spread(0.1, 0.5);
    std::vector<double> mean, var;
    for (std::size_t i = 0; i < K * p.dims(); ++i) {
      mean.push_back(centre(rng));
      const double s = spread(rng);
      var.push_back(s * s);
    }
    p.mean = std::move(mean);
    p.var = std::move(var);
  }
  void perturb(Part& p, std::mt19937_64& rng) const override { normal().perturb(p, rng); }

 private:
  static const FamilyOps& normal() { return gaussian_diag_ops(); }
};

}  // namespace

const FamilyOps& lognormal_ops() {
  static const Lognormal ops;
  return ops;
}

}  // namespace mixle::engine
