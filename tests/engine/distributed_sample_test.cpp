// DistributedEncodedData::sample, which initialisations draw their rows from: every rank gets the
// rows of every rank in global row order, weights included, and each row crosses the network
// once with its C values (and its weight only when some rank's rows are weighted). Two ranks on
// threads of this process (the `threads` communicator).
#include "common/thread_ranks.hpp"
#include "engine/compute.hpp"
#include "engine/distributed_handle.hpp"

#include <mixle/data.hpp>

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

namespace mixle {
namespace {

struct Drawn {
  Dataset rows;
  std::uint64_t bytes = 0;  // the collectives' payload on this rank while sampling
  std::string error;
};

/// Rows [0, 5) on rank 0 and [5, 8) on rank 1; a target above the row count takes every row.
std::vector<Drawn> sample_on_two_ranks(const Dataset& all) {
  std::vector<Drawn> drawn(2);
  const std::vector<std::string> errors = test::on_thread_ranks(2, [&](std::size_t r, comms::Communicator& comm) {
    const std::size_t first = r ? 5 : 0;
    engine::DistributedEncodedData handle(all.slice(first, r ? 8 : 5), all.rows(), first, comm,
                                          engine::make_cpu_compute(1));
    const std::uint64_t before = comm.collective_bytes();
    drawn[r].rows = handle.sample(7, 100);
    drawn[r].bytes = comm.collective_bytes() - before;
  });
  for (std::size_t r = 0; r < 2; ++r) drawn[r].error = errors[r];
  return drawn;
}

TEST(DistributedSample, EveryRankGetsEveryRowInOrderAndEachRowIsSentOnce) {
  std::vector<double> values(16);
  for (std::size_t i = 0; i < values.size(); ++i) values[i] = static_cast<double>(i);
  const Dataset plain = Dataset::from_vector(values, 8, 2);
  const std::vector<double> weights{1, 2, 3, 4, 5, 6, 7, 8};
  for (const bool weighted : {false, true}) {
    SCOPED_TRACE(weighted ? "weighted" : "unweighted");
    const Dataset all = weighted ? plain.with_weights(weights) : plain;
    const std::vector<Drawn> drawn = sample_on_two_ranks(all);
    for (const Drawn& d : drawn) {
      ASSERT_EQ(d.error, "");
      ASSERT_EQ(d.rows.rows(), 8u);
      ASSERT_EQ(d.rows.cols(), 2u);
      for (std::size_t i = 0; i < values.size(); ++i) EXPECT_EQ(d.rows.at(i / 2, i % 2), values[i]) << i;
      ASSERT_EQ(d.rows.weighted(), weighted);
      if (weighted)
        for (std::size_t r = 0; r < 8; ++r) EXPECT_EQ(d.rows.weights()[r], weights[r]) << r;
      // Two all-gathers over 2 ranks: each rank's (count, weighted) pair, then each rank's rows
      // padded to the larger share (5), 2 values a row, 3 with a weight.
      const std::uint64_t per_row = weighted ? 3 : 2;
      EXPECT_EQ(d.bytes, 2 * (2 + 5 * per_row) * sizeof(double));
    }
  }
}

}  // namespace
}  // namespace mixle
