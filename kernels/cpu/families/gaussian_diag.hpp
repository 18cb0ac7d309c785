// gaussian_diag on the CPU: log N(x | mean, diag(var)) and shifted first/second moments.
#pragma once

#include "kernels/cpu/block.hpp"

namespace mixle::kernels::cpu {

template <class T>
void gaussian_diag_log_density(const PartView<T>& part, int K, Block<T>& block) {
  const int D = part.dims;
  for (int k = 0; k < K; ++k) {
    T* l = block.logp(k);
    const T* mean = part.coef + static_cast<std::size_t>(k) * part.coef_stride;
    const T* neg_half_prec = mean + D;
    for (int d = 0; d < D; ++d) {
      const T* x = block.column(part.col_begin + d);
      const T m = mean[d], h = neg_half_prec[d];
#pragma omp simd
      for (int b = 0; b < kBlockRows; ++b) {
        const T t = x[b] - m;
        l[b] += h * t * t;
      }
    }
  }
}

/// acc: per-component blocks of part.stat_stride values (compute precision) for this block.
template <class T>
void gaussian_diag_accumulate(const PartView<T>& part, const int* active, int num_active,
                              const Block<T>& block, T* const* acc) {
  const int D = part.dims;
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
        const T t = x[d] - s[d];
        const T rt = r * t;
        s1[d] += rt;
        s2[d] += rt * t;
      }
    }
  }
}

}  // namespace mixle::kernels::cpu
