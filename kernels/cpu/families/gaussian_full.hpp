// gaussian_full on the CPU: −½‖P(x − mean)‖² with P = C⁻¹ (cov = C Cᵀ), and shifted moments.
#pragma once

#include "kernels/cpu/block.hpp"

namespace mixle::kernels::cpu {

/// Uses block.scratch as [D][kBlockRows] (centred columns) + [kBlockRows] (one row of P·diff).
template <class T>
void gaussian_full_log_density(const PartView<T>& part, int K, Block<T>& block) {
  const int D = part.dims;
  T* diff = block.scratch.data();
  T* y = diff + static_cast<std::size_t>(D) * kBlockRows;
  for (int k = 0; k < K; ++k) {
    T* l = block.logp(k);
    const T* mean = part.coef + static_cast<std::size_t>(k) * part.coef_stride;
    const T* P = mean + D;
    for (int j = 0; j < D; ++j) {
      const T* x = block.column(part.col_begin + j);
      T* dj = diff + static_cast<std::size_t>(j) * kBlockRows;
      const T m = mean[j];
#pragma omp simd
      for (int b = 0; b < kBlockRows; ++b) dj[b] = x[b] - m;
    }
    for (int i = 0; i < D; ++i) {
      const T* Pi = P + static_cast<std::size_t>(i) * D;
#pragma omp simd
      for (int b = 0; b < kBlockRows; ++b) y[b] = T(0);
      for (int j = 0; j <= i; ++j) {
        const T p = Pi[j];
        const T* dj = diff + static_cast<std::size_t>(j) * kBlockRows;
#pragma omp simd
        for (int b = 0; b < kBlockRows; ++b) y[b] += p * dj[b];
      }
#pragma omp simd
      for (int b = 0; b < kBlockRows; ++b) l[b] -= T(0.5) * y[b] * y[b];
    }
  }
}

template <class T>
void gaussian_full_accumulate(const PartView<T>& part, const int* active, int num_active,
                              Block<T>& block, T* const* acc) {
  const int D = part.dims;
  T* t = block.scratch.data();  // D values
  for (int b = 0; b < block.rows; ++b) {
    const T* x = block.row(b) + part.col_begin;
    for (int a = 0; a < num_active; ++a) {
      const int k = active[a];
      const T r = block.resp(k)[b];
      if (r == T(0)) continue;
      const T* s = part.shift + static_cast<std::size_t>(k) * D;
      T* s1 = acc[a];
      T* s2 = s1 + D;
#pragma omp simd
      for (int d = 0; d < D; ++d) {
        t[d] = x[d] - s[d];
        s1[d] += r * t[d];
      }
      for (int i = 0; i < D; ++i) {
        const T rti = r * t[i];
        T* row = s2 + static_cast<std::size_t>(i) * D;
#pragma omp simd
        for (int j = 0; j < D; ++j) row[j] += rti * t[j];
      }
    }
  }
}

}  // namespace mixle::kernels::cpu
