// gaussian_full on the CPU: −½‖P(x − mean)‖² with P = C⁻¹ (cov = C Cᵀ), and shifted moments.
#pragma once

#include "kernels/cpu/block.hpp"
#include "kernels/cpu/simd.hpp"

#include <algorithm>

namespace mixle::kernels::cpu {

/// Adds −½‖P(x − mean_k)‖² to the log-densities of components [k0, k1). Uses `scratch` as
/// diff [D][kBlockRows]; each y_i = Σ_{j≤i} P_ij diff_j for a whole block stays in registers.
template <class T>
void gaussian_full_log_density(const PartView<T>& part, int k0, int k1, Block<T>& block, T* scratch) {
  using S = Simd<T>;
  using V = typename S::type;
  constexpr int kVecs = kBlockRows / S::lanes;
  const int D = part.dims;
  T* diff = scratch;
  for (int k = k0; k < k1; ++k) {
    T* l = block.logp(k);
    const T* mean = part.coef + static_cast<std::size_t>(k) * part.coef_stride;
    const T* P = mean + D;
    for (int j = 0; j < D; ++j) {
      const T* x = block.column(part.col_begin + j);
      T* dj = diff + static_cast<std::size_t>(j) * kBlockRows;
      for (int g = 0; g < kVecs; ++g) S::store(dj + g * S::lanes, S::load(x + g * S::lanes) - mean[j]);
    }
    V quad[kVecs] = {};
    for (int i = 0; i < D; ++i) {
      const T* Pi = P + static_cast<std::size_t>(i) * D;
      V y[kVecs] = {};
      for (int j = 0; j <= i; ++j) {
        const T p = Pi[j];
        const T* dj = diff + static_cast<std::size_t>(j) * kBlockRows;
        for (int g = 0; g < kVecs; ++g) y[g] += p * S::load(dj + g * S::lanes);
      }
      for (int g = 0; g < kVecs; ++g) quad[g] += y[g] * y[g];
    }
    for (int g = 0; g < kVecs; ++g) S::store(l + g * S::lanes, S::load(l + g * S::lanes) - T(0.5) * quad[g]);
  }
}

/// m[ii][jj] = lane-wise Σ over the block of rt[i0+ii] · t[j0+jj] (NI×NJ register tile).
template <class T, int NI, int NJ>
inline void tile_products(const T* rt, const T* t, int i0, int j0, typename Simd<T>::type (&m)[NI][NJ]) {
  using S = Simd<T>;
  using V = typename S::type;
  for (int g = 0; g < kBlockRows / S::lanes; ++g) {
    V tj[NJ];
    for (int jj = 0; jj < NJ; ++jj) tj[jj] = S::load(t + static_cast<std::size_t>(j0 + jj) * kBlockRows + g * S::lanes);
    for (int ii = 0; ii < NI; ++ii) {
      const V ri = S::load(rt + static_cast<std::size_t>(i0 + ii) * kBlockRows + g * S::lanes);
      for (int jj = 0; jj < NJ; ++jj) m[ii][jj] += ri * tj[jj];
    }
  }
}

/// The same for a partial tile at the edge (ni, nj ≤ N).
template <class T, int N>
inline void tile_products_partial(const T* rt, const T* t, int i0, int j0, int ni, int nj,
                                  typename Simd<T>::type (&m)[N][N]) {
  using S = Simd<T>;
  for (int g = 0; g < kBlockRows / S::lanes; ++g)
    for (int ii = 0; ii < ni; ++ii) {
      const auto ri = S::load(rt + static_cast<std::size_t>(i0 + ii) * kBlockRows + g * S::lanes);
      for (int jj = 0; jj < nj; ++jj)
        m[ii][jj] += ri * S::load(t + static_cast<std::size_t>(j0 + jj) * kBlockRows + g * S::lanes);
    }
}

/// Adds Σ r (x−s) and Σ r (x−s)(x−s)ᵀ of the block to acc[a]. Uses `scratch` as
/// t [D][kBlockRows] = x − s and rt [D][kBlockRows] = r·t; the second moments are the small
/// product rtᵀ·t over the block's rows, computed in 4×4 register tiles of (i, j) for j ≤ i.
/// Responsibilities of lanes past block.rows are 0, so those lanes add nothing.
template <class T>
void gaussian_full_accumulate(const PartView<T>& part, const int* active, int num_active, const Block<T>& block,
                              T* const* acc, T* scratch) {
  using S = Simd<T>;
  using V = typename S::type;
  constexpr int kVecs = kBlockRows / S::lanes;
  constexpr int kTile = 4;
  const int D = part.dims;
  T* t = scratch;
  T* rt = t + static_cast<std::size_t>(D) * kBlockRows;
  auto hsum = [](V v) {
    T s = T(0);
    for (int i = 0; i < S::lanes; ++i) s += v[i];
    return s;
  };
  for (int a = 0; a < num_active; ++a) {
    const int k = active[a];
    const T* r = block.resp(k);
    const T* s = part.shift + static_cast<std::size_t>(k) * D;
    T* s1 = acc[a];
    T* s2 = s1 + D;
    for (int i = 0; i < D; ++i) {
      const T* x = block.column(part.col_begin + i);
      T* ti = t + static_cast<std::size_t>(i) * kBlockRows;
      T* rti = rt + static_cast<std::size_t>(i) * kBlockRows;
      V m1 = {};
      for (int g = 0; g < kVecs; ++g) {
        const V tv = S::load(x + g * S::lanes) - s[i];
        const V rv = S::load(r + g * S::lanes) * tv;
        S::store(ti + g * S::lanes, tv);
        S::store(rti + g * S::lanes, rv);
        m1 += rv;
      }
      s1[i] += hsum(m1);
    }
    for (int i0 = 0; i0 < D; i0 += kTile) {
      const int ni = std::min(kTile, D - i0);
      for (int j0 = 0; j0 <= i0; j0 += kTile) {
        const int nj = j0 == i0 ? ni : kTile;  // j0 ≤ i0: only a diagonal tile can be narrower
        V m[kTile][kTile] = {};
        if (ni == kTile && nj == kTile) {
          tile_products<T, kTile, kTile>(rt, t, i0, j0, m);  // fully unrolled: no branches
        } else {
          tile_products_partial<T, kTile>(rt, t, i0, j0, ni, nj, m);
        }
        for (int ii = 0; ii < ni; ++ii) {
          // Below the diagonal a tile is whole; a diagonal tile's row ii stops at the diagonal.
          const int row_end = j0 == i0 ? ii + 1 : nj;
          for (int jj = 0; jj < row_end; ++jj) {
            const int i = i0 + ii, j = j0 + jj;
            const T v = hsum(m[ii][jj]);
            s2[static_cast<std::size_t>(i) * D + j] += v;
            if (j != i) s2[static_cast<std::size_t>(j) * D + i] += v;
          }
        }
      }
    }
  }
}

}  // namespace mixle::kernels::cpu
