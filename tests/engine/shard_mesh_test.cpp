// The component-sharded mesh's arithmetic, which the multi-process tests exercise only at a few
// world sizes: where each rank sits (data group × component shard), which mesh sizes are
// refused, the chunks a sharded E-step exchanges, and component slices of every family.
#include "common/thread_ranks.hpp"
#include "engine_test_util.hpp"

#include "comms/thread_group.hpp"
#include "engine/component_sharded.hpp"
#include "engine/compute.hpp"
#include "engine/distributed_handle.hpp"
#include "engine/families/family_ops.hpp"

#include <mixle/error.hpp>
#include <mixle/family.hpp>

#include <gtest/gtest.h>

#include <chrono>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace mixle::engine {
namespace {

TEST(ShardMesh, EveryRankHasOnePlaceInTheMesh) {
  for (const auto& [world, groups] : {std::pair{6, 3}, std::pair{4, 1}, std::pair{4, 4}, std::pair{8, 2}}) {
    SCOPED_TRACE(std::to_string(world) + " ranks, G = " + std::to_string(groups));
    std::vector<int> seen(static_cast<std::size_t>(world), 0);
    for (int rank = 0; rank < world; ++rank) {
      const ShardMesh mesh = make_shard_mesh(world, rank, groups);
      EXPECT_EQ(mesh.world, world);
      EXPECT_EQ(mesh.groups, groups);
      EXPECT_EQ(mesh.data_groups, world / groups);
      EXPECT_EQ(mesh.rank, rank);
      ASSERT_LT(mesh.data_group(), mesh.data_groups);
      ASSERT_LT(mesh.component_group(), groups);
      ++seen[static_cast<std::size_t>(mesh.data_group() * groups + mesh.component_group())];
    }
    for (int n : seen) EXPECT_EQ(n, 1) << "each (data group, shard) cell holds exactly one rank";
  }
}

// A mesh left at its defaults is the one a process alone makes: one rank, one shard.
TEST(ShardMesh, TheDefaultMeshIsOneRankAlone) {
  const ShardMesh alone = make_shard_mesh(1, 0, 1), plain{};
  EXPECT_EQ(plain.world, alone.world);
  EXPECT_EQ(plain.groups, alone.groups);
  EXPECT_EQ(plain.data_groups, alone.data_groups);
  EXPECT_EQ(plain.rank, alone.rank);
  EXPECT_EQ(plain.world, plain.groups * plain.data_groups);
}

TEST(ShardMesh, SizesThatDoNotTileTheWorldAreRefused) {
  for (const auto& [world, groups] : {std::pair{4, 0}, std::pair{4, 5}, std::pair{6, 4}, std::pair{4, -1}}) {
    try {
      make_shard_mesh(world, 0, groups);
      ADD_FAILURE() << "G = " << groups << " over " << world << " ranks accepted";
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find("--shard-components " + std::to_string(groups) + " with " +
                                           std::to_string(world) + " rank(s)"),
                std::string::npos)
          << e.what();
    }
  }
}

// The largest shard sizes the chunks (its K_c) and their count (its rows), wherever it lies.
std::vector<std::pair<std::size_t, std::size_t>> bounds(const std::vector<RowRange>& ranges) {
  std::vector<std::pair<std::size_t, std::size_t>> out;
  for (const RowRange& r : ranges) out.emplace_back(r.begin, r.end);
  return out;
}

TEST(ComponentRanges, FollowTheResourcesThroughputAndGroupsBeyondThemTakeADefaultDevice) {
  plan::DeviceSpec fast, slow;
  fast.name = "fast";
  fast.throughput = 3.0;
  slow.name = "slow";
  slow.throughput = 1.0;
  const plan::Resources two({fast, slow});
  // Two groups on the two devices: K = 16 split 3 : 1.
  using Bounds = std::vector<std::pair<std::size_t, std::size_t>>;
  EXPECT_EQ(bounds(component_ranges(16, 2, &two)), (Bounds{{0, 12}, {12, 16}}));
  // A third group has no device in the resources: it is planned as a default device, exactly
  // as if the resources had listed one.
  plan::DeviceSpec third;
  third.name = "rank:2";
  const plan::Resources three({fast, slow, third});
  EXPECT_EQ(bounds(component_ranges(20, 3, &two)), bounds(component_ranges(20, 3, &three)));
  EXPECT_NE(bounds(component_ranges(20, 3, &three)), bounds(component_ranges(20, 3)));  // the throughputs count
}

