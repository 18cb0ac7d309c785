// The distributed handle over ranks that hold one row, no row and the rest: every reduced result
// is the one-process handle's over all the rows (statistics to float64 rounding: the sums are
// taken in another order). Three ranks on threads of this process (the `threads` communicator).
#include "common/thread_ranks.hpp"
#include "engine/compute.hpp"
#include "engine/distributed_handle.hpp"
#include "engine/local_handle.hpp"

#include <mixle/data.hpp>
#include <mixle/model.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <string>
#include <vector>

namespace mixle {
namespace {

constexpr std::size_t kRows = 40;

/// Rows of two columns, weighted, that no two components fit alike.
Dataset rows() {
  std::vector<double> v(kRows * 2), w(kRows);
  for (std::size_t r = 0; r < kRows; ++r) {
    v[2 * r] = std::sin(0.7 * static_cast<double>(r)) * 3.0 + (r % 2 ? 4.0 : 0.0);
    v[2 * r + 1] = std::cos(1.3 * static_cast<double>(r)) + 0.1 * static_cast<double>(r);
    w[r] = 0.5 + static_cast<double>(r % 5);
  }
  return Dataset::from_vector(std::move(v), kRows, 2).with_weights(std::move(w));
}

Model two_components() {
  return model_from_json(R"({"format":"mixle-model","version":1,"weights":[0.4,0.6],"parts":[
    {"family":"gaussian_diag","columns":[0,2],"mean":[[0,1],[4,2]],"var":[[2,1],[1,3]]}]})");
}

/// Hard assignment by global row: odd rows to component 1 (so a rank must pass its rows' global
/// place).
void assign(const Dataset& part, std::size_t first, std::size_t K, std::size_t* label) {
  for (std::size_t r = 0; r < part.rows(); ++r) label[r] = (first + r) % K;
}

/// What one handle computes, on one rank or the only process.
struct Results {
  std::size_t rows = 0;
  double total_weight = 0.0;
  std::vector<double> column_max, assigned, statistics, folded;
};

Results compute(EncodedData& h) {
  Results out;
  out.rows = h.rows();
  out.total_weight = h.total_weight();
  out.column_max = h.column_max();
  const Model model = two_components();
  out.assigned = h.accumulate_assigned(model, assign).values;
  engine::EstimatorOptions options;
  options.precision = engine::Precision::fp64;
  out.statistics = h.stream_accumulate(model, options).values;
  // Σ over rows of (global row index + 1) · first value: each row counted once, at its own place.
  out.folded.assign(1, 0.0);
  h.fold_rows(out.folded, [&](const Dataset& part, std::size_t first) {
    for (std::size_t r = 0; r < part.rows(); ++r) out.folded[0] += static_cast<double>(first + r + 1) * part.at(r, 0);
  });
  return out;
}

void expect_near_all(const std::vector<double>& got, const std::vector<double>& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (std::size_t i = 0; i < got.size(); ++i)
    EXPECT_NEAR(got[i], want[i], 1e-12 * std::max(1.0, std::abs(want[i]))) << what << " [" << i << "]";
}

TEST(DistributedHandle, RanksWithOneRowOrNoneAddUpToTheWholeFile) {
  const Dataset all = rows();
  engine::LocalEncodedData whole(all, engine::make_cpu_compute(1));
  const Results want = compute(whole);

  // Rank 0: row 0 only; rank 1: no row; rank 2: rows [1, kRows).
  const std::size_t bounds[] = {0, 1, 1, kRows};
  std::vector<Results> got(3);
  const std::vector<std::string> errors = test::on_thread_ranks(3, [&](std::size_t r, comms::Communicator& comm) {
    engine::DistributedEncodedData h(all.slice(bounds[r], bounds[r + 1]), kRows, bounds[r], comm,
                                     engine::make_cpu_compute(1));
    EXPECT_EQ(h.local_rows(), bounds[r + 1] - bounds[r]);
    EXPECT_EQ(h.first_row(), bounds[r]);
    got[r] = compute(h);
  });
  for (std::size_t r = 0; r < 3; ++r) {
    SCOPED_TRACE("rank " + std::to_string(r));
    ASSERT_EQ(errors[r], "");
    EXPECT_EQ(got[r].rows, kRows);
    EXPECT_DOUBLE_EQ(got[r].total_weight, want.total_weight);
    EXPECT_EQ(got[r].column_max, want.column_max);
    expect_near_all(got[r].assigned, want.assigned, "accumulate_assigned");
    expect_near_all(got[r].statistics, want.statistics, "stream_accumulate");
    expect_near_all(got[r].folded, want.folded, "fold_rows");
    // Every rank holds the same reduced bytes.
    EXPECT_EQ(got[r].assigned, got[0].assigned);
    EXPECT_EQ(got[r].statistics, got[0].statistics);
  }
}

}  // namespace
}  // namespace mixle
