// Random models, sampled data and the CPU-vs-CUDA comparison (see kernel_compare.hpp).
#include "common/kernel_compare.hpp"

#include <algorithm>
#include <cstdio>

namespace mixle::test {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

/// Lower Cholesky factor of a D×D SPD matrix (row-major), for sampling.
std::vector<double> cholesky(const double* a, std::size_t D) {
  std::vector<double> l(D * D, 0.0);
  for (std::size_t i = 0; i < D; ++i)
    for (std::size_t j = 0; j <= i; ++j) {
      double s = a[i * D + j];
      for (std::size_t p = 0; p < j; ++p) s -= l[i * D + p] * l[j * D + p];
      l[i * D + j] = i == j ? std::sqrt(s) : s / l[j * D + j];
    }
  return l;
}

/// The statistic terms term_j(x) of one component's block (kernels/model_view.hpp layout),
/// as absolute values, for the error bound.
void abs_terms(const Part& part, const double* x, const double* shift, std::vector<double>& out) {
  const std::size_t D = part.dims();
  switch (part.family) {
    case Family::gaussian_diag:
    case Family::gaussian_spherical:  // gaussian_diag's statistics
      out.resize(2 * D);
      for (std::size_t d = 0; d < D; ++d) {
        const double t = std::abs(x[d] - shift[d]);
        out[d] = t, out[D + d] = t * t;
      }
      break;
    case Family::gaussian_full:
    case Family::gaussian_tied:  // gaussian_full's statistics
      out.resize(D + D * D);
      for (std::size_t i = 0; i < D; ++i) out[i] = std::abs(x[i] - shift[i]);
      for (std::size_t i = 0; i < D; ++i)
        for (std::size_t j = 0; j < D; ++j) out[D + i * D + j] = out[i] * out[j];
      break;
    case Family::categorical:
      out.assign(D * part.categories, 0.0);
      for (std::size_t d = 0; d < D; ++d) out[d * part.categories + static_cast<std::size_t>(x[d])] = 1.0;
      break;
    case Family::gamma:
      out.resize(2 * D);
      for (std::size_t d = 0; d < D; ++d) out[d] = std::abs(x[d]), out[D + d] = std::abs(std::log(x[d]));
      break;
    case Family::lognormal:
      out.resize(2 * D);
      for (std::size_t d = 0; d < D; ++d) {
        const double t = std::abs(std::log(x[d]) - shift[d]);
        out[d] = t, out[D + d] = t * t;
      }
      break;
    default:
      out.resize(D);
      for (std::size_t d = 0; d < D; ++d) out[d] = std::abs(x[d]);
  }
}

Dataset make_dataset(const std::vector<double>& values, std::size_t rows, std::size_t cols, DType dtype) {
  if (dtype == DType::f64) return Dataset::from_vector(values, rows, cols);
  return Dataset::from_vector(std::vector<float>(values.begin(), values.end()), rows, cols);
}

/// Baseline statistics: non-zero, so that accumulate must add rather than overwrite.
std::vector<double> baseline(std::int64_t size) {
  std::vector<double> s(static_cast<std::size_t>(size));
  for (std::size_t j = 0; j < s.size(); ++j) s[j] = 0.25 * static_cast<double>(j % 7);
  return s;
}

void expect_same_report(const kernels::PassReport& a, const kernels::PassReport& b) {
  EXPECT_EQ(a.impossible_rows, b.impossible_rows);
  EXPECT_EQ(a.nan_rows, b.nan_rows);
  ASSERT_EQ(a.num_listed, b.num_listed);
  for (int i = 0; i < a.num_listed; ++i) EXPECT_EQ(a.listed[i], b.listed[i]);
}

/// Checks `got` against `want` (both baseline + a pass) with the bound described in the header;
/// r_abs_err[n*K+k] = |Δr| (+ tol.sum·r) per row and component.
void check_statistics(const Model& model, const std::vector<double>& values, std::size_t rows,
                      const std::vector<double>& weight, const engine::ShiftTable& shifts,
                      const std::vector<double>& want, const std::vector<double>& got, double loglik_bound) {
  ASSERT_EQ(want.size(), got.size());
  EXPECT_NEAR(got[0], want[0], loglik_bound) << "Σ log-likelihood";
  EXPECT_EQ(got[1], want[1]) << "rows folded in";
  check_component_statistics(model, values, rows, weight, shifts, want, got);
}

}  // namespace