TEST(ShardChunking, TheLargestRangeIsFoundWhereverItLies) {
  EXPECT_EQ(largest_range({}), 0u);
  EXPECT_EQ(largest_range({{0, 0}}), 0u);
  EXPECT_EQ(largest_range({{0, 5}, {5, 7}}), 5u);                      // first
  EXPECT_EQ(largest_range({{0, 2}, {2, 9}, {9, 12}}), 7u);             // middle
  EXPECT_EQ(largest_range({{100, 103}, {103, 104}, {104, 110}}), 6u);  // last, not starting at 0
}

// Placement bounds are rounded to the nearest whole 128-row block; the last range ends at the
// rows, and a bound rounded past the rows stops there (an empty last range, never a backward one).
TEST(ShardChunking, RowRangesAreRoundedToWholeBlocks) {
  auto pairs = [](const std::vector<RowRange>& ranges) {
    std::vector<std::pair<std::size_t, std::size_t>> out;
    for (const RowRange& r : ranges) out.emplace_back(r.begin, r.end);
    return out;
  };
  using P = std::vector<std::pair<std::size_t, std::size_t>>;
  EXPECT_EQ(pairs(align_row_ranges({100, 300}, 1000)), (P{{0, 128}, {128, 256}, {256, 1000}}));
  EXPECT_EQ(pairs(align_row_ranges({90}, 100)), (P{{0, 100}, {100, 100}}));
  EXPECT_EQ(pairs(align_row_ranges({}, 7)), (P{{0, 7}}));
  // Half a block and more rounds up, less rounds down: 192 = 1.5 blocks, 319 = 2.49 blocks.
  EXPECT_EQ(pairs(align_row_ranges({192, 319}, 1000)), (P{{0, 256}, {256, 256}, {256, 1000}}));
  EXPECT_EQ(pairs(align_row_ranges({191, 320}, 1000)), (P{{0, 128}, {128, 384}, {384, 1000}}));
}

// An even split is the aligned split at ⌊rows·w/parts⌋, for every row count and rank count tried
// (the products stay far from overflow here, so the reference can form them).
TEST(ShardChunking, AnEvenSplitIsTheAlignedSplitAtEqualShares) {
  for (std::size_t parts = 1; parts <= 9; ++parts)
    for (std::size_t rows = 0; rows <= 3000; rows += 7) {
      std::vector<std::size_t> splits;
      for (std::size_t w = 1; w < parts; ++w) splits.push_back(rows * w / parts);
      const std::vector<RowRange> want = align_row_ranges(splits, rows), got = even_row_ranges(rows, parts);
      ASSERT_EQ(got.size(), parts);
      for (std::size_t w = 0; w < parts; ++w) {
        ASSERT_EQ(got[w].begin, want[w].begin) << rows << " rows over " << parts << ", range " << w;
        ASSERT_EQ(got[w].end, want[w].end) << rows << " rows over " << parts << ", range " << w;
      }
    }
  // Near the top of size_t the shares are still exact (the reference would overflow here).
  const std::size_t huge = std::numeric_limits<std::size_t>::max() / 2;
  const std::vector<RowRange> two = even_row_ranges(huge, 2);
  EXPECT_EQ(two[0].begin, 0u);
  EXPECT_EQ(two[0].end, (huge / 2 + 64) / 128 * 128);
  EXPECT_EQ(two[1].end, huge);
}

