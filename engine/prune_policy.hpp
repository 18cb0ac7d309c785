// When the CPU Compute prunes (docs/numerics.md §8): each row's anchor, kept between the passes
// over the same rows, and the choice, pass by pass, between the pruned and the dense pass. The
// choice changes the speed only — both give the same bits — so it follows what was measured.
#pragma once

#include "kernels/model_view.hpp"

#include <mixle/data.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace mixle::engine {

class PrunePolicy {
 public:
  /// What a pass over one set of rows (resident rows, or a streamed chunk) is to do.
  struct Pass {
    std::int32_t* anchors = nullptr;  // to read and write (null: neither)
    bool prune = false;
  };

  /// The next pass over `rows` (keyed by where they are and how many: a stale entry only costs
  /// speed). The first pass is dense and gives the rows their anchors. A pruned pass that still
  /// evaluated more than half of its pairs, or (where the dense pass took 5 ms or more) took
  /// more than 95 % of the last dense pass's time, makes the next passes dense — 4, then 8, … up
  /// to 64 of them before the next try — and every 17th pass while pruning is kept is dense, so
  /// that the comparison stays current.
  Pass next(const Dataset& rows) {
    Entry& e = entry(rows);
    current_ = &e;
    Pass p;
    p.prune = e.anchored && e.skip == 0 && e.since_dense < kRefresh;
    // A waiting pass records anchors only for the try that follows it.
    p.anchors = e.skip <= 1 ? e.anchors.data() : nullptr;
    e.skip = std::max(0, e.skip - 1);
    pass_ = p;
    return p;
  }

  /// What the pass next() returned found and took (seconds, wall time of the kernels' call).
  void done(const kernels::PassReport& report, double seconds) {
    Entry& e = *current_;
    if (pass_.anchors) e.anchored = true;
    if (!pass_.prune) {
      e.dense_seconds = seconds;
      e.since_dense = 0;
      return;
    }
    ++e.since_dense;
    const double share =
        report.pairs > 0 ? static_cast<double>(report.evaluated_pairs) / static_cast<double>(report.pairs) : 1.0;
    // Times are compared only where a pass is long enough to time (passes of a few thousand rows
    // are decided by the share alone, so a fit's choices there do not depend on the machine).
    const bool slower = e.dense_seconds >= kTimed && seconds > kSlower * e.dense_seconds;
    if (share <= kRetryShare && !slower) {
      e.backoff = 0;
      return;
    }
    e.backoff = e.backoff == 0 ? 4 : std::min(2 * e.backoff, 64);
    e.skip = e.backoff;
  }

 private:
  static constexpr std::size_t kEntries = 16;
  static constexpr double kRetryShare = 0.5;
  static constexpr double kSlower = 0.95;  // a pruned pass must save 5 % to be kept
  static constexpr int kRefresh = 16;      // pruned passes between two dense ones
  static constexpr double kTimed = 5e-3;   // seconds: a dense pass shorter than this is not timed
  struct Entry {
    const void* data = nullptr;
    std::vector<std::int32_t> anchors;  // −1: none yet
    bool anchored = false;              // a pass has set them
    int skip = 0, backoff = 0;          // dense passes left before the next try, and the next wait
    int since_dense = 0;                // pruned passes since the last dense one
    double dense_seconds = 0.0;         // the last dense pass's time
  };

  Entry& entry(const Dataset& rows) {
    for (Entry& e : entries_)
      if (e.data == rows.data() && e.anchors.size() == rows.rows()) return e;
    if (entries_.size() == kEntries) entries_.erase(entries_.begin());
    entries_.push_back({rows.data(), std::vector<std::int32_t>(rows.rows(), -1)});
    return entries_.back();
  }

  std::vector<Entry> entries_;
  Entry* current_ = nullptr;
  Pass pass_;
};

}  // namespace mixle::engine
