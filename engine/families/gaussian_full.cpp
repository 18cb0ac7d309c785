// gaussian_full: multivariate normal over the part's columns; parameters mean K×D, cov K×D×D.
// Log-densities use P = C⁻¹ where cov = C Cᵀ (Cholesky); log det cov = 2 Σ log C_ii.
#include "engine/families/checks.hpp"
#include "engine/families/family_ops.hpp"
#include "engine/linalg.hpp"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <vector>

namespace mixle::engine {
namespace {

constexpr ParamDescriptor kParams[] = {{"mean", ParamShape::per_column, &Part::mean},
                                       {"cov", ParamShape::per_column_pair, &Part::cov}};

// Statistics Σr(x−s) [D], Σr(x−s)(x−s)ᵀ [D×D]; free: D means + D(D+1)/2 covariances; the work
// model counts the dense products (E 2D² + 2D, M 2D² + 2D per row and component).
constexpr FamilyDescriptor kDescriptor{
    .family = Family::gaussian_full,
    .name = "gaussian_full",
    .summary = "a multivariate normal over the part's columns (mean, cov)",
    .params = kParams,
    .statistics = {.per_column = 1, .per_column_pair = 1},
    .free_parameters = {.per_column = 3, .per_column_pair = 1, .divisor = 2},
    .flops = {.per_column = 4, .per_column_pair = 4},
    .shifted = true,
};

class GaussianFull final : public FamilyOps {
 public:
  const FamilyDescriptor& descriptor() const override { return kDescriptor; }
  int coef_stride(const Part& p) const override {
    const int D = static_cast<int>(p.dims());
    return D + D * D;
  }

  void resize(Part& p, std::size_t K) const override {
    const std::size_t D = p.dims();
    p.mean.assign(K * D, 0.0);
    p.cov.assign(K * D * D, 0.0);
    for (std::size_t k = 0; k < K; ++k)
      for (std::size_t d = 0; d < D; ++d) p.cov[k * D * D + d * D + d] = 1.0;
  }

  void validate(const Part& p, std::size_t K, const std::string& where) const override {
    const std::size_t D = p.dims();
    require_size(p.mean, K * D, where, "mean", "K×D");
    require_size(p.cov, K * D * D, where, "cov", "K×D×D");
    std::vector<double> a(D * D);
    for (std::size_t k = 0; k < K; ++k) {
      for (std::size_t d = 0; d < D; ++d)
        require_value(std::isfinite(p.mean[k * D + d]), where, "mean", k, d, p.mean[k * D + d], "must be finite");
      const double* c = p.cov.data() + k * D * D;
      for (std::size_t i = 0; i < D; ++i)
        for (std::size_t j = 0; j < D; ++j) {
          const double v = c[i * D + j], w = c[j * D + i];
          require_value(std::isfinite(v), where, "cov", k, i * D + j, v, "must be finite");
          const double tol = 1e-9 * std::max({1.0, std::abs(v), std::abs(w)});
          require_value(std::abs(v - w) <= tol, where, "cov", k, i * D + j, v,
                        "the covariance must be symmetric (cov[k][i][j] == cov[k][j][i])");
        }
      std::copy_n(c, D * D, a.begin());
      if (!cholesky(a.data(), D))
        throw InvalidInput(where + ": cov[" + std::to_string(k) +
                           "] is not positive definite (its Cholesky factorisation fails); "
                           "a covariance must be symmetric positive definite");
    }
  }

  void check_data(const Part& p, const Dataset& data) const override {
    check_columns(p, data, "finite numbers", [](double v) { return std::isfinite(v); });
  }

