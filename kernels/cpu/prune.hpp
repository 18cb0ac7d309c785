// Exact pruning of the CPU E-step (internal to kernels/cpu; docs/numerics.md §8). On separated
// mixtures nearly every (row, component) pair's responsibility is flushed to exactly +0 by the
// dense pass. A bound built from the model before the pass, and from each row's anchor (the
// component that held its largest responsibility in an earlier pass), proves most of those pairs
// zero before they are evaluated; the pass evaluates the others with the dense pass's arithmetic,
// so its responsibilities, log-likelihoods and statistics are bit for bit the dense pass's.
#pragma once

#include "kernels/cpu/block.hpp"

#include <cstdint>
#include <span>
#include <vector>

namespace mixle::kernels::cpu {

/// The log-density of one (row, component) pair of a model whose parts are all gaussian_diag:
/// log_const[k], then part by part and dimension by dimension acc = fma(−1/(2 var), t·t, acc)
/// with t = x − mean — lane for lane what gaussian_diag_log_density computes. `x` is the row
/// in the compute precision (Block::row).
template <class T>
T diag_pair_log_density(const ModelView<T>& model, int k, const T* x);

/// What a pass knows of its model's pairs before it reads a row (float64, rounded outward). For
/// each anchor k and other component j, the radius r_jk: every row whose whitened distance to
/// k's mean is at most r_jk has a pair (row, j) that the dense pass flushes to +0. Per anchor the
/// others are kept sorted by radius, so a row's pairs that are not proved zero are a prefix. For
/// the first kRefined of each list, the same bound block by block of dimensions (Δ and ρ per
/// block), which a row's prefix is tested against before its pairs are evaluated.
template <class T>
class PruneBounds {
 public:
  /// Radii kept per anchor, the smallest first (at most K − 1). A row farther from its anchor
  /// than the last kept radius and the bound on the rest is evaluated whole.
  static constexpr int kListed = 512;
  /// Listed components per anchor with per-block bounds, and dimension blocks per part.
  static constexpr int kRefined = 16;
  static constexpr int kBlocksPerPart = 4;

  /// eligible() is false — every block takes the dense pass — unless every part is
  /// gaussian_diag, K ≥ 2, every mean is finite and every −1/(2 var) finite and negative.
  explicit PruneBounds(const ModelView<T>& model);
  bool eligible() const { return eligible_; }
  int components() const { return K_; }
  /// γ: the computed log-density of a pair lies within γ·(|lc| + Q) of the exact one.
  double gamma() const { return gamma_; }
  /// Anchor k's listed components and their radii, ascending.
  std::span<const int> listed(int k) const { return {&index_[at(k)], static_cast<std::size_t>(L_)}; }
  std::span<const double> radii(int k) const { return {&radius_[at(k)], static_cast<std::size_t>(L_)}; }
  /// The smallest radius of anchor k's components past its list (+inf when none are).
  double unlisted_radius(int k) const { return unlisted_[static_cast<std::size_t>(k)]; }

  struct DimBlock {
    int part = 0, d0 = 0, d1 = 0;  // dimensions [d0, d1) of part `part`
  };
  std::span<const DimBlock> blocks() const { return blocks_; }
  /// Listed components of each anchor with per-block bounds: min(kRefined, K − 1).
  int refined() const { return R_; }
  /// Anchor k's i-th listed component (i < refined()): its constant bound C and, per block, Δ and ρ.
  double refined_const(int k, int i) const { return refined_const_[static_cast<std::size_t>(k) * R_ + i]; }
  const double* refined_delta(int k, int i) const { return &refined_delta_[refined_at(k, i)]; }
  const double* refined_rho(int k, int i) const { return &refined_rho_[refined_at(k, i)]; }

 private:
  std::size_t at(int k) const { return static_cast<std::size_t>(k) * static_cast<std::size_t>(L_); }
  std::size_t refined_at(int k, int i) const {
    return (static_cast<std::size_t>(k) * R_ + static_cast<std::size_t>(i)) * blocks_.size();
  }
  bool eligible_ = false;
  int K_ = 0, L_ = 0, R_ = 0;
  double gamma_ = 0.0;
  std::vector<int> index_;
  std::vector<double> radius_, unlisted_;
  std::vector<DimBlock> blocks_;
  std::vector<double> refined_const_, refined_delta_, refined_rho_;
};

static_assert(kBlockRows <= 256, "the pruned pass lists a block's rows in bytes");

/// One thread's scratch for prune_block.
template <class T>
struct PruneScratch {
  std::vector<double> dist;        // each row's whitened distance to its anchor (a bound above)
  std::vector<double> block_dist;  // one row's, per dimension block
  std::vector<double> terms;       // one row's whitened squared distance, dimension by dimension
  // The block's evaluated pairs: rows' anchors first (one a row, in row order), then each row's
  // other kept pairs, from first[r] to first[r + 1]; component, row and log-density.
  std::vector<int> comp;
  std::vector<std::uint8_t> row;
  std::vector<T> logp;
  std::vector<std::size_t> first, order, prefix;
};

/// The block's responsibilities and per-row log-likelihoods, as normalise() would leave them, by
/// exact pruning: row b's anchor is read from anchors_in[b] and its new one (the component of its
/// largest responsibility) written to anchors_out[b] (which may be the same array). Adds the
/// pairs it evaluated to `evaluated`. Returns false — the caller then runs the dense pass on the
/// block, whose results the block's buffers do not yet hold — when a row's anchor is out of range,
/// a pair it keeps has a log-density that is not finite (NaN or infinite data, an impossible row),
/// or, unless `every_block`, its rows keep so many pairs that the dense pass costs less.
template <class T>
bool prune_block(const ModelView<T>& model, const PruneBounds<T>& bounds, const std::int32_t* anchors_in,
                 std::int32_t* anchors_out, Block<T>& block, PruneScratch<T>& scratch, std::int64_t& evaluated,
                 bool every_block = false);

}  // namespace mixle::kernels::cpu
