// gamma and lognormal on the CPU: families of positive reals whose terms read log x. The block
// holds log x for their columns (Block::log_column, computed once when the block is loaded), so
// no logarithm is taken per component.
#pragma once

#include "kernels/cpu/block.hpp"
#include "kernels/cpu/families/gaussian_diag.hpp"

namespace mixle::kernels::cpu {

/// gamma: adds Σ_d (α_d − 1)·log x_d − β_d·x_d (coefficients α − 1 [D], β [D]).
template <class T>
void gamma_log_density(const PartView<T>& part, int k0, int k1, Block<T>& block, T*) {
  const int D = part.dims;
  for (int k = k0; k < k1; ++k) {
    T* l = block.logp(k);
    const T* c = part.coef + static_cast<std::size_t>(k) * part.coef_stride;
    for (int d = 0; d < D; ++d) {
      const T* x = block.column(part.col_begin + d);
      const T* lx = block.log_column(part.col_begin + d);
      const T a = c[d], rate = c[D + d];
#pragma omp simd
      for (int b = 0; b < kBlockRows; ++b) l[b] = l[b] + a * lx[b] - rate * x[b];
    }
  }
}

/// gamma: adds Σ r x [D] and Σ r log x [D].
template <class T>
void gamma_accumulate(const PartView<T>& part, const int* active, int num_active, const Block<T>& block, T* const* acc,
                      T*) {
  const int D = part.dims;
  for (int a = 0; a < num_active; ++a) {
    const T* r = block.resp(active[a]);
    for (int d = 0; d < D; ++d) {
      const T* x = block.column(part.col_begin + d);
      const T* lx = block.log_column(part.col_begin + d);
      T sx = T(0), slx = T(0);
#pragma omp simd reduction(+ : sx, slx)
      for (int b = 0; b < kBlockRows; ++b) {
        sx += r[b] * x[b];
        slx += r[b] * lx[b];
      }
      acc[a][d] += sx;
      acc[a][D + d] += slx;
    }
  }
}

/// lognormal: gaussian_diag's term on log x (coefficients mean [D], −1/(2 var) [D]).
template <class T>
void lognormal_log_density(const PartView<T>& part, int k0, int k1, Block<T>& block, T* scratch) {
  gaussian_diag_log_density<T, Feature::log>(part, k0, k1, block, scratch);
}

/// lognormal: adds Σ r (log x − s) [D] and Σ r (log x − s)² [D], column by column.
template <class T>
void lognormal_accumulate(const PartView<T>& part, const int* active, int num_active, const Block<T>& block,
                          T* const* acc, T*) {
  const int D = part.dims;
  for (int a = 0; a < num_active; ++a) {
    const int k = active[a];
    const T* shift = part.shift + static_cast<std::size_t>(k) * D;
    for (int d = 0; d < D; ++d)
      diag_moments_of_column(block.log_column(part.col_begin + d), block.resp(k), shift[d], acc[a][d], acc[a][D + d]);
  }
}

/// lognormal's per-row −Σ log x over its columns (component-independent).
template <class T>
void lognormal_row_offset(const PartView<T>& part, Block<T>& block) {
  for (int d = 0; d < part.dims; ++d) {
    const T* lx = block.log_column(part.col_begin + d);
    for (int b = 0; b < kBlockRows; ++b) block.row_offset[b] -= lx[b];
  }
}

}  // namespace mixle::kernels::cpu
