// One block of rows in the CPU kernels' working layout (internal to kernels/cpu).
#pragma once

#include "kernels/cpu/cpu_kernels.hpp"

#include <cstdint>
#include <vector>

namespace mixle::kernels::cpu {

/// Working buffers of one block of up to kBlockRows rows, owned by one thread.
///   xt  [cols][kBlockRows]  the block transposed (SIMD runs across rows); lanes past `rows`
///                           repeat row 0 so every lane holds valid values
///   xr  [kBlockRows][cols]  the block row-major, compute precision (statistics run across dims)
///   lp  [K][kBlockRows]     log-densities, then responsibilities
///   lx  [cols][kBlockRows]  log x of the columns of families that read it (gamma, lognormal);
///                           other columns unset, and empty when no part reads log x
template <class T>
struct Block {
  int rows = 0;
  int cols = 0;
  std::vector<T> xt, xr, lp, lx, row_offset;
  std::vector<double> loglik;  // kBlockRows, per-row log-likelihood
  /// Set by the pruned pass (kernels/cpu/prune.hpp): component k's rows with a non-zero
  /// responsibility, ascending, are listed at nonzero_rows[k·kBlockRows …] (nonzero_count[k] of
  /// them), so a fold can visit just those; false when every row may hold one.
  bool sparse = false;
  std::vector<std::uint8_t> nonzero_rows;
  std::vector<int> nonzero_count;

  void reserve(int columns, int components) {
    cols = columns;
    xt.assign(static_cast<std::size_t>(columns) * kBlockRows, T(0));
    xr.assign(static_cast<std::size_t>(columns) * kBlockRows, T(0));
    lp.assign(static_cast<std::size_t>(components) * kBlockRows, T(0));
    row_offset.assign(kBlockRows, T(0));
    loglik.assign(kBlockRows, 0.0);
  }
  // Indexed through the vectors (not `data() +`), so that a build with _GLIBCXX_ASSERTIONS, as
  // the tests are, stops at a column, row or component past the block; a release build compiles
  // both to the same address arithmetic.
  const T* column(int c) const { return &xt[static_cast<std::size_t>(c) * kBlockRows]; }
  const T* log_column(int c) const { return &lx[static_cast<std::size_t>(c) * kBlockRows]; }
  const T* row(int b) const { return &xr[static_cast<std::size_t>(b) * cols]; }
  /// When set, log-densities/responsibilities live there ([K][kBlockRows], the caller's memory:
  /// a pass that keeps log-densities between two passes) instead of in `lp`.
  T* lp_at = nullptr;
  T* logp(int k) {
    return lp_at ? lp_at + static_cast<std::size_t>(k) * kBlockRows : &lp[static_cast<std::size_t>(k) * kBlockRows];
  }
  /// Lane b of component k's log-densities, indexed through `lp` where that holds them (so a
  /// lane past the block stops a build with _GLIBCXX_ASSERTIONS).
  T& lane(int k, int b) {
    const std::size_t i = static_cast<std::size_t>(k) * kBlockRows + static_cast<std::size_t>(b);
    return lp_at ? lp_at[i] : lp[i];
  }
  const T* resp(int k) const {
    return lp_at ? lp_at + static_cast<std::size_t>(k) * kBlockRows : &lp[static_cast<std::size_t>(k) * kBlockRows];
  }
};

}  // namespace mixle::kernels::cpu