// Kept log-densities take 16 MiB per chunk (chunk × K_c values), in multiples of 128 rows, from
// 128 to 65536; no chunk is larger than the largest group needs; enough chunks cover it.
TEST(ShardChunking, ChunksFollowTheKeptBudgetAndTheLargestGroup) {
  const std::vector<RowRange> big{{0, 1'000'000}, {1'000'000, 1'900'000}};
  auto rows = [&](std::size_t kc, Precision p, bool keep) { return shard_chunking(kc, p, keep, big).rows; };
  EXPECT_EQ(rows(64, Precision::fp32, true), 65536u);       // 16 MiB / 256 B = 65536
  EXPECT_EQ(rows(1000, Precision::fp32, true), 4096u);      // 4194 rounded down to 128s
  EXPECT_EQ(rows(1000, Precision::fp64, true), 2048u);      // 2097 rounded down
  EXPECT_EQ(rows(1'000'000, Precision::fp32, true), 128u);  // never below one block
  EXPECT_EQ(rows(1, Precision::fp32, true), 65536u);        // never above 65536
  EXPECT_EQ(rows(1000, Precision::fp32, false), 65536u);    // not kept: large chunks
  const ShardChunking kept = shard_chunking(1000, Precision::fp32, true, big);
  EXPECT_TRUE(kept.keep);
  EXPECT_EQ(kept.count, (1'000'000u + 4095) / 4096);  // the larger group's chunks
  EXPECT_FALSE(shard_chunking(1000, Precision::fp32, false, big).keep);
  // Small data: the chunk shrinks to the largest group, rounded up to 128.
  const ShardChunking small = shard_chunking(4, Precision::fp32, true, {{0, 300}, {300, 1000}});
  EXPECT_EQ(small.rows, 768u);
  // A largest group of whole blocks needs exactly its rows, not a block more.
  EXPECT_EQ(shard_chunking(4, Precision::fp32, true, {{0, 256}, {256, 1024}}).rows, 768u);
  EXPECT_EQ(small.count, 1u);
  EXPECT_EQ(shard_chunking(4, Precision::fp32, true, {{0, 129}}).rows, 256u);  // a block and a row: two blocks
  EXPECT_EQ(shard_chunking(4, Precision::fp32, true, {{0, 129}}).count, 1u);
  EXPECT_EQ(shard_chunking(4, Precision::fp32, true, {{0, 1}}).rows, 128u);
  EXPECT_EQ(shard_chunking(4, Precision::fp32, true, {{0, 1}}).count, 1u);
  EXPECT_EQ(shard_chunking(4, Precision::fp32, true, {{0, 128}}).count, 1u);     // exactly one chunk
  EXPECT_EQ(shard_chunking(4, Precision::fp32, false, {{0, 65537}}).count, 2u);  // one row over
  EXPECT_EQ(shard_chunking(4, Precision::fp32, true, {{0, 0}}).count, 0u);
  EXPECT_EQ(shard_chunking(4, Precision::fp32, true, {{0, 0}}).rows, 128u);  // one block even for no rows
  EXPECT_EQ(shard_chunking(4, Precision::fp32, false, {{0, 200'000}, {200'000, 200'001}}).count, 4u);
}

// Where every rank's backend keeps log-densities (the CPU's does), a sharded E-step folds from
// the kept values instead of computing them again: the estimator asks its backend once, at
// construction, and chunks for keeping.
TEST(ShardChunking, TheCpuKernelsKeepLogDensitiesBetweenTheirPasses) {
  auto world = comms::make_thread_group(1, std::chrono::seconds(10));
  const Dataset rows = Dataset::from_vector(std::vector<double>(200, 0.5), 100, 2);
  ShardedEstimator estimator(rows, 0, {{0, 100}}, make_shard_mesh(1, 0, 1), 3, *world[0], make_cpu_compute(1));
  for (Precision p : {Precision::fp32, Precision::fp64}) {
    const ShardChunking c = estimator.chunking(p);
    EXPECT_TRUE(c.keep);
    EXPECT_EQ(c.count, 1u);
    EXPECT_EQ(c.rows, 128u);
  }
}

// An E-step that folded no responsibility mass into any shard (every row weighted 0, say) leaves
// nothing to divide the weights by: the M-step refuses, as the unsharded one does, rather than
// setting every weight to 0.
TEST(ShardedMStep, NoResponsibilityMassAtAllIsAnError) {
  auto world = comms::make_thread_group(1, std::chrono::seconds(10));
  const Dataset rows = Dataset::from_vector(std::vector<double>(20, 0.5), 10, 2);
  ShardedEstimator estimator(rows, 0, {{0, 10}}, make_shard_mesh(1, 0, 1), 2, *world[0], make_cpu_compute(1));
  Model shard;
  shard.weights = {0.5, 0.5};
  Part p = test::make_part(Family::bernoulli, 0, 2);
  p.prob = {0.25, 0.5, 0.75, 0.5};
  shard.parts = {p};
  EstimatorOptions o;
  o.precision = Precision::fp64;
  ShardEStep step;
  step.stats.assign(static_cast<std::size_t>(stat_layout(shard).size), 0.0);
  test::expect_invalid_input([&] { (void)estimator.m_step(shard, step, o); }, {"no responsibility mass"});
  // The same statistics with mass: the weights are each component's share of it.
  step.stats[kernels::kStatHeader] = 3.0;
  step.stats[kernels::kStatHeader + 1] = 1.0;
  step.nonempty_mass = 4.0;
  const MStepResult r = estimator.m_step(shard, step, o);
  EXPECT_EQ(r.model.weights, (std::vector<double>{0.75, 0.25}));
}

/// The CPU kernels behind the base interface only: a backend that keeps no log-densities between
/// its passes (as the CUDA one, which recomputes them).
class CpuKeepingNothing : public Compute {
 public:
  std::string name() const override { return "keeping nothing"; }
  kernels::PassReport accumulate(const Model& m, const Dataset& d, Precision p, std::vector<double>& s) override {
    return inner_->accumulate(m, d, p, s);
  }
  kernels::PassReport score(const Model& m, const Dataset& d, Precision p, double* ll, double* resp) override {
    return inner_->score(m, d, p, ll, resp);
  }
  void accumulate_given(const Model& m, const Dataset& d, const double* resp, std::vector<double>& s) override {
    inner_->accumulate_given(m, d, resp, s);
  }

 private:
  std::unique_ptr<Compute> inner_ = make_cpu_compute(1);
};

// Chunking is one decision for the world: where one rank's backend keeps nothing, every rank
// chunks for recomputing — the rank whose CPU kernels could keep as well (the ranks must walk the
// same chunks, or their exchanges would not pair up).
TEST(ShardChunking, OneRankThatKeepsNothingMakesEveryRankChunkForRecomputing) {
  const Dataset rows = Dataset::from_vector(std::vector<double>(300, 0.5), 300, 1);
  for (const bool mixed : {false, true}) {
    SCOPED_TRACE(mixed ? "rank 1 keeps nothing" : "both keep");
    std::vector<int> keeps(2, -1);
    const auto errors = test::on_thread_ranks(2, [&](std::size_t r, comms::Communicator& comm) {
      std::unique_ptr<Compute> compute = mixed && r == 1 ? std::make_unique<CpuKeepingNothing>() : make_cpu_compute(1);
      ShardedEstimator estimator(rows, 0, {{0, 300}}, make_shard_mesh(2, static_cast<int>(r), 2), 1, comm,
                                 std::move(compute));
      keeps[r] = estimator.chunking(Precision::fp32).keep ? 1 : 0;
    });
    EXPECT_EQ(errors, (std::vector<std::string>{"", ""}));
    EXPECT_EQ(keeps, (std::vector<int>(2, mixed ? 0 : 1)));
  }
}

/// The CPU kernels, except that scoring fails: a rank whose backend breaks in the E-step.
class FailingScore final : public CpuKeepingNothing {
 public:
  std::string name() const override { return "failing"; }
  kernels::PassReport score(const Model&, const Dataset&, Precision, double*, double*) override {
    throw InvalidInput("injected scoring failure");
  }
};

// Three component shards of one data group; the third rank's backend fails as it scores. Every
// row is impossible under the first two shards' components and certain under the third's, so a
// rank that went on to combine the chunk without the failed shard would find every row
// impossible and raise that instead: each rank must stop at the failed shard and raise its error.
TEST(ShardedEStep, AShardsFailureStopsTheOtherShardsBeforeTheyCombine) {
  constexpr int G = 3;
  auto world = comms::make_thread_group(G, std::chrono::seconds(20));
  Model whole;
  whole.weights = {0.25, 0.25, 0.5};
  Part p = test::make_part(Family::categorical, 0, 1, 3);
  p.prob = {0.5, 0.5, 0.0, 0.3, 0.7, 0.0, 0.0, 0.0, 1.0};
  whole.parts = {p};
  const Dataset rows = Dataset::from_vector(std::vector<double>(300, 2.0), 300, 1);
  std::vector<std::string> errors(G);
  std::vector<std::thread> ranks;
  for (int r = 0; r < G; ++r)
    ranks.emplace_back([&, r] {
      try {
        std::unique_ptr<Compute> compute = r == 2 ? std::make_unique<FailingScore>() : make_cpu_compute(1);
        ShardedEstimator estimator(rows, 0, {{0, 300}}, make_shard_mesh(G, r, G), 1,
                                   *world[static_cast<std::size_t>(r)], std::move(compute));
        (void)estimator.e_step(slice_components(whole, static_cast<std::size_t>(r), static_cast<std::size_t>(r) + 1),
                               EstimatorOptions{});
        errors[static_cast<std::size_t>(r)] = "no error";
      } catch (const std::exception& e) {
        errors[static_cast<std::size_t>(r)] = e.what();
      }
    });
  for (std::thread& t : ranks) t.join();
  for (int r = 0; r < G; ++r) {
    const std::string& e = errors[static_cast<std::size_t>(r)];
    EXPECT_NE(e.find("injected scoring failure"), std::string::npos) << "rank " << r << ": " << e;
    if (r != 2) EXPECT_NE(e.find("rank 2"), std::string::npos) << "rank " << r << ": " << e;
  }
}

// A slice keeps its components' parameters (every array of every family) and global weights.
TEST(SliceComponents, EveryFamilysArraysAreSliced) {
  constexpr std::size_t K = 5, D = 2;
  std::mt19937_64 rng(3);
  Model model;
  model.weights = {0.1, 0.2, 0.3, 0.15, 0.25};
  std::size_t column = 0;
  for (const FamilyDescriptor* family : family_descriptors()) {
    Part p;
    p.family = family->family;
    p.col_begin = column;
    p.col_end = column += D;
    if (family->categories) p.categories = 3;
    family_ops(family->family).draw_benchmark_parameters(p, K, rng);
    model.parts.push_back(p);
  }
  const Model slice = slice_components(model, 1, 4);
  EXPECT_EQ(slice.weights, (std::vector<double>{0.2, 0.3, 0.15}));
  ASSERT_EQ(slice.parts.size(), model.parts.size());
  for (std::size_t i = 0; i < model.parts.size(); ++i)
    for (const ParamDescriptor& param : family_descriptor(model.parts[i].family).params) {
      const std::vector<double>& whole = model.parts[i].*param.values;
      const std::size_t per = whole.size() / K;
      EXPECT_EQ(slice.parts[i].*param.values, std::vector<double>(whole.begin() + static_cast<std::ptrdiff_t>(per),
                                                                  whole.begin() + static_cast<std::ptrdiff_t>(4 * per)))
          << family_name(model.parts[i].family) << "." << param.name;
    }
  EXPECT_EQ(model_parameter_bytes(slice) * 5, model_parameter_bytes(model) * 3);
  // Ranges that are empty or leave [0, K) are refused, naming the range.
  for (const auto& [begin, end] : {std::pair<std::size_t, std::size_t>{2, 2}, {3, 1}, {4, 6}, {5, 6}}) {
    try {
      slice_components(model, begin, end);
      ADD_FAILURE() << "[" << begin << ", " << end << ") accepted";
    } catch (const InvalidInput& e) {
      EXPECT_NE(std::string(e.what()).find("component range [" + std::to_string(begin) + ", " + std::to_string(end) +
                                           ") is not a non-empty part of [0, 5)"),
                std::string::npos)
          << e.what();
    }
  }
}

}  // namespace
}  // namespace mixle::engine
