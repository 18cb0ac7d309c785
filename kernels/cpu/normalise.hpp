// Log-sum-exp of a block's log-densities, row by row (internal to kernels/cpu). Compiled without
// reassociation (kernels/CMakeLists.txt): a row's exp sum adds its components in index order,
// the order the pruned pass (kernels/cpu/prune.hpp) repeats over the pairs it keeps.
#pragma once

#include "kernels/cpu/block.hpp"

#include <cstdint>

namespace mixle::kernels::cpu {

/// Turns log-densities into responsibilities row by row (log-sum-exp) and records each row's
/// log-likelihood. Rows that are −inf everywhere (impossible) or NaN get zero responsibility
/// and are reported; +inf ties share the row equally (the reference layer's rule, docs/design.md §6).
template <class T>
void normalise(int K, std::int64_t first_row, Block<T>& block, PassReport& report);

/// Each row's log-likelihood (log-sum-exp of its log-densities) without touching the
/// log-densities: the same arithmetic as normalise(), so the same bits; impossible rows get −inf,
/// NaN rows NaN, rows with a +inf log-density +inf, and the first two are reported.
template <class T>
void row_logliks(int K, std::int64_t first_row, Block<T>& block, PassReport& report);

}  // namespace mixle::kernels::cpu