void check_component_statistics(const Model& model, const std::vector<double>& values, std::size_t rows,
                                const std::vector<double>& weight, const engine::ShiftTable& shifts,
                                const std::vector<double>& want, const std::vector<double>& got) {
  const std::size_t K = model.components();
  const std::size_t C = model.columns();
  const engine::StatLayout layout = engine::stat_layout(model);
  ASSERT_EQ(want.size(), got.size());
  std::vector<double> mass_bound(K, 0.0);
  for (std::size_t n = 0; n < rows; ++n)
    for (std::size_t k = 0; k < K; ++k) mass_bound[k] += weight[n * K + k];
  for (std::size_t k = 0; k < K; ++k)
    EXPECT_NEAR(got[kernels::kStatHeader + k], want[kernels::kStatHeader + k], 2 * mass_bound[k] + 1e-300)
        << "mass of component " << k;
  std::vector<double> terms, bound;
  for (std::size_t p = 0; p < model.parts.size(); ++p) {
    const Part& part = model.parts[p];
    const std::size_t stride = static_cast<std::size_t>(layout.part_stride[p]);
    for (std::size_t k = 0; k < K; ++k) {
      const double* shift =
          shifts.part_offset[p] >= 0 ? shifts.values.data() + shifts.part_offset[p] + k * part.dims() : nullptr;
      std::vector<double> zero(part.dims(), 0.0);
      bound.assign(stride, 0.0);
      for (std::size_t n = 0; n < rows; ++n) {
        const double w = weight[n * K + k];
        if (w == 0.0) continue;
        abs_terms(part, values.data() + n * C + part.col_begin, shift ? shift : zero.data(), terms);
        for (std::size_t j = 0; j < stride; ++j) bound[j] += w * terms[j];
      }
      const std::size_t off = static_cast<std::size_t>(layout.part_offset[p]) + k * stride;
      int reported = 0;
      for (std::size_t j = 0; j < stride; ++j) {
        const double diff = std::abs(got[off + j] - want[off + j]);
        if (!(diff <= 2 * bound[j] + 1e-300) && reported++ < 5)
          ADD_FAILURE() << family_name(part.family) << " part " << p << " component " << k << " entry " << j
                        << ": candidate " << got[off + j] << " oracle " << want[off + j] << " |Δ| " << diff
                        << " > bound " << 2 * bound[j];
      }
    }
  }
}

