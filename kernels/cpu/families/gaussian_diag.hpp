// gaussian_diag on the CPU: log N(x | mean, diag(var)) and shifted first/second moments.
#pragma once

#include <algorithm>

#include "kernels/cpu/block.hpp"
#include "kernels/cpu/simd.hpp"

namespace mixle::kernels::cpu {

/// What a normal term reads: the data x (gaussian_diag) or log x (lognormal).
enum class Feature { value, log };

/// Adds Σ_d −(f_d − mean_kd)² / (2 var_kd) to every component's log-densities, where f is x or
/// log x. Each group of kGroup vectors of rows keeps its K-th accumulators in registers across
/// the D dimensions. Per lane: t = f − mean, then acc = fma(−1/(2 var), t·t, acc) in dimension
/// order — the arithmetic diag_pair_log_density repeats for one pair (kernels/cpu/prune.hpp).
template <class T, Feature F = Feature::value>
void gaussian_diag_log_density(const PartView<T>& part, int k0, int k1, Block<T>& block, T*) {
  using S = Simd<T>;
  using V = typename S::type;
  constexpr int kGroup = 4;  // vectors of rows per register group
  constexpr int kGroupRows = kGroup * S::lanes;
  static_assert(kBlockRows % kGroupRows == 0, "the block must hold whole row groups");
  const int D = part.dims;
  for (int k = k0; k < k1; ++k) {
    T* l = block.logp(k);
    const T* mean = part.coef + static_cast<std::size_t>(k) * part.coef_stride;
    const T* neg_half_prec = mean + D;
    for (int g0 = 0; g0 < kBlockRows; g0 += kGroupRows) {
      V acc[kGroup];
      for (int g = 0; g < kGroup; ++g) acc[g] = S::load(l + g0 + g * S::lanes);
      for (int d = 0; d < D; ++d) {
        const int c = part.col_begin + d;
        const T* x = (F == Feature::log ? block.log_column(c) : block.column(c)) + g0;
        const V m = S::broadcast(mean[d]), h = S::broadcast(neg_half_prec[d]);
        for (int g = 0; g < kGroup; ++g) {
          const V t = S::load(x + g * S::lanes) - m;
          acc[g] = S::fma(h, t * t, acc[g]);
        }
      }
      for (int g = 0; g < kGroup; ++g) S::store(l + g0 + g * S::lanes, acc[g]);
    }
  }
}

/// Adds Σ_b r_b (x_b − shift) to s1 and Σ_b r_b (x_b − shift)² to s2 over one column of a block
/// (all kBlockRows lanes: a fixed trip count; lanes past the block's rows have r = 0).
template <class T>
void diag_moments_of_column(const T* x, const T* r, T shift, T& s1, T& s2) {
  T a1 = T(0), a2 = T(0);
#pragma omp simd reduction(+ : a1, a2)
  for (int b = 0; b < kBlockRows; ++b) {
    const T t = x[b] - shift;
    const T rt = r[b] * t;
    a1 += rt;
    a2 += rt * t;
  }
  s1 += a1;
  s2 += a2;
}

/// Adds Σ r (x−s) and Σ r (x−s)² of the block to acc[a] (component active[a]; compute
/// precision). Whole SIMD-width chunks of dimensions run along each row (row-major block, the
/// sums held in registers, rows with zero responsibility skipped); the remaining D mod lanes
/// dimensions run down the rows (transposed block, fixed trip count).
template <class T>
void gaussian_diag_accumulate(const PartView<T>& part, const int* active, int num_active, const Block<T>& block,
                              T* const* acc, T*) {
  using S = Simd<T>;
  using V = typename S::type;
  constexpr int kChunks = 4;  // dimension chunks per pass over the rows (8 accumulators)
  const int D = part.dims;
  const int vector_dims = D - D % S::lanes;
  for (int a = 0; a < num_active; ++a) {
    const int k = active[a];
    const T* r = block.resp(k);
    const T* s = part.shift + static_cast<std::size_t>(k) * D;
    T* s1 = acc[a];
    T* s2 = s1 + D;
    for (int c0 = 0; c0 < vector_dims; c0 += kChunks * S::lanes) {
      const int chunks = std::min(kChunks, (vector_dims - c0) / S::lanes);
      V shift[kChunks], m1[kChunks], m2[kChunks];
      for (int c = 0; c < chunks; ++c) {
        shift[c] = S::load(s + c0 + c * S::lanes);
        m1[c] = V{};
        m2[c] = V{};
      }
      // The rows with r ≠ 0, in row order: all of them, or the pruned pass's list (the same rows).
      const int listed = block.sparse ? block.nonzero_count[static_cast<std::size_t>(k)] : block.rows;
      const std::uint8_t* list = block.sparse ? &block.nonzero_rows[static_cast<std::size_t>(k) * kBlockRows] : nullptr;
      for (int i = 0; i < listed; ++i) {
        const int b = list ? list[i] : i;
        const T rb = r[b];
        if (rb == T(0)) continue;
        const T* x = block.row(b) + part.col_begin + c0;
        for (int c = 0; c < chunks; ++c) {
          const V t = S::load(x + c * S::lanes) - shift[c];
          const V rt = rb * t;
          m1[c] += rt;
          m2[c] += rt * t;
        }
      }
      for (int c = 0; c < chunks; ++c) {
        S::store(s1 + c0 + c * S::lanes, S::load(s1 + c0 + c * S::lanes) + m1[c]);
        S::store(s2 + c0 + c * S::lanes, S::load(s2 + c0 + c * S::lanes) + m2[c]);
      }
    }
    for (int d = vector_dims; d < D; ++d)
      diag_moments_of_column(block.column(part.col_begin + d), r, s[d], s1[d], s2[d]);
  }
}

}  // namespace mixle::kernels::cpu
