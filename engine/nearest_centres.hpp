// k-means's one rule — the nearest centre is the lowest index at the least squared distance,
// each distance summed over the coordinates in order in float64 — and a fast way to apply it to
// many points: a float32 matrix-product screen whose rounding is bounded, so that only the
// centres the bound cannot separate are measured by the rule itself.
#pragma once

#include <cstddef>
#include <vector>

// x86-64 with GCC: also builds of a function for the CPUs that have them, chosen at load time.
// The rule's loop and k-means++'s seeding step get an AVX2 build without FMA (the same bits as
// the plain loop); the screen gets an x86-64-v3 build (AVX2 and FMA: its rounding is bounded,
// not fixed). Not under
// ThreadSanitizer: it instruments the load-time resolver, which then runs before the sanitizer's
// runtime is up and crashes every program at load; those builds keep the default version.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__SANITIZE_THREAD__)
#define MIXLE_WITH_AVX2_CLONE __attribute__((target_clones("avx2", "default")))
#define MIXLE_WITH_FMA_CLONE __attribute__((target_clones("arch=x86-64-v3", "default")))
#else
#define MIXLE_WITH_AVX2_CLONE
#define MIXLE_WITH_FMA_CLONE
#endif

namespace mixle::engine {

/// The nearest of K centres stored by coordinate (centres_t[c·K + k]) to x[0 … C): the lowest k
/// at the least squared distance, each distance summed over c in order 0 … C−1 — the k-means
/// steps' one rule, so labels do not depend on how the loops are arranged or threaded.
std::size_t nearest_centre(const double* x, const double* centres_t, std::size_t K, std::size_t C);

/// The least float above v — std::nextafter(v, +inf) without the library call, which labelling
/// made once a point. +inf and NaN are returned as they are.
float next_float_up(float v);

/// K centres (row-major K × C, float64) prepared for labelling many points by nearest_centre's
/// rule. For a point x, ‖x − c_k‖² − ‖x‖² = ‖c_k‖² − 2 x·c_k is computed for every centre as a
/// float32 product (fused multiply-adds, register-blocked: about one instruction per eight
/// (point, centre, coordinate) triples), whose error is at most β (‖x‖ + ‖c_k‖)², β = 2(C + 6)·2⁻²⁴
/// (the bound's derivation: docs/engine.md, "Initialisation"). The rule's own float64 distance is
/// within 2(C + 1)·2⁻⁵³ (‖x‖ + ‖c_k‖)² of the exact one, which β's factor of 2 covers. A centre
/// whose screened value minus its bound exceeds the least screened value plus its bound cannot
/// be the nearest (first tried with the largest centre's bound for all, then with each one's);
/// when one centre remains it is the rule's answer, otherwise the rule runs on the centres that
/// remain (in index order, so ties still go to the lowest index). Labels are therefore
/// nearest_centre's, bit for bit, however close the distances.
class CentreSet {
 public:
  CentreSet(const std::vector<double>& centres, std::size_t K, std::size_t C);

  /// label[i] = nearest_centre of point i of `points` (m × C row-major), for i < m.
  /// Returns how many points the screen left more than one candidate (measured by the rule).
  std::size_t nearest(const double* points, std::size_t m, std::size_t* label) const;

  std::size_t size() const noexcept { return K_; }

 private:
  std::size_t K_, C_, padded_;    // padded_: K rounded up to the screen's lane group
  std::vector<double> by_coord_;  // C × K, float64 (the rule's layout)
  std::vector<float> screen_t_;   // C × padded_, float32 (zero past K)
  std::vector<float> norm2_;      // ‖ĉ_k‖² rounded to float32 (padded_: +inf past K)
  std::vector<double> norm_;      // ‖c_k‖, float64
  double widest_norm_ = 0.0;      // max_k ‖c_k‖
  bool screenable_ = true;        // false when a centre is not finite or too large for float32
};

}  // namespace mixle::engine