Part random_part(Family family, std::size_t K, std::size_t D, std::size_t col, std::mt19937_64& rng, std::size_t V) {
  std::uniform_real_distribution<double> u(0.0, 1.0);
  Part p;
  p.family = family;
  p.col_begin = col;
  p.col_end = col + D;
  switch (family) {
    case Family::gaussian_diag:
      p.mean.resize(K * D), p.var.resize(K * D);
      for (double& m : p.mean) m = -3.0 + 6.0 * u(rng);
      for (double& v : p.var) v = 0.5 + 1.5 * u(rng);
      break;
    case Family::gaussian_full:
    case Family::gaussian_tied: {  // tied: component 0's matrix for all, below
      p.mean.resize(K * D), p.cov.assign(K * D * D, 0.0);
      for (double& m : p.mean) m = -3.0 + 6.0 * u(rng);
      std::normal_distribution<double> z;
      std::vector<double> a(D * D);
      for (std::size_t k = 0; k < K; ++k) {
        for (double& v : a) v = z(rng);
        double* c = p.cov.data() + k * D * D;
        for (std::size_t i = 0; i < D; ++i)
          for (std::size_t j = 0; j < D; ++j) {
            double s = i == j ? 0.5 : 0.0;
            for (std::size_t q = 0; q < D; ++q) s += a[i * D + q] * a[j * D + q] / static_cast<double>(D);
            c[i * D + j] = s;
          }
      }
      if (family == Family::gaussian_tied)
        for (std::size_t k = 1; k < K; ++k) std::copy_n(p.cov.begin(), D * D, p.cov.begin() + k * D * D);
      break;
    }
    case Family::categorical:
      p.categories = V;
      for (std::size_t kd = 0; kd < K * D; ++kd) {
        const std::vector<double> s = random_simplex(rng, V);
        p.prob.insert(p.prob.end(), s.begin(), s.end());
      }
      break;
    case Family::poisson:
      p.rate.resize(K * D);
      for (double& r : p.rate) r = 0.5 + 7.5 * u(rng);
      break;
    case Family::exponential:
      p.rate.resize(K * D);
      for (double& r : p.rate) r = 0.5 + 2.5 * u(rng);
      break;
    case Family::bernoulli:
      p.prob.resize(K * D);
      for (double& q : p.prob) q = 0.1 + 0.8 * u(rng);
      break;
    case Family::gamma:
      p.shape.resize(K * D), p.rate.resize(K * D);
      for (double& a : p.shape) a = 0.5 + 9.5 * u(rng);
      for (double& r : p.rate) r = 0.5 + 2.5 * u(rng);
      break;
    case Family::lognormal:
      p.mean.resize(K * D), p.var.resize(K * D);
      for (double& m : p.mean) m = -1.0 + 2.0 * u(rng);
      for (double& v : p.var) v = 0.1 + 0.4 * u(rng);
      break;
    case Family::gaussian_spherical:
      p.mean.resize(K * D), p.var.resize(K);
      for (double& m : p.mean) m = -3.0 + 6.0 * u(rng);
      for (double& v : p.var) v = 0.5 + 1.5 * u(rng);
      break;
  }
  return p;
}

std::vector<double> sample_rows(const Model& model, std::size_t rows, std::mt19937_64& rng) {
  const std::size_t C = model.columns();
  std::vector<double> x(rows * C, 0.0);
  std::discrete_distribution<std::size_t> pick(model.weights.begin(), model.weights.end());
  std::normal_distribution<double> z;
  // Cholesky factors of every full-covariance component, computed once.
  std::vector<std::vector<std::vector<double>>> chol(model.parts.size());
  for (std::size_t pi = 0; pi < model.parts.size(); ++pi) {
    const Part& p = model.parts[pi];
    if (p.family != Family::gaussian_full && p.family != Family::gaussian_tied) continue;
    for (std::size_t k = 0; k < model.components(); ++k)
      chol[pi].push_back(cholesky(p.cov.data() + k * p.dims() * p.dims(), p.dims()));
  }
  for (std::size_t n = 0; n < rows; ++n) {
    const std::size_t k = pick(rng);
    for (std::size_t pi = 0; pi < model.parts.size(); ++pi) {
      const Part& p = model.parts[pi];
      const std::size_t D = p.dims();
      double* xr = x.data() + n * C + p.col_begin;
      switch (p.family) {
        case Family::gaussian_diag:
          for (std::size_t d = 0; d < D; ++d) xr[d] = p.mean[k * D + d] + std::sqrt(p.var[k * D + d]) * z(rng);
          break;
        case Family::gaussian_full:
        case Family::gaussian_tied: {
          const std::vector<double>& l = chol[pi][k];
          std::vector<double> e(D);
          for (double& v : e) v = z(rng);
          for (std::size_t i = 0; i < D; ++i) {
            double s = p.mean[k * D + i];
            for (std::size_t j = 0; j <= i; ++j) s += l[i * D + j] * e[j];
            xr[i] = s;
          }
          break;
        }
        case Family::categorical:
          for (std::size_t d = 0; d < D; ++d) {
            const double* pr = p.prob.data() + (k * D + d) * p.categories;
            std::discrete_distribution<int> c(pr, pr + p.categories);
            xr[d] = c(rng);
          }
          break;
        case Family::poisson:
          for (std::size_t d = 0; d < D; ++d) xr[d] = std::poisson_distribution<int>(p.rate[k * D + d])(rng);
          break;
        case Family::exponential:
          for (std::size_t d = 0; d < D; ++d) xr[d] = std::exponential_distribution<double>(p.rate[k * D + d])(rng);
          break;
        case Family::bernoulli:
          for (std::size_t d = 0; d < D; ++d) xr[d] = std::bernoulli_distribution(p.prob[k * D + d])(rng) ? 1.0 : 0.0;
          break;
        case Family::gamma:
          for (std::size_t d = 0; d < D; ++d)
            xr[d] = std::gamma_distribution<double>(p.shape[k * D + d], 1.0 / p.rate[k * D + d])(rng);
          break;
        case Family::lognormal:
          for (std::size_t d = 0; d < D; ++d)
            xr[d] = std::exp(p.mean[k * D + d] + std::sqrt(p.var[k * D + d]) * z(rng));
          break;
        case Family::gaussian_spherical:
          for (std::size_t d = 0; d < D; ++d) xr[d] = p.mean[k * D + d] + std::sqrt(p.var[k]) * z(rng);
          break;
      }
    }
  }
  return x;
}

