// Log-sum-exp normalisation of a block (kernels/cpu/normalise.hpp).
#include "kernels/cpu/normalise.hpp"

#include "kernels/common/math.hpp"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <limits>

namespace mixle::kernels::cpu {

template <class T>
void normalise(int K, std::int64_t first_row, Block<T>& block, PassReport& report) {
  constexpr T kNegInf = -std::numeric_limits<T>::infinity();
  T mx[kBlockRows], sum[kBlockRows] = {};
  std::fill(std::begin(mx), std::end(mx), kNegInf);
  T nan_seen[kBlockRows] = {};  // non-zero where some component's log-density is NaN
  for (int k = 0; k < K; ++k) {
    const T* l = block.logp(k);
#pragma omp simd
    for (int b = 0; b < kBlockRows; ++b) {
      mx[b] = l[b] > mx[b] ? l[b] : mx[b];  // skips NaN, which nan_seen records instead
      nan_seen[b] = l[b] != l[b] ? T(1) : nan_seen[b];
    }
  }
  for (int k = 0; k < K; ++k) {
    T* l = block.logp(k);
#pragma omp simd
    for (int b = 0; b < kBlockRows; ++b) {
      const T e = exp_nonpositive(l[b] - mx[b]);
      l[b] = e;
      sum[b] += e;
    }
  }
  T inv[kBlockRows];
  bool special = false;
  for (int b = 0; b < kBlockRows; ++b) {
    const bool ok = b < block.rows && std::isfinite(mx[b]) && std::isfinite(sum[b]);
    inv[b] = ok ? T(1) / sum[b] : T(0);
    block.loglik[b] = ok ? static_cast<double>(mx[b]) + std::log(static_cast<double>(sum[b])) : 0.0;
    special |= !ok && b < block.rows;
  }
  for (int k = 0; k < K; ++k) {
    T* l = block.logp(k);
    // inv > 0 exactly for the normal rows (sum ≥ 1); the others — past block.rows, impossible,
    // NaN — get 0, not NaN · 0: a NaN row must fold nothing.
#pragma omp simd
    for (int b = 0; b < kBlockRows; ++b) l[b] = inv[b] > T(0) ? l[b] * inv[b] : T(0);
  }
  if (!special) return;
  for (int b = 0; b < block.rows; ++b) {
    const T m = mx[b];
    if (std::isfinite(m) && std::isfinite(sum[b])) continue;
    // Scores report impossible rows as −inf and NaN rows as NaN (component sharding combines a
    // row that is impossible under one shard with the others); sums skip both.
    block.loglik[b] = std::numeric_limits<double>::quiet_NaN();
    if (nan_seen[b] != T(0)) {
      ++report.nan_rows;
      if (report.num_listed < PassReport::kMaxListed) report.listed[report.num_listed++] = first_row + b;
      continue;
    }
    if (m == std::numeric_limits<T>::infinity()) {
      // +inf ties: the log-densities were overwritten; tie_rows re-derives which components
      // tie. Only reachable with degenerate parameters; the row's log-likelihood is +inf.
      block.loglik[b] = std::numeric_limits<double>::infinity();
      continue;
    }
    if (m == kNegInf) {
      block.loglik[b] = -std::numeric_limits<double>::infinity();
      ++report.impossible_rows;
    } else {
      ++report.nan_rows;
    }
    if (report.num_listed < PassReport::kMaxListed) report.listed[report.num_listed++] = first_row + b;
  }
}

template <class T>
void row_logliks(int K, std::int64_t first_row, Block<T>& block, PassReport& report) {
  constexpr T kNegInf = -std::numeric_limits<T>::infinity();
  T mx[kBlockRows], sum[kBlockRows] = {}, nan_seen[kBlockRows] = {};
  std::fill(std::begin(mx), std::end(mx), kNegInf);
  for (int k = 0; k < K; ++k) {
    const T* l = block.logp(k);
#pragma omp simd
    for (int b = 0; b < kBlockRows; ++b) {
      mx[b] = l[b] > mx[b] ? l[b] : mx[b];
      nan_seen[b] = l[b] != l[b] ? T(1) : nan_seen[b];
    }
  }
  for (int k = 0; k < K; ++k) {
    const T* l = block.logp(k);
#pragma omp simd
    for (int b = 0; b < kBlockRows; ++b) sum[b] += exp_nonpositive(l[b] - mx[b]);
  }
  for (int b = 0; b < block.rows; ++b) {
    if (std::isfinite(mx[b]) && std::isfinite(sum[b])) {
      block.loglik[b] = static_cast<double>(mx[b]) + std::log(static_cast<double>(sum[b]));
      continue;
    }
    const bool nan = nan_seen[b] != T(0) || (mx[b] != kNegInf && mx[b] != -kNegInf);
    if (!nan && mx[b] == -kNegInf) {
      block.loglik[b] = std::numeric_limits<double>::infinity();
      continue;
    }
    block.loglik[b] = nan ? std::numeric_limits<double>::quiet_NaN() : -std::numeric_limits<double>::infinity();
    (nan ? report.nan_rows : report.impossible_rows) += 1;
    if (report.num_listed < PassReport::kMaxListed) report.listed[report.num_listed++] = first_row + b;
  }
}

template void normalise<float>(int, std::int64_t, Block<float>&, PassReport&);
template void normalise<double>(int, std::int64_t, Block<double>&, PassReport&);
template void row_logliks<float>(int, std::int64_t, Block<float>&, PassReport&);
template void row_logliks<double>(int, std::int64_t, Block<double>&, PassReport&);

}  // namespace mixle::kernels::cpu
