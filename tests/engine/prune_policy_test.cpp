// engine/prune_policy.hpp: which passes over a set of rows prune, from what earlier passes found
// and took — decided here from given reports and times, so the rules are tested exactly.
#include "engine/prune_policy.hpp"

#include <gtest/gtest.h>

#include <vector>

namespace mixle::engine {
namespace {

kernels::PassReport pairs(std::int64_t evaluated, std::int64_t total) {
  kernels::PassReport r;
  r.evaluated_pairs = evaluated;
  r.pairs = total;
  return r;
}

struct Rows {
  std::vector<double> values = std::vector<double>(40, 1.0);
  Dataset data = Dataset::view(values.data(), 20, 2);
};

TEST(PrunePolicy, TheFirstPassIsDenseAndAnchorsTheRows) {
  Rows rows;
  PrunePolicy policy;
  const PrunePolicy::Pass first = policy.next(rows.data);
  EXPECT_FALSE(first.prune);
  ASSERT_NE(first.anchors, nullptr);
  EXPECT_EQ(first.anchors[0], -1);  // none yet
  policy.done(pairs(100, 100), 0.01);
  const PrunePolicy::Pass second = policy.next(rows.data);
  EXPECT_TRUE(second.prune);
  EXPECT_EQ(second.anchors, first.anchors);
}

TEST(PrunePolicy, APassThatPrunesLittleWaitsFourThenEightPasses) {
  Rows rows;
  PrunePolicy policy;
  policy.next(rows.data);
  policy.done(pairs(100, 100), 0.001);
  ASSERT_TRUE(policy.next(rows.data).prune);
  policy.done(pairs(51, 100), 0.001);  // more than half evaluated
  for (int wait = 0; wait < 4; ++wait) {
    const PrunePolicy::Pass p = policy.next(rows.data);
    EXPECT_FALSE(p.prune) << wait;
    EXPECT_EQ(p.anchors != nullptr, wait == 3) << "anchors are recorded only for the try: " << wait;
    policy.done(pairs(100, 100), 0.001);
  }
  ASSERT_TRUE(policy.next(rows.data).prune);
  policy.done(pairs(90, 100), 0.001);
  for (int wait = 0; wait < 8; ++wait) {
    EXPECT_FALSE(policy.next(rows.data).prune) << wait;
    policy.done(pairs(100, 100), 0.001);
  }
  ASSERT_TRUE(policy.next(rows.data).prune);
  policy.done(pairs(50, 100), 0.001);  // half is not more than half: kept, and the wait starts over
  EXPECT_TRUE(policy.next(rows.data).prune);
  policy.done(pairs(60, 100), 0.001);
  for (int wait = 0; wait < 4; ++wait) {
    EXPECT_FALSE(policy.next(rows.data).prune) << wait;
    policy.done(pairs(100, 100), 0.001);
  }
  EXPECT_TRUE(policy.next(rows.data).prune);
}

TEST(PrunePolicy, APrunedPassSlowerThanTheDenseOneWaitsWherePassesAreTimed) {
  Rows rows;
  PrunePolicy policy;
  policy.next(rows.data);
  policy.done(pairs(100, 100), 0.010);
  ASSERT_TRUE(policy.next(rows.data).prune);
  policy.done(pairs(10, 100), 0.0094);  // under 95 % of 10 ms: kept
  ASSERT_TRUE(policy.next(rows.data).prune);
  policy.done(pairs(10, 100), 0.0096);  // over: wait
  EXPECT_FALSE(policy.next(rows.data).prune);
  // Dense passes under 5 ms are not timed: a slower pruned pass is kept on its share.
  Rows small;
  policy.next(small.data);
  policy.done(pairs(100, 100), 0.0049);
  ASSERT_TRUE(policy.next(small.data).prune);
  policy.done(pairs(10, 100), 0.02);
  EXPECT_TRUE(policy.next(small.data).prune);
}

TEST(PrunePolicy, EverySeventeenthPassIsDenseWhilePruningIsKept) {
  Rows rows;
  PrunePolicy policy;
  policy.next(rows.data);
  policy.done(pairs(100, 100), 0.01);
  for (int round = 0; round < 2; ++round) {
    for (int i = 0; i < 16; ++i) {
      ASSERT_TRUE(policy.next(rows.data).prune) << round << " " << i;
      policy.done(pairs(5, 100), 0.002);
    }
    const PrunePolicy::Pass dense = policy.next(rows.data);
    EXPECT_FALSE(dense.prune) << round;
    EXPECT_NE(dense.anchors, nullptr);
    policy.done(pairs(100, 100), 0.01);
  }
}

TEST(PrunePolicy, EachSetOfRowsHasItsOwnAnchorsAndChoices) {
  Rows a, b;
  PrunePolicy policy;
  const PrunePolicy::Pass pa = policy.next(a.data);
  policy.done(pairs(100, 100), 0.001);
  const PrunePolicy::Pass pb = policy.next(b.data);
  EXPECT_FALSE(pb.prune);  // b's first pass
  EXPECT_NE(pb.anchors, pa.anchors);
  policy.done(pairs(100, 100), 0.001);
  EXPECT_TRUE(policy.next(a.data).prune);
  policy.done(pairs(80, 100), 0.001);  // a waits; b does not
  EXPECT_TRUE(policy.next(b.data).prune);
  policy.done(pairs(5, 100), 0.001);
  EXPECT_FALSE(policy.next(a.data).prune);
  policy.done(pairs(100, 100), 0.001);
  // The same place with another row count is other rows.
  const Dataset fewer = Dataset::view(a.values.data(), 10, 2);
  EXPECT_FALSE(policy.next(fewer).prune);
  policy.done(pairs(100, 100), 0.001);
}

}  // namespace
}  // namespace mixle::engine