void compare_kernels(engine::Compute& cuda, const Model& model, const std::vector<double>& values, std::size_t rows,
                     DType dtype, engine::Precision precision, Tolerance tol) {
  validate_model(model);
  const std::size_t K = model.components();
  const Dataset data = make_dataset(values, rows, model.columns(), dtype);
  auto cpu = engine::make_cpu_compute(1);

  std::vector<double> ll_cpu(rows, kNaN), r_cpu(rows * K, kNaN), ll_gpu(rows, kNaN), r_gpu(rows * K, kNaN);
  const kernels::PassReport rep_cpu = cpu->score(model, data, precision, ll_cpu.data(), r_cpu.data());
  const kernels::PassReport rep_gpu = cuda.score(model, data, precision, ll_gpu.data(), r_gpu.data());
  expect_same_report(rep_cpu, rep_gpu);
  std::vector<double> weight(rows * K);  // |Δr| + tol.sum·r, the statistics' error weights
  double loglik_bound = 1e-300, abs_loglik = 0.0;
  int reported = 0;
  for (std::size_t n = 0; n < rows; ++n) {
    if (!std::isfinite(ll_cpu[n])) {
      // A bad row (−inf impossible, NaN, +inf tie): the same verdict and the same
      // responsibilities (zero, or equal shares of a tie), exactly.
      const bool same_kind = std::isnan(ll_cpu[n]) ? std::isnan(ll_gpu[n]) : ll_gpu[n] == ll_cpu[n];
      if (!same_kind && reported++ < 5)
        ADD_FAILURE() << "row " << n << " loglik cuda " << ll_gpu[n] << " cpu " << ll_cpu[n];
      for (std::size_t k = 0; k < K; ++k) {
        const double r = r_cpu[n * K + k], g = r_gpu[n * K + k];
        if (!(g == r) && reported++ < 5)
          ADD_FAILURE() << "bad row " << n << " component " << k << " responsibility cuda " << g << " cpu " << r;
        weight[n * K + k] = tol.sum * std::abs(r);
      }
      continue;
    }
    const double scale = 1.0 + std::abs(ll_cpu[n]);
    const double d_ll = std::abs(ll_gpu[n] - ll_cpu[n]);
    if (!(d_ll <= tol.log_density * scale) && reported++ < 5)
      ADD_FAILURE() << "row " << n << " loglik cuda " << ll_gpu[n] << " cpu " << ll_cpu[n];
    loglik_bound += d_ll;
    abs_loglik += std::abs(ll_cpu[n]);
    for (std::size_t k = 0; k < K; ++k) {
      const double r = r_cpu[n * K + k], g = r_gpu[n * K + k];
      const double d_r = std::abs(g - r);
      if (!(d_r <= 2 * tol.log_density * (scale + 40.0)) && reported++ < 5)
        ADD_FAILURE() << "row " << n << " component " << k << " responsibility cuda " << g << " cpu " << r;
      weight[n * K + k] = (std::isfinite(d_r) ? d_r : 1.0) + tol.sum * std::abs(r);
    }
  }
  loglik_bound += tol.sum * abs_loglik;

  const engine::StatLayout layout = engine::stat_layout(model);
  std::vector<double> s_cpu = baseline(layout.size), s_gpu = baseline(layout.size);
  const kernels::PassReport acc_cpu = cpu->accumulate(model, data, precision, s_cpu);
  const kernels::PassReport acc_gpu = cuda.accumulate(model, data, precision, s_gpu);
  expect_same_report(acc_cpu, acc_gpu);
  if (acc_cpu.impossible_rows + acc_cpu.nan_rows == 0) {
    check_statistics(model, values, rows, weight, engine::shift_table(model, precision), s_cpu, s_gpu, loglik_bound);
  } else {
    // Bad rows fold nothing: the statistics must be those of the data without them. (The
    // engine raises on any bad row, so the CPU does not promise finite statistics for such a
    // pass — its vectorised folds take 0·inf — and the oracle is the clean data's.)
    const std::size_t C = model.columns();
    std::vector<double> clean, clean_weight;
    std::size_t clean_rows = 0;
    for (std::size_t n = 0; n < rows; ++n) {
      if (std::isnan(ll_cpu[n]) || ll_cpu[n] == -std::numeric_limits<double>::infinity()) continue;
      clean.insert(clean.end(), values.begin() + static_cast<std::ptrdiff_t>(n * C),
                   values.begin() + static_cast<std::ptrdiff_t>((n + 1) * C));
      clean_weight.insert(clean_weight.end(), weight.begin() + static_cast<std::ptrdiff_t>(n * K),
                          weight.begin() + static_cast<std::ptrdiff_t>((n + 1) * K));
      ++clean_rows;
    }
    std::vector<double> s_clean = baseline(layout.size);
    const kernels::PassReport clean_report =
        cpu->accumulate(model, make_dataset(clean, clean_rows, C, dtype), precision, s_clean);
    EXPECT_EQ(clean_report.impossible_rows + clean_report.nan_rows, 0);
    check_statistics(model, clean, clean_rows, clean_weight, engine::shift_table(model, precision), s_clean, s_gpu,
                     loglik_bound);
  }

  std::vector<double> again = baseline(layout.size);
  cuda.accumulate(model, data, precision, again);
  EXPECT_EQ(0, std::memcmp(again.data(), s_gpu.data(), again.size() * sizeof(double)))
      << "two CUDA passes over the same rows must give bit-identical statistics";
}

