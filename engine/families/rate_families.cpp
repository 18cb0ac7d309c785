// poisson (counts; rate K×D), exponential (x ≥ 0; rate K×D) and bernoulli (0/1; prob K×D).
// All three keep one statistic per column: Σ r x.
#include "engine/families/checks.hpp"
#include "engine/families/family_ops.hpp"
#include "kernels/common/math.hpp"

#include <algorithm>
#include <cmath>

namespace mixle::engine {
namespace {

constexpr ParamDescriptor kRate[] = {{"rate", ParamShape::per_column, &Part::rate}};
constexpr ParamDescriptor kProb[] = {{"prob", ParamShape::per_column, &Part::prob}};

// One value per column: the statistic Σr x, one free parameter, E 2 and M 2 flops per
// (row, component, column).
constexpr FamilyDescriptor kPoisson{
    .family = Family::poisson,
    .name = "poisson",
    .summary = "non-negative integer counts (rate)",
    .params = kRate,
    .statistics = {.per_column = 1},
    .free_parameters = {.per_column = 1},
    .flops = {.per_column = 4},
    .discrete = true,
    .row_constant = true,  // −log x!
};

constexpr FamilyDescriptor kExponential{
    .family = Family::exponential,
    .name = "exponential",
    .summary = "non-negative reals (rate)",
    .params = kRate,
    .statistics = {.per_column = 1},
    .free_parameters = {.per_column = 1},
    .flops = {.per_column = 4},
};

constexpr FamilyDescriptor kBernoulli{
    .family = Family::bernoulli,
    .name = "bernoulli",
    .summary = "0/1 outcomes (prob of 1)",
    .params = kProb,
    .statistics = {.per_column = 1},
    .free_parameters = {.per_column = 1},
    .flops = {.per_column = 4},
    .discrete = true,
    .log_probabilities = true,
};

/// What poisson and exponential share: one positive rate per (component, column).
class PositiveRate : public FamilyOps {
 public:
  int coef_stride(const Part& p) const override { return static_cast<int>(p.dims()); }
  void resize(Part& p, std::size_t K) const override { p.rate.assign(K * p.dims(), 1.0); }
  void perturb(Part& p, std::mt19937_64& rng) const override { scale_by_random_factors(p.rate, rng); }
  void validate(const Part& p, std::size_t K, const std::string& where) const override {
    require_size(p.rate, K * p.dims(), where, "rate", "K×D");
    for (std::size_t i = 0; i < p.rate.size(); ++i)
      require_value(std::isfinite(p.rate[i]) && p.rate[i] > 0.0, where, "rate", i / p.dims(), i % p.dims(), p.rate[i],
                    "must be finite and > 0");
  }
  bool observed_columns() const override { return true; }
  void accumulate_column(const Part& p, std::size_t d, double x, double weight, double, double* stats) const override {
    stats[d] += weight * x;
  }
};

class Poisson final : public PositiveRate {
 public:
  const FamilyDescriptor& descriptor() const override { return kPoisson; }
  void check_data(const Part& p, const Dataset& data) const override {
    check_columns(p, data, "non-negative integer counts", [](double v) { return is_integer(v) && v >= 0.0; });
  }
  double pack(const Part& p, std::size_t k, double* coef) const override {
    const std::size_t D = p.dims();
    double c = 0.0;
    for (std::size_t d = 0; d < D; ++d) {
      coef[d] = std::log(p.rate[k * D + d]);
      c -= p.rate[k * D + d];
    }
    return c;
  }
  void m_step(Part& p, std::size_t k, const double* s, double mass, const double* column_mass, const double*,
              const MStepOptions& o) const override {
    for (std::size_t d = 0; d < p.dims(); ++d) {
      const double md = column_mass_of(column_mass, d, mass);
      if (!is_empty_mass(md)) p.rate[k * p.dims() + d] = std::max(s[d] / md, o.rate_floor);
    }
  }
  double log_density_column(const Part& p, std::size_t k, std::size_t d, double x) const override {
    const double rate = p.rate[k * p.dims() + d];
    return x * std::log(rate) - rate + kernels::neg_log_factorial(x);
  }
  void sample(const Part& p, std::size_t k, std::mt19937_64& rng, double* row) const override {
    for (std::size_t d = 0; d < p.dims(); ++d) {
      std::poisson_distribution<long long> dist(p.rate[k * p.dims() + d]);
      row[p.col_begin + d] = static_cast<double>(dist(rng));
    }
  }
  void draw_benchmark_parameters(Part& p, std::size_t K, std::mt19937_64& rng) const override {
    std::uniform_real_distribution<double> rate(1.0, 20.0);
    p.rate.resize(K * p.dims());
    for (auto& r : p.rate) r = rate(rng);
  }
};

class Exponential final : public PositiveRate {
 public:
  const FamilyDescriptor& descriptor() const override { return kExponential; }
  void check_data(const Part& p, const Dataset& data) const override {
    check_columns(p, data, "finite numbers ≥ 0", [](double v) { return std::isfinite(v) && v >= 0.0; });
  }
  double pack(const Part& p, std::size_t k, double* coef) const override {
    const std::size_t D = p.dims();
    double c = 0.0;
    for (std::size_t d = 0; d < D; ++d) {
      coef[d] = p.rate[k * D + d];
      c += std::log(p.rate[k * D + d]);
    }
    return c;
  }
  void m_step(Part& p, std::size_t k, const double* s, double mass, const double* column_mass, const double*,
              const MStepOptions& o) const override {
    for (std::size_t d = 0; d < p.dims(); ++d) {
      const double md = column_mass_of(column_mass, d, mass);
      if (!is_empty_mass(md)) p.rate[k * p.dims() + d] = 1.0 / std::max(s[d] / md, o.rate_floor);
    }
  }
  double log_density_column(const Part& p, std::size_t k, std::size_t d, double x) const override {
    const double rate = p.rate[k * p.dims() + d];
    return std::log(rate) - rate * x;
  }
  void sample(const Part& p, std::size_t k, std::mt19937_64& rng, double* row) const override {
    for (std::size_t d = 0; d < p.dims(); ++d) {
      std::exponential_distribution<double> dist(p.rate[k * p.dims() + d]);
      row[p.col_begin + d] = dist(rng);
    }
  }
  void draw_benchmark_parameters(Part& p, std::size_t K, std::mt19937_64& rng) const override {
    std::uniform_real_distribution<double> rate(0.2, 5.0);
    p.rate.resize(K * p.dims());
    for (auto& r : p.rate) r = rate(rng);
  }
};

class Bernoulli final : public FamilyOps {
 public:
  const FamilyDescriptor& descriptor() const override { return kBernoulli; }
  int coef_stride(const Part& p) const override { return 2 * static_cast<int>(p.dims()); }
  void resize(Part& p, std::size_t K) const override { p.prob.assign(K * p.dims(), 0.5); }
  void validate(const Part& p, std::size_t K, const std::string& where) const override {
    require_size(p.prob, K * p.dims(), where, "prob", "K×D");
    for (std::size_t i = 0; i < p.prob.size(); ++i)
      require_value(std::isfinite(p.prob[i]) && p.prob[i] >= 0.0 && p.prob[i] <= 1.0, where, "prob", i / p.dims(),
                    i % p.dims(), p.prob[i], "must be in [0, 1]");
  }
  void check_data(const Part& p, const Dataset& data) const override {
    check_columns(p, data, "0 or 1", [](double v) { return v == 0.0 || v == 1.0; });
  }
  double pack(const Part& p, std::size_t k, double* coef) const override {
    const std::size_t D = p.dims();
    for (std::size_t d = 0; d < D; ++d) {
      const double q = p.prob[k * D + d];
      coef[d] = std::log(q);  // −inf when q = 0: the kernel selects, never multiplies
      coef[D + d] = std::log1p(-q);
    }
    return 0.0;
  }
  void m_step(Part& p, std::size_t k, const double* s, double mass, const double* column_mass, const double*,
              const MStepOptions& o) const override {
    for (std::size_t d = 0; d < p.dims(); ++d) {
      const double md = column_mass_of(column_mass, d, mass);
      if (!is_empty_mass(md)) p.prob[k * p.dims() + d] = (s[d] + o.pseudo_count) / (md + 2.0 * o.pseudo_count);
    }
  }
  bool observed_columns() const override { return true; }
  double log_density_column(const Part& p, std::size_t k, std::size_t d, double x) const override {
    const double q = p.prob[k * p.dims() + d];
    return x != 0.0 ? std::log(q) : std::log1p(-q);  // selects, as the kernels do: q may be 0 or 1
  }
  void accumulate_column(const Part& p, std::size_t d, double x, double weight, double, double* stats) const override {
    stats[d] += weight * x;
  }
  void sample(const Part& p, std::size_t k, std::mt19937_64& rng, double* row) const override {
    std::uniform_real_distribution<double> u(0.0, 1.0);
    for (std::size_t d = 0; d < p.dims(); ++d) row[p.col_begin + d] = u(rng) < p.prob[k * p.dims() + d] ? 1.0 : 0.0;
  }
  void draw_benchmark_parameters(Part& p, std::size_t K, std::mt19937_64& rng) const override {
    std::uniform_real_distribution<double> prob(0.05, 0.95);
    p.prob.resize(K * p.dims());
    for (auto& q : p.prob) q = prob(rng);
  }
  void perturb(Part& p, std::mt19937_64& rng) const override {
    std::normal_distribution<double> normal(0.0, 1.0);
    for (auto& q : p.prob) q = std::clamp(q + 0.05 * normal(rng), 0.02, 0.98);
  }
};

}  // namespace

const FamilyOps& poisson_ops() {
  static const Poisson ops;
  return ops;
}
const FamilyOps& exponential_ops() {
  static const Exponential ops;
  return ops;
}
const FamilyOps& bernoulli_ops() {
  static const Bernoulli ops;
  return ops;
}

}  // namespace mixle::engine
