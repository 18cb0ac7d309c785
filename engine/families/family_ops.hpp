// Per-family operations of the engine: parameter validation, data rules, packing into kernel
// coefficients, the M-step from statistics, sampling. One implementation file per family; the
// kernels live in kernels/cpu/families and kernels/cuda. Layouts: kernels/model_view.hpp.
#pragma once

#include <mixle/data.hpp>
#include <mixle/estimator.hpp>
#include <mixle/family.hpp>
#include <mixle/model.hpp>

#include <cstddef>
#include <cstdint>
#include <random>
#include <string>

namespace mixle::engine {

/// A component (or, when missing values are marginalised, one of its columns) is empty when its
/// responsibility mass is at most this (rows, float64).
constexpr double kEmptyMass = 1e-8;
/// The one test of that rule, used wherever a mass decides between fitting and keeping.
constexpr bool is_empty_mass(double mass) { return mass <= kEmptyMass; }

using mixle::MStepOptions;

class FamilyOps {
 public:
  virtual ~FamilyOps() = default;
  /// The family as data (include/mixle/family.hpp).
  virtual const FamilyDescriptor& descriptor() const = 0;

  /// Size of the packed coefficient block per component.
  virtual int coef_stride(const Part& part) const = 0;
  /// Size of the statistics block per component (the descriptor's statistics rule).
  int stat_stride(const Part& part) const {
    return static_cast<int>(descriptor().statistics.count(static_cast<std::int64_t>(part.dims()),
                                                          static_cast<std::int64_t>(part.categories)));
  }
  /// Whether statistics are accumulated about a per-component shift (Gaussian families).
  bool shifted() const { return descriptor().shifted; }
  /// The family whose kernels evaluate this one: its own, or a family whose coefficients and
  /// statistics it packs and reads (gaussian_spherical runs gaussian_diag's), so that it needs
  /// no kernel of its own, on the CPU or CUDA.
  virtual Family kernel_family() const { return descriptor().family; }

  /// Sizes the parameter arrays for K components, each a valid default component (Gaussians:
  /// zero mean, unit variance; rates, shapes: 1; categories: uniform). A component that captures
  /// no row at initialisation keeps these values, with weight 0.
  virtual void resize(Part& part, std::size_t K) const = 0;
  /// Checks shapes and values of component parameters; `where` prefixes messages
  /// (e.g. "model.json: parts[1]"). Throws InvalidInput naming the field, component and value.
  virtual void validate(const Part& part, std::size_t K, const std::string& where) const = 0;
  /// Checks the part's columns of `data` obey the family's value rules; throws InvalidInput
  /// naming the file, row and column.
  virtual void check_data(const Part& part, const Dataset& data) const = 0;

  /// Writes component k's coefficients (coef_stride values) and returns its x-independent
  /// log-density terms (added to log_const[k]).
  virtual double pack(const Part& part, std::size_t k, double* coef) const = 0;
  /// Component k's shift (D values), for shifted families.
  virtual void shift(const Part& part, std::size_t k, double* out) const {}

  /// M-step for component k from its statistics block, its responsibility mass and the shift
  /// used when accumulating (null for unshifted families or when the shift was 0).
  /// `column_mass` (D values, or null when every row was complete) is each column's own mass
  /// when missing values were left out (observed_columns): a column's parameters come from the
  /// rows that observed it, and a column no row of the component observed (mass ≤ kEmptyMass)
  /// keeps its parameters.
  virtual void m_step(Part& part, std::size_t k, const double* stats, double mass, const double* column_mass,
                      const double* shift, const MStepOptions& options) const = 0;

  /// Whether a component's log-density is a sum of per-column terms and its statistics per-column
  /// sums, so that a missing value can be left out of both (`--missing marginalise`): then
  /// log_density_column and accumulate_column below are implemented.
  virtual bool observed_columns() const { return false; }
  /// Column d's term of component k's log-density at value x (float64, normalising terms
  /// included: Σ_d of it is log p(x | k)).
  virtual double log_density_column(const Part& part, std::size_t k, std::size_t d, double x) const;
  /// Adds weight·(column d's statistics at x) to component k's statistics block `stats`, moments
  /// about `shift` (column d's shift; 0 for unshifted families).
  virtual void accumulate_column(const Part& part, std::size_t d, double x, double weight, double shift,
                                 double* stats) const;

  /// After every component's m_step (the components that captured no row skipped, masses[k]
  /// 0): the parameters its components share, from all of them (gaussian_tied's pooled
  /// covariance). Families without shared parameters do nothing. A family that has them cannot
  /// be split over component shards (shares_parameters).
  virtual void m_step_shared(Part& part, const std::vector<double>& masses, const MStepOptions& options) const {}
  /// Parameters the part's components share: counted once, beside free_parameters' per-component ones.
  virtual std::size_t shared_free_parameters(const Part& part) const { return 0; }
  bool shares_parameters(const Part& part) const { return shared_free_parameters(part) > 0; }

  /// Free parameters per component (for BIC/AIC; the descriptor's rule).
  std::size_t free_parameters(const Part& part) const {
    return static_cast<std::size_t>(descriptor().free_parameters.count(static_cast<std::int64_t>(part.dims()),
                                                                       static_cast<std::int64_t>(part.categories)));
  }

  /// Draws the part's columns of one row from component k into row[col_begin, col_end).
  virtual void sample(const Part& part, std::size_t k, std::mt19937_64& rng, double* row) const = 0;

  /// The benchmark's recipe (host/bench/case.cpp): sizes the part's parameters for K components
  /// and draws well-separated values (categories already set for families that have them) …
  virtual void draw_benchmark_parameters(Part& part, std::size_t K, std::mt19937_64& rng) const = 0;
  /// … and moves every parameter by a fraction of its scale: the benchmark evaluates a model
  /// near, not at, the one that generated the data.
  virtual void perturb(Part& part, std::mt19937_64& rng) const = 0;
};

/// column_mass[d] when a fit left missing values out, else the component's `mass`.
inline double column_mass_of(const double* column_mass, std::size_t d, double mass) {
  return column_mass ? column_mass[d] : mass;
}

/// The scale of the benchmark's Gaussian means, kBenchmarkCentreScale·N(0, 1) per dimension.
inline constexpr double kBenchmarkCentreScale = 4.0;

/// Centres N(0, 4²) — the recipe of the scikit-learn anchor for the Gaussian families.
inline void draw_benchmark_centres(std::vector<double>& mean, std::size_t n, std::mt19937_64& rng) {
  std::normal_distribution<double> normal(0.0, 1.0);
  mean.resize(n);
  for (auto& m : mean) m = kBenchmarkCentreScale * normal(rng);
}

/// Multiplies every value by a factor drawn from U(0.8, 1.25).
inline void scale_by_random_factors(std::vector<double>& values, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> factor(0.8, 1.25);
  for (auto& v : values) v *= factor(rng);
}

/// The operations of `family` (a static instance).
const FamilyOps& family_ops(Family family);

}  // namespace mixle::engine
