// Shared by the per-family backend tests: random models and data, the "CUDA or skip" gate, and
// the comparison of the CUDA kernels against the CPU oracle through engine::Compute.
#pragma once

#include "engine/compute.hpp"
#include "engine/estimator.hpp"

#include <mixle/data.hpp>
#include <mixle/error.hpp>
#include <mixle/model.hpp>

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>

namespace mixle::test {

/// True when MIXLE_REQUIRE_GPU=1: a missing device is then a failure, not a skip.
inline bool gpu_required() {
  const char* v = std::getenv("MIXLE_REQUIRE_GPU");
  return v && std::string(v) == "1";
}

/// The CUDA kernels on device 0, or null with the reason in `why`.
inline std::unique_ptr<engine::Compute> cuda_or_reason(std::string& why) {
  if (engine::cuda_device_count() == 0) {
    why = MIXLE_HAVE_CUDA ? "no CUDA device: cuda_device_count() is 0 on this machine"
                          : "no CUDA device: this build has no CUDA kernels (MIXLE_CUDA=OFF or no nvcc)";
    return nullptr;
  }
  try {
    return engine::make_cuda_compute(0);
  } catch (const NotCompiled& e) {
    why = std::string("no CUDA device: ") + e.what();
    return nullptr;
  }
}

/// Binds `var` to the CUDA kernels or skips the test visibly (fails under MIXLE_REQUIRE_GPU=1).
#define MIXLE_CUDA_OR_SKIP(var)                                                             \
  std::string var##_why;                                                                    \
  std::unique_ptr<::mixle::engine::Compute> var = ::mixle::test::cuda_or_reason(var##_why); \
  if (!var) {                                                                               \
    if (::mixle::test::gpu_required()) FAIL() << var##_why << " (MIXLE_REQUIRE_GPU=1)";     \
    GTEST_SKIP() << var##_why;                                                              \
  }

/// Sets an environment variable for a scope (forces the streamed path, etc.).
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::string& value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old, had_ = true;
    ::setenv(name, value.c_str(), 1);
  }
  ~ScopedEnv() {
    if (had_)
      ::setenv(name_, old_.c_str(), 1);
    else
      ::unsetenv(name_);
  }

 private:
  const char* name_;
  std::string old_;
  bool had_ = false;
};

/// A random probability vector of length n (bounded away from 0).
inline std::vector<double> random_simplex(std::mt19937_64& rng, std::size_t n) {
  std::uniform_real_distribution<double> u(0.2, 1.0);
  std::vector<double> p(n);
  double s = 0.0;
  for (double& v : p) s += (v = u(rng));
  for (double& v : p) v /= s;
  return p;
}

/// A part of `family` over columns [col, col + D) with random parameters for K components.
Part random_part(Family family, std::size_t K, std::size_t D, std::size_t col, std::mt19937_64& rng, std::size_t V = 0);

/// Rows drawn from `model` (component chosen by weight, then each part sampled).
std::vector<double> sample_rows(const Model& model, std::size_t rows, std::mt19937_64& rng);

/// Error bounds of one comparison, each relative, with the reason written where the case is.
///   log_density: |ΔL| ≤ log_density·(1 + |L|) between the backends' log-densities (same operation
///                order; differences come from FMA contraction, the warp's summation order in
///                the log-sum-exp, and float conversion)
///   sum:         rounding of the statistics sums themselves (T within runs of 128 rows, then
///                float64), relative to Σ r·|term|
struct Tolerance {
  double log_density;
  double sum;
};

/// Checks the per-component statistics of `got` against `want` (masses, then every part's
/// blocks; the header entries are the caller's): each entry within 2 · Σ_n weight[n·K+k] ·
/// |term_j(x_n)| of the oracle, terms about `shifts` (kernels/model_view.hpp layout).
void check_component_statistics(const Model& model, const std::vector<double>& values, std::size_t rows,
                                const std::vector<double>& weight, const engine::ShiftTable& shifts,
                                const std::vector<double>& want, const std::vector<double>& got);

/// Runs score and accumulate on the CPU oracle and on `cuda` for `precision` (fp32 or fp64),
/// the data stored as `dtype`, and checks:
///   · score outputs are poisoned (NaN) before each run, so unwritten elements fail;
///   · |Δ loglik_n| ≤ tol.log_density·(1 + |loglik_n|); a row whose CPU log-likelihood is not
///     finite (impossible −inf, NaN, a +inf tie) must get the same verdict and exactly the same
///     responsibilities (zero, or equal shares);
///   · |Δ r_nk| ≤ 2·tol.log_density·(1 + |loglik_n| + 40) (only components within e^40 of the
///     row's best carry responsibility, and there L ≈ loglik ± 40);
///   · statistics start from the same non-zero values (accumulate adds to them); the row count
///     is exact; every other entry |Δ| ≤ 2·Σ_n (|Δr_nk| + tol.sum·r_nk)·|term_j(x_n)| + 1e-300,
///     the propagation of the measured responsibility differences plus summation rounding, the
///     terms computed here from the layout in kernels/model_view.hpp — so a dropped row, a
///     wrong index or a wrong shift shows up at full size;
///   · the bad-row reports agree exactly, and bad rows fold nothing: with any, the oracle
///     statistics are the CPU's over the data without them;
///   · a second CUDA accumulate gives bit-identical statistics (deterministic reduction).
void compare_kernels(engine::Compute& cuda, const Model& model, const std::vector<double>& values, std::size_t rows,
                     DType dtype, engine::Precision precision, Tolerance tol);

/// A model of one part of `family` over columns [0, D), random parameters from `seed`.
Model random_model(Family family, std::size_t K, std::size_t D, std::uint64_t seed, std::size_t V = 0);

/// One comparison case: sizes chosen not to be multiples of any tile (32, 128, 256).
struct Case {
  std::size_t rows, K, D, V;
  DType dtype;
  engine::Precision precision;
};

/// A fresh random model and data for `c`, compared with compare_kernels.
void run_case(engine::Compute& cuda, Family family, const Case& c, Tolerance tol);

/// The CUDA statistics of `c` in one resident chunk and in chunks of `chunk_rows` rows — streamed
/// (MIXLE_CUDA_STREAM_ROWS, the default) or resident (`env` MIXLE_CUDA_CHUNK_ROWS) — must be
/// bit-identical (slots are fixed rows of the pass and folded in row order).
void expect_chunking_invariant(engine::Compute& cuda, Family family, const Case& c, std::size_t chunk_rows,
                               const char* env = "MIXLE_CUDA_STREAM_ROWS");

/// Statistics of the default kernels against those with the environment variable `env` set to
/// `value` (the generic statistics kernel, or the unfused pass): per entry the same operations
/// in the same order, so only FMA contraction may differ — bound 1e-6 (16 float ulps) of
/// max(|entry|, largest part statistic).
void expect_variants_agree(engine::Compute& cuda, Family family, const Case& c, const char* env,
                           const char* value = "generic");

/// accumulate_given (float64 path) against the CPU, with random given responsibilities.
void compare_given(engine::Compute& cuda, const Model& model, const std::vector<double>& values, std::size_t rows,
                   Tolerance tol);

}  // namespace mixle::test