  double pack(const Part& p, std::size_t k, double* coef) const override {
    const std::size_t D = p.dims();
    std::vector<double> L(p.cov.begin() + k * D * D, p.cov.begin() + (k + 1) * D * D);
    if (!cholesky(L.data(), D))
      throw InvalidInput("gaussian_full component " + std::to_string(k) +
                         ": covariance is not positive definite; increase --reg-covar");
    std::copy_n(p.mean.begin() + k * D, D, coef);
    invert_lower(L.data(), coef + D, D);
    double log_norm = -0.5 * static_cast<double>(D) * std::log(2.0 * std::numbers::pi);
    for (std::size_t d = 0; d < D; ++d) log_norm -= std::log(L[d * D + d]);
    return log_norm;
  }

  void shift(const Part& p, std::size_t k, double* out) const override {
    std::copy_n(p.mean.begin() + k * p.dims(), p.dims(), out);
  }

  void m_step(Part& p, std::size_t k, const double* s, double mass, const double*, const double* shift,
              const MStepOptions& o) const override {
    const std::size_t D = p.dims();
    std::vector<double> m1(D);
    for (std::size_t d = 0; d < D; ++d) {
      m1[d] = s[d] / mass;
      p.mean[k * D + d] = (shift ? shift[d] : 0.0) + m1[d];
    }
    double* c = p.cov.data() + k * D * D;
    const double* s2 = s + D;
    for (std::size_t i = 0; i < D; ++i)
      for (std::size_t j = 0; j <= i; ++j) {
        // Average the two accumulated halves so the result is exactly symmetric.
        const double second = 0.5 * (s2[i * D + j] + s2[j * D + i]) / mass;
        double v = second - m1[i] * m1[j];
        if (i == j) v = std::max(v, 0.0) + o.reg_covar;
        c[i * D + j] = v;
        c[j * D + i] = v;
      }
  }

  void sample(const Part& p, std::size_t k, std::mt19937_64& rng, double* row) const override {
    const std::size_t D = p.dims();
    std::vector<double> L(p.cov.begin() + k * D * D, p.cov.begin() + (k + 1) * D * D), z(D);
    cholesky(L.data(), D);
    std::normal_distribution<double> normal(0.0, 1.0);
    for (auto& v : z) v = normal(rng);
    for (std::size_t i = 0; i < D; ++i) {
      double v = p.mean[k * D + i];
      for (std::size_t j = 0; j <= i; ++j) v += L[i * D + j] * z[j];
      row[p.col_begin + i] = v;
    }
  }

  // Centres N(0, 4²); Σ = diag(s²) + A·Aᵀ/(2D) with s ~ U(0.5, 1.5) and A standard normal:
  // positive definite, with correlations of moderate size. Perturbed by half a standard
  // deviation per mean and one covariance factor per component (keeping Σ positive definite).
  void draw_benchmark_parameters(Part& p, std::size_t K, std::mt19937_64& rng) const override {
    const std::size_t D = p.dims();
    draw_benchmark_centres(p.mean, K * D, rng);
    std::normal_distribution<double> normal(0.0, 1.0);
    std::uniform_real_distribution<double> scale(0.5, 1.5);
    p.cov.resize(K * D * D);  // every entry is written below
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
      for (std::size_t i = 0; i < D; ++i) {
        const double s = scale(rng);
        S[i * D + i] += s * s;
      }
    }
  }
  void perturb(Part& p, std::mt19937_64& rng) const override {
    const std::size_t D = p.dims(), K = p.mean.size() / D;
    std::normal_distribution<double> normal(0.0, 1.0);
    std::uniform_real_distribution<double> factor(0.8, 1.25);
    for (std::size_t k = 0; k < K; ++k) {
      const double f = factor(rng);
      for (std::size_t d = 0; d < D; ++d)
        p.mean[k * D + d] += 0.5 * std::sqrt(p.cov[k * D * D + d * D + d]) * normal(rng);
      for (std::size_t i = 0; i < D * D; ++i) p.cov[k * D * D + i] *= f;
    }
  }
};

}  // namespace

const FamilyOps& gaussian_full_ops() {
  static const GaussianFull ops;
  return ops;
}

}  // namespace mixle::engine