Model random_model(Family family, std::size_t K, std::size_t D, std::uint64_t seed, std::size_t V) {
  std::mt19937_64 rng(seed);
  Model m;
  m.weights = random_simplex(rng, K);
  m.parts.push_back(random_part(family, K, D, 0, rng, V));
  return m;
}

void run_case(engine::Compute& cuda, Family family, const Case& c, Tolerance tol) {
  SCOPED_TRACE(std::string(family_name(family)) + " rows=" + std::to_string(c.rows) + " K=" + std::to_string(c.K) +
               " D=" + std::to_string(c.D) + " V=" + std::to_string(c.V) + " data=" + dtype_name(c.dtype) +
               " precision=" + engine::precision_name(c.precision));
  const std::uint64_t seed = c.rows * 1000003u + c.K * 1009u + c.D * 17u + c.V;
  const Model model = random_model(family, c.K, c.D, seed, c.V);
  std::mt19937_64 rng(seed + 1);
  const std::vector<double> values = sample_rows(model, c.rows, rng);
  compare_kernels(cuda, model, values, c.rows, c.dtype, c.precision, tol);
}

void expect_chunking_invariant(engine::Compute& cuda, Family family, const Case& c, std::size_t chunk_rows,
                               const char* env) {
  const std::uint64_t seed = c.rows * 7919u + c.K * 31u + c.D + c.V;
  const Model model = random_model(family, c.K, c.D, seed, c.V);
  std::mt19937_64 rng(seed + 1);
  const Dataset data = make_dataset(sample_rows(model, c.rows, rng), c.rows, model.columns(), c.dtype);
  const std::size_t size = static_cast<std::size_t>(engine::stat_layout(model).size);
  std::vector<double> resident(size, 0.0), streamed(size, 0.0);
  cuda.accumulate(model, data, c.precision, resident);
  {
    ScopedEnv chunking(env, std::to_string(chunk_rows));
    cuda.accumulate(model, data, c.precision, streamed);
  }
  EXPECT_EQ(0, std::memcmp(resident.data(), streamed.data(), size * sizeof(double)))
      << "one chunk and " << env << "=" << chunk_rows << " statistics differ";
}

