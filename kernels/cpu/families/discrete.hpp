// categorical, poisson, exponential and bernoulli on the CPU. Each adds a term linear in a
// per-(component, dim) coefficient, and accumulates Σ r x (or category counts).
#pragma once

#include "kernels/common/math.hpp"
#include "kernels/cpu/block.hpp"

namespace mixle::kernels::cpu {

template <class T>
void categorical_log_density(const PartView<T>& part, int k0, int k1, Block<T>& block, T*) {
  const int D = part.dims, V = part.categories;
  for (int k = k0; k < k1; ++k) {
    T* l = block.logp(k);
    for (int d = 0; d < D; ++d) {
      const T* logp = part.coef + static_cast<std::size_t>(k) * part.coef_stride + static_cast<std::size_t>(d) * V;
      const T* x = block.column(part.col_begin + d);
      for (int b = 0; b < kBlockRows; ++b) l[b] += logp[static_cast<int>(x[b])];
    }
  }
}

template <class T>
void categorical_accumulate(const PartView<T>& part, const int* active, int num_active, const Block<T>& block,
                            T* const* acc, T*) {
  const int D = part.dims, V = part.categories;
  for (int b = 0; b < block.rows; ++b) {
    const T* x = block.row(b) + part.col_begin;
    for (int a = 0; a < num_active; ++a) {
      const T r = block.resp(active[a])[b];
      if (r == T(0)) continue;
      for (int d = 0; d < D; ++d) acc[a][d * V + static_cast<int>(x[d])] += r;
    }
  }
}

/// poisson (x·log rate), exponential (−rate·x) and bernoulli (x ? log p : log(1−p)).
template <class T>
void linear_log_density(const PartView<T>& part, int k0, int k1, Block<T>& block, T*) {
  const int D = part.dims;
  for (int k = k0; k < k1; ++k) {
    T* l = block.logp(k);
    const T* c = part.coef + static_cast<std::size_t>(k) * part.coef_stride;
    for (int d = 0; d < D; ++d) {
      const T* x = block.column(part.col_begin + d);
      if (part.kind == PartKind::bernoulli) {
        const T on = c[d], off = c[D + d];
#pragma omp simd
        for (int b = 0; b < kBlockRows; ++b) l[b] += x[b] > T(0.5) ? on : off;
      } else {
        const T coef = part.kind == PartKind::exponential ? -c[d] : c[d];
#pragma omp simd
        for (int b = 0; b < kBlockRows; ++b) l[b] += coef * x[b];
      }
    }
  }
}

template <class T>
void linear_accumulate(const PartView<T>& part, const int* active, int num_active, const Block<T>& block, T* const* acc,
                       T*) {
  const int D = part.dims;
  for (int a = 0; a < num_active; ++a) {
    const T* r = block.resp(active[a]);
    for (int d = 0; d < D; ++d) {
      const T* x = block.column(part.col_begin + d);
      T sum = T(0);
#pragma omp simd reduction(+ : sum)
      for (int b = 0; b < kBlockRows; ++b) sum += r[b] * x[b];
      acc[a][d] += sum;
    }
  }
}

/// Per-row −Σ log x! over a Poisson part's columns (component-independent).
template <class T>
void poisson_row_offset(const PartView<T>& part, Block<T>& block) {
  for (int d = 0; d < part.dims; ++d) {
    const T* x = block.column(part.col_begin + d);
    for (int b = 0; b < kBlockRows; ++b)
      block.row_offset[b] += static_cast<T>(neg_log_factorial(static_cast<double>(x[b])));
  }
}

}  // namespace mixle::kernels::cpu
