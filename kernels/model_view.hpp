// The contract between the engine and both kernel sets (CPU, CUDA): a model packed into flat arrays in
// the compute precision T, and the layout of the flat float64 statistics buffer. Host-compilable
// plain data; the pointers refer to host memory (CPU kernels) or device memory (CUDA kernels).
//
// Statistics buffer (float64), `stat_size` doubles:
//   [0]            Σ_rows log p(x)          (total log-likelihood of the rows folded in)
//   [1]            number of rows folded in
//   [2, 2+K)       Σ_rows r_k               (responsibility mass of each component)
//   then, for each part p, K blocks of parts[p].stat_stride doubles at parts[p].stat_offset:
//     gaussian_diag  Σ r (x−s)  [D],  Σ r (x−s)²  [D]
//     gaussian_full  Σ r (x−s)  [D],  Σ r (x−s)(x−s)ᵀ  [D×D, row-major, symmetric]
//     categorical    Σ r [x_d = v]  [D×V]
//     poisson, exponential, bernoulli   Σ r x  [D]
//     gamma          Σ r x  [D],  Σ r log x  [D]
//     lognormal      Σ r (log x − s)  [D],  Σ r (log x − s)²  [D]
//   where s is the part's per-component shift (the previous means), which keeps float32
//   accumulation of second moments free of cancellation.
//
// Coefficients per component (coef + k·coef_stride), compute precision:
//   gaussian_diag  mean [D], −1/(2 var) [D]                           (coef_stride 2D)
//   gaussian_full  mean [D], P [D×D] row-major lower triangular, P = C⁻¹ where cov = C Cᵀ;
//                  the part adds −½‖P (x−mean)‖²                       (coef_stride D + D²)
//   categorical    log prob [D×V]                                      (coef_stride D·V)
//   poisson        log rate [D]     (adds x·log rate; −rate in log_const, −log x! per row)
//   exponential    rate [D]         (adds −rate·x; log rate in log_const)
//   bernoulli      log p [D], log(1−p) [D]                            (coef_stride 2D)
//   gamma          shape − 1 [D] (on log x), rate [D] (adds −rate·x)  (coef_stride 2D)
//   lognormal      mean [D], −1/(2 var) [D] of log x; −Σ log x per row (coef_stride 2D)
// log_const[k] = log weight_k + every part's x-independent normalising terms.
#pragma once

#include <cstddef>
#include <cstdint>

namespace mixle::kernels {

/// Same order as mixle::Family (the engine checks this at compile time).
enum class PartKind : int {
  gaussian_diag = 0,
  gaussian_full = 1,
  categorical = 2,
  poisson = 3,
  exponential = 4,
  bernoulli = 5,
  gamma = 6,
  lognormal = 7,
};

template <class T>
struct PartView {
  PartKind kind = PartKind::gaussian_diag;
  int col_begin = 0;        // first data column of the part
  int dims = 0;             // D
  int categories = 0;       // V (categorical)
  const T* coef = nullptr;  // K × coef_stride
  int coef_stride = 0;
  const T* shift = nullptr;      // K × D (Gaussian families), else null
  std::int64_t stat_offset = 0;  // index of component 0's block in the statistics buffer
  int stat_stride = 0;           // doubles per component
};

template <class T>
struct ModelView {
  int components = 0;            // K
  int columns = 0;               // data columns the model reads (≤ the data's columns)
  const T* log_const = nullptr;  // K
  const PartView<T>* parts = nullptr;
  int num_parts = 0;
  std::int64_t stat_size = 0;  // doubles in the statistics buffer
  bool row_offset = false;     // true when a part adds a per-row constant (poisson: −log x!)
};

/// Index of the first part statistic, after the log-likelihood, row count and K masses.
constexpr std::int64_t kStatHeader = 2;
inline std::int64_t stat_header_size(int components) { return kStatHeader + components; }

/// What a pass over rows found that the engine must report (rows are 0-based within the pass).
struct PassReport {
  static constexpr int kMaxListed = 8;
  std::int64_t impossible_rows = 0;      // −inf under every component
  std::int64_t nan_rows = 0;             // NaN log-density (bad parameters or data)
  std::int64_t listed[kMaxListed] = {};  // first impossible/NaN rows, ascending
  int num_listed = 0;
  /// (row, component) pairs whose log-density the pass evaluated, and of how many: K per row
  /// unless exact pruning proved the others zero (CPU accumulate passes; 0 and 0 elsewhere).
  std::int64_t evaluated_pairs = 0;
  std::int64_t pairs = 0;

  void merge(const PassReport& other);
};

}  // namespace mixle::kernels
