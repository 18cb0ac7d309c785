// gaussian_tied: multivariate normals that share one covariance (scikit-learn's "tied"
// covariance); parameters mean K×D and cov K×D×D, every component's cov the same matrix (the
// file format stays gaussian_full's, so a tied model reads and scores as any full one).
// That is gaussian_full's density, so it packs gaussian_full's coefficients and runs its kernels
// and statistics, Σr(x−s) and Σr(x−s)(x−s)ᵀ: no kernel of its own, on the CPU or CUDA. Its
// M-step is gaussian_full's per component, then the shared step pools the components'
// covariances weighted by their masses — Σ_k Σ_n r_nk (x_n − μ_k)(x_n − μ_k)ᵀ / Σ_k N_k +
// reg_covar·I, scikit-learn's tied estimate — and gives the pooled matrix to every component.
#include "engine/families/checks.hpp"
#include "engine/families/family_ops.hpp"

#include <algorithm>
#include <cmath>

namespace mixle::engine {

const FamilyOps& gaussian_full_ops();

namespace {

constexpr ParamDescriptor kParams[] = {{"mean", ParamShape::per_column, &Part::mean},
                                       {"cov", ParamShape::per_column_pair, &Part::cov}};

// gaussian_full's statistics and work; free: D means per component, and D(D+1)/2 covariances
// for the whole part (shared_free_parameters).
constexpr FamilyDescriptor kDescriptor{
    .family = Family::gaussian_tied,
    .name = "gaussian_tied",
    .summary = "multivariate normals sharing one covariance (mean, cov: the same matrix for every component)",
    .params = kParams,
    .statistics = {.per_column = 1, .per_column_pair = 1},
    .free_parameters = {.per_column = 1},
    .flops = {.per_column = 4, .per_column_pair = 4},
    .shifted = true,
};

class GaussianTied final : public FamilyOps {
 public:
  const FamilyDescriptor& descriptor() const override { return kDescriptor; }
  Family kernel_family() const override { return Family::gaussian_full; }
  int coef_stride(const Part& p) const override { return full().coef_stride(p); }

  void resize(Part& p, std::size_t K) const override { full().resize(p, K); }

  void validate(const Part& p, std::size_t K, const std::string& where) const override {
    full().validate(p, K, where);
    const std::size_t DD = p.dims() * p.dims();
    for (std::size_t k = 1; k < K; ++k)
      for (std::size_t i = 0; i < DD; ++i)
        if (p.cov[k * DD + i] != p.cov[i])
          throw InvalidInput(where + ": cov[" + std::to_string(k) + "] differs from cov[0] (entry " +
                             std::to_string(i) + ": " + format_number(p.cov[k * DD + i]) + " against " +
                             format_number(p.cov[i]) +
                             "); a gaussian_tied part shares one covariance: give every component the same matrix");
  }

  void check_data(const Part& p, const Dataset& data) const override { full().check_data(p, data); }
  double pack(const Part& p, std::size_t k, double* coef) const override { return full().pack(p, k, coef); }
  void shift(const Part& p, std::size_t k, double* out) const override { full().shift(p, k, out); }

  // Component k's mean and its own covariance (reg_covar on the diagonal); pooled below.
  void m_step(Part& p, std::size_t k, const double* s, double mass, const double* column_mass, const double* shift,
              const MStepOptions& o) const override {
    full().m_step(p, k, s, mass, column_mass, shift, o);
  }

  // Σ_k N_k (S_k/N_k + reg·I) / Σ_k N_k = Σ_k S_k / N + reg·I over the components that captured
  // rows (mass > 0); a component that captured none keeps its mean and takes the pooled matrix.
  void m_step_shared(Part& p, const std::vector<double>& masses, const MStepOptions&) const override {
    const std::size_t DD = p.dims() * p.dims();
    std::vector<double> pooled(DD, 0.0);
    double total = 0.0;
    const double* cov = p.cov.data();  // component k's matrix, as k walks the masses
    for (const double mass : masses) {
      if (mass > 0.0) {
        total += mass;
        for (std::size_t i = 0; i < DD; ++i) pooled[i] += mass * cov[i];
      }
      cov += DD;
    }
    if (!(total > 0.0)) return;
    for (double& v : pooled) v /= total;
    tie_to(p, pooled);
  }

  std::size_t shared_free_parameters(const Part& p) const override { return p.dims() * (p.dims() + 1) / 2; }

  void sample(const Part& p, std::size_t k, std::mt19937_64& rng, double* row) const override {
    full().sample(p, k, rng, row);
  }

  // gaussian_full's recipe, then component 0's covariance for all (perturbed alike).
  void draw_benchmark_parameters(Part& p, std::size_t K, std::mt19937_64& rng) const override {
    full().draw_benchmark_parameters(p, K, rng);
    tie(p);
  }
  void perturb(Part& p, std::mt19937_64& rng) const override {
    full().perturb(p, rng);
    tie(p);
  }

 private:
  static const FamilyOps& full() { return gaussian_full_ops(); }
  // Every component's matrix set to `matrix` (D×D values).
  static void tie_to(Part& p, const std::vector<double>& matrix) {
    for (auto at = p.cov.begin(); at != p.cov.end(); at += static_cast<std::ptrdiff_t>(matrix.size()))
      std::copy(matrix.begin(), matrix.end(), at);
  }
  // Component 0's matrix for every component.
  static void tie(Part& p) { tie_to(p, std::vector<double>(p.cov.begin(), p.cov.begin() + p.dims() * p.dims())); }
};

}  // namespace

const FamilyOps& gaussian_tied_ops() {
  static const GaussianTied ops;
  return ops;
}

}  // namespace mixle::engine