void expect_variants_agree(engine::Compute& cuda, Family family, const Case& c, const char* env, const char* value) {
  SCOPED_TRACE(std::string(family_name(family)) + " K=" + std::to_string(c.K) + " D=" + std::to_string(c.D));
  const Model model = random_model(family, c.K, c.D, c.rows + c.K, c.V);
  std::mt19937_64 rng(c.D);
  const Dataset data = make_dataset(sample_rows(model, c.rows, rng), c.rows, model.columns(), c.dtype);
  const std::size_t size = static_cast<std::size_t>(engine::stat_layout(model).size);
  std::vector<double> tiled(size, 0.0), generic(size, 0.0);
  cuda.accumulate(model, data, c.precision, tiled);
  {
    ScopedEnv variant(env, value);
    cuda.accumulate(model, data, c.precision, generic);
  }
  const std::size_t first = static_cast<std::size_t>(kernels::stat_header_size(static_cast<int>(c.K)));
  double scale = 0.0;
  for (std::size_t j = first; j < size; ++j) scale = std::max(scale, std::abs(generic[j]));
  for (std::size_t j = 0; j < size; ++j)
    ASSERT_NEAR(tiled[j], generic[j], 1e-6 * std::max(scale, std::abs(generic[j]))) << "entry " << j;
  if (std::memcmp(tiled.data(), generic.data(), size * sizeof(double)) != 0)
    std::printf("[note] %s K=%zu D=%zu: default and %s=%s statistics agree within bounds, not bit for bit\n",
                family_name(family), c.K, c.D, env, value);
}

void compare_given(engine::Compute& cuda, const Model& model, const std::vector<double>& values, std::size_t rows,
                   Tolerance tol) {
  validate_model(model);
  const std::size_t K = model.components();
  const Dataset data = make_dataset(values, rows, model.columns(), DType::f64);
  std::mt19937_64 rng(rows * 131 + K);
  std::vector<double> resp;
  for (std::size_t n = 0; n < rows; ++n) {
    const std::vector<double> s = random_simplex(rng, K);
    resp.insert(resp.end(), s.begin(), s.end());
  }
  auto cpu = engine::make_cpu_compute(1);
  const engine::StatLayout layout = engine::stat_layout(model);
  std::vector<double> s_cpu = baseline(layout.size), s_gpu = baseline(layout.size);
  cpu->accumulate_given(model, data, resp.data(), s_cpu);
  cuda.accumulate_given(model, data, resp.data(), s_gpu);
  EXPECT_EQ(s_gpu[0], baseline(1)[0]) << "accumulate_given leaves Σ log-likelihood unchanged";
  std::vector<double> weight(resp.size());
  for (std::size_t i = 0; i < resp.size(); ++i) weight[i] = tol.sum * resp[i];
  check_statistics(model, values, rows, weight, engine::shift_table(model, engine::Precision::fp64, true), s_cpu, s_gpu,
                   1e-300);
}

}  // namespace mixle::test
