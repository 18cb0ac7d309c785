// plan() → Placement: byte model, proportional split, num_chunks, memory caps, validate() and
// JSON (docs/planning.md, "plan() → Placement").
#include <mixle/error.hpp>
#include <mixle/plan.hpp>

#include "plan/apportion.hpp"
#include "plan/test_util.hpp"

#include <nlohmann/json.hpp>

#include <cmath>
#include <limits>
#include <sstream>

using namespace mixle::plan;
using mixle::InvalidInput;
using mixle::MemoryError;
using mixle::plan::testing::device;
using mixle::plan::testing::expect_mentions;
using mixle::plan::testing::gmm;
using mixle::plan::testing::message_of;

namespace {

void expect_tiles(const Placement& p) {
  std::uint64_t cursor = 0;
  for (const PlacementShard& s : p.shards) {
    EXPECT_EQ(s.start, cursor);
    EXPECT_GT(s.size(), 0u);
    cursor = s.stop;
  }
  EXPECT_EQ(cursor, p.total_rows);
}

}  // namespace

TEST(PlacementMemoryModel, FamilyFormulas) {
  // gaussian_diag D=3, K=4: params 4·(1 + 2·3) = 28 doubles; statistics 4·(1 + 6) + 2 = 30.
  EXPECT_EQ(gmm(4, 3).parameter_bytes(), 28u * 8);
  EXPECT_EQ(gmm(4, 3).statistic_bytes(), 30u * 8);
  // gaussian_full D=2: D + D² = 6 per component, + 1 weight/count.
  ModelSummary full{2, {{"gaussian_full", 2, 0}}};
  EXPECT_EQ(full.parameter_bytes(), 2u * 7 * 8);
  EXPECT_EQ(full.statistic_bytes(), (2u * 7 + 2) * 8);
  // A record: categorical D=2 V=5 (10), poisson D=3 (3), bernoulli D=1 (1), exponential D=2 (2).
  ModelSummary mixed{3, {{"categorical", 2, 5}, {"poisson", 3, 0}, {"bernoulli", 1, 0}, {"exponential", 2, 0}}};
  EXPECT_EQ(mixed.columns(), 8u);
  EXPECT_EQ(mixed.statistic_values_per_component(), 1u + 10 + 3 + 1 + 2);
  EXPECT_EQ(mixed.parameter_bytes(), 3u * 17 * 8);
}

TEST(PlacementMemoryModel, RejectsBadModelsNamingThePart) {
  expect_mentions(message_of<InvalidInput>([] {
                    ModelSummary{2, {{"weibull", 1, 0}}}.validate();
                  }),
                  {"part 0", "family='weibull'", "gaussian_diag", "bernoulli"});
  // The categorical rule is the model file's: V ≥ 1 (a column that only ever holds code 0 is a
  // valid fit), and only families with categories state V.
  expect_mentions(message_of<InvalidInput>([] {
                    ModelSummary{2, {{"categorical", 1, 0}}}.validate();
                  }),
                  {"part 0", "categories=0", "categories ≥ 1"});
  EXPECT_NO_THROW((ModelSummary{2, {{"categorical", 1, 1}}}.validate()));
  expect_mentions(message_of<InvalidInput>([] {
                    ModelSummary{2, {{"gaussian_diag", 2, 0}, {"poisson", 1, 3}}}.validate();
                  }),
                  {"part 1", "categories=3", "poisson", "categories 0"});
  // Sizes of an unknown family are refused too (without validate()).
  expect_mentions(message_of<InvalidInput>([] {
                    ModelSummary{2, {{"weibull", 1, 0}}}.statistic_values_per_component();
                  }),
                  {"family='weibull'"});
  expect_mentions(message_of<InvalidInput>([] {
                    ModelSummary{0, {{"poisson", 1, 0}}}.validate();
                  }),
                  {"components=0", "K ≥ 1"});
}

TEST(Placement, EstimatesRowsAndBytesFromModel) {
  PlanOptions o{.rows = 1000, .model = gmm(4, 3)};
  Placement p = plan(Resources::single_cpu(), o);
  expect_tiles(p);
  EXPECT_EQ(p.encoded_row_bytes, 3 * 4);    // 3 float32 columns
  EXPECT_EQ(p.transient_row_bytes, 4 * 4);  // K float32 log-densities/responsibilities
  EXPECT_GT(p.model_bytes, 0u);
  EXPECT_EQ(p.dtype_bytes, 4u);
  ASSERT_EQ(p.shards.size(), 1u);
  // encoded = ceil(1000·12·1.25); transient = ceil(1000·16·1.25) + ceil((224 + 240)·1.25).
  EXPECT_EQ(p.shards[0].encoded_bytes, 15000u);
  EXPECT_EQ(p.shards[0].transient_bytes, 20000u + 580u);
  EXPECT_NE(p.to_string().find("Placement("), std::string::npos);
  EXPECT_NE(p.to_string().find("cpu:0[0:1000] rows=1000"), std::string::npos);
  EXPECT_NE(p.to_json().find("\"total_rows\":1000"), std::string::npos);
}

TEST(Placement, WorkingSetIsOneChunkNotTheWholeShard) {
  PlanOptions o{.rows = 1'000'000, .model = gmm(8, 2), .rows_per_chunk = 1000, .safety_factor = 1.0};
  Placement p = plan(Resources::single_cpu(), o);
  const std::uint64_t fixed = gmm(8, 2).parameter_bytes() + gmm(8, 2).statistic_bytes();
  EXPECT_EQ(p.shards[0].transient_bytes, 1000u * 8 * 4 + fixed);
  EXPECT_EQ(p.shards[0].encoded_bytes, 1'000'000u * 2 * 4);
  PlanOptions f64 = o;
  f64.precision = "float64";
  f64.data_dtype_bytes = 8;
  Placement q = plan(Resources::single_cpu(), f64);
  EXPECT_EQ(q.shards[0].transient_bytes, 1000u * 8 * 8 + fixed);
  EXPECT_EQ(q.shards[0].encoded_bytes, 1'000'000u * 2 * 8);
  for (const char* half : {"float16", "bfloat16"}) {  // 2-byte compute precisions
    PlanOptions h = o;
    h.precision = half;
    Placement r = plan(Resources::single_cpu(), h);
    EXPECT_EQ(r.dtype_bytes, 2u) << half;
    EXPECT_EQ(r.shards[0].transient_bytes, 1000u * 8 * 2 + fixed) << half;
  }
}

TEST(Placement, WeightedResourcesGetProportionalChunks) {
  Resources r({device("slow", 1), device("fast", 3)});
  Placement p = plan(r, {.rows = 100, .model = gmm(2, 1)});
  ASSERT_EQ(p.shards.size(), 2u);
  EXPECT_EQ(p.shards[0].device.name, "slow");
  EXPECT_EQ(p.shards[0].size(), 25u);
  EXPECT_EQ(p.shards[1].device.name, "fast");
  EXPECT_EQ(p.shards[1].size(), 75u);
  // Uneven: 3 equal devices over 10 rows → 4/3/3 (the first deficit wins ties).
  Resources three({device("a", 1), device("b", 1), device("c", 1)});
  Placement q = plan(three, {.rows = 10, .model = gmm(2, 1)});
  ASSERT_EQ(q.shards.size(), 3u);
  EXPECT_EQ(q.shards[0].size(), 4u);
  EXPECT_EQ(q.shards[1].size(), 3u);
  expect_tiles(q);
  // As many rows as devices: one row each; fewer: the first deficits take one, the rest none.
  Placement one_each = plan(three, {.rows = 3, .model = gmm(2, 1)});
  ASSERT_EQ(one_each.shards.size(), 3u);
  for (const PlacementShard& s : one_each.shards) EXPECT_EQ(s.size(), 1u) << s.device.name;
  expect_tiles(one_each);
  Placement two = plan(three, {.rows = 2, .model = gmm(2, 1)});
  ASSERT_EQ(two.shards.size(), 2u);
  EXPECT_EQ(two.shards[0].device.name, "a");
  EXPECT_EQ(two.shards[1].device.name, "b");
  expect_tiles(two);
  // A trillion rows split as exactly: the rule starts from the floors, so it adds a few rows,
  // not one at a time from zero.
  Placement t = plan(r, {.rows = 1'000'000'000'001ull, .model = gmm(2, 1)});
  ASSERT_EQ(t.shards.size(), 2u);
  EXPECT_EQ(t.shards[0].size(), 250'000'000'000u);
  EXPECT_EQ(t.shards[1].size(), 750'000'000'001u);
}

// The largest-remainder rule's next unit goes where the share falls furthest short, the first
// of equal shortfalls (rows and component shards both split with it).
TEST(Placement, TheNextUnitGoesToTheLargestDeficit) {
  using detail::largest_deficit;
  EXPECT_EQ(largest_deficit({0.5, 0.5}, {0, 0}, 1), 0u);          // a tie: the first
  EXPECT_EQ(largest_deficit({0.25, 0.75}, {0, 0}, 4), 1u);        // 0.75 short beats 0.25
  EXPECT_EQ(largest_deficit({0.25, 0.75}, {1, 2}, 4), 1u);        // 0.25 − 1/4 = 0 < 0.75 − 2/4
  EXPECT_EQ(largest_deficit({0.2, 0.4, 0.4}, {1, 1, 1}, 3), 1u);  // 0.4 − 1/3 twice: the first of them
  EXPECT_EQ(largest_deficit({0.1, 0.2, 0.7}, {0, 0, 3}, 4), 1u);  // the last over its share
}

TEST(Placement, ManualNumChunksAssignsBlocksOverWeightedDevices) {
  Resources r({device("slow", 1), device("fast", 3)});
  Placement p = plan(r, {.rows = 40, .model = gmm(2, 1), .num_chunks = 4});
  ASSERT_EQ(p.shards.size(), 4u);
  EXPECT_EQ(p.for_device("fast").size(), 3u);
  EXPECT_EQ(p.for_device("slow").size(), 1u);
  EXPECT_EQ(p.shards[0].device.name, "slow");  // block assignment, not round-robin
  for (const PlacementShard& s : p.shards) EXPECT_EQ(s.size(), 10u);
  // More chunks than rows: empty ranges dropped.
  Placement q = plan(r, {.rows = 3, .model = gmm(2, 1), .num_chunks = 8});
  expect_tiles(q);
  EXPECT_EQ(q.shards.size(), 3u);
}

TEST(Placement, MemoryCapSplitsLargeShard) {
  // One component over 4 columns: 16 data + 4 working-set bytes a row, 160 fixed bytes; 200 rows
  // need 4160 bytes, over the 4000 available.
  Resources r({device("cpu:0", 1, 4000)});
  Placement p = plan(r, {.rows = 200, .model = gmm(1, 4), .rows_per_chunk = 0, .safety_factor = 1.0});
  EXPECT_GT(p.shards.size(), 1u);
  expect_tiles(p);
  for (const PlacementShard& s : p.shards) EXPECT_LE(s.total_bytes(), 4000u);
  // Cutting the limit a little more never loses rows.
  Resources tight({device("cpu:0", 1, 700)});
  Placement q = plan(tight, {.rows = 200, .model = gmm(1, 4), .rows_per_chunk = 16, .safety_factor = 1.0});
  expect_tiles(q);
  for (const PlacementShard& s : q.shards) EXPECT_LE(s.total_bytes(), 700u);
  // A shard that needs exactly the memory fits: 100 rows take 20 · 100 + 160 = 2160 bytes.
  Resources exact({device("cpu:0", 1, 2160)});
  Placement e = plan(exact, {.rows = 200, .model = gmm(1, 4), .rows_per_chunk = 0, .safety_factor = 1.0});
  ASSERT_EQ(e.shards.size(), 2u);
  EXPECT_EQ(e.shards[0].size(), 100u);
  EXPECT_EQ(e.shards[0].total_bytes(), 2160u);
}

// Memory for one row but not two (180 bytes a row with the fixed state, 200 for two): a shard
// of one row each, none past the memory.
TEST(Placement, MemoryForOneRowGivesOneRowShards) {
  Resources r({device("cpu:0", 1, 199)});
  Placement p = plan(r, {.rows = 5, .model = gmm(1, 4), .rows_per_chunk = 0, .safety_factor = 1.0});
  expect_tiles(p);
  ASSERT_EQ(p.shards.size(), 5u);
  for (const PlacementShard& s : p.shards) {
    EXPECT_EQ(s.size(), 1u);
    EXPECT_EQ(s.total_bytes(), 180u);
  }
}

TEST(Placement, FixedStateThatCannotFitFails) {
  Resources r({device("cpu:0", 1, 1)});
  auto msg = message_of<MemoryError>([&] { plan(r, {.rows = 10, .model = gmm(4, 3)}); });
  expect_mentions(msg, {"fixed model/statistic state", "cpu:0", "memory_bytes=1", "accepted"});
}

TEST(Placement, RejectsBadOptions) {
  Resources r = Resources::single_cpu();
  // The safety factor is checked before any byte is estimated with it: 0, negative, NaN, inf.
  for (const double factor : {0.0, -1.0, std::nan(""), std::numeric_limits<double>::infinity()}) {
    std::ostringstream shown;
    shown << factor;
    expect_mentions(
        message_of<InvalidInput>([&] { plan(r, {.rows = 5, .model = gmm(1, 1), .safety_factor = factor}); }),
        {"safety_factor=" + shown.str() + " is invalid", "a finite number > 0"});
  }
  expect_mentions(message_of<InvalidInput>([&] { plan(r, {.rows = 5, .model = gmm(1, 1), .sub_chunks = 0}); }),
                  {"sub_chunks=0"});
  expect_mentions(message_of<InvalidInput>([&] { plan(r, {.rows = 5, .model = gmm(1, 1), .num_chunks = 0}); }),
                  {"num_chunks=0"});
  expect_mentions(message_of<InvalidInput>([&] { plan(r, {.rows = 5}); }), {"columns=0", "rows=5"});
  expect_mentions(message_of<InvalidInput>([&] { plan(r, {.rows = 5, .model = gmm(1, 1), .precision = "int8"}); }),
                  {"precision='int8'", "accepted"});
}

TEST(Placement, ZeroRowsIsOneEmptyShardOnTheFastest) {
  Resources r({device("a", 1), device("b", 2)});
  Placement p = plan(r, {.rows = 0, .model = gmm(2, 1)});
  ASSERT_EQ(p.shards.size(), 1u);
  EXPECT_EQ(p.shards[0].device.name, "b");
  EXPECT_EQ(p.shards[0].size(), 0u);
  EXPECT_NO_THROW(p.validate(0));
  // Zero rows need no shard at all; any rows need one.
  Placement none = p;
  none.shards.clear();
  EXPECT_NO_THROW(none.validate(0));
  none.total_rows = 1;
  expect_mentions(message_of<InvalidInput>([&] { none.validate(); }), {"total_rows=1", "no shards"});
}

TEST(Placement, ValidateRequiresExactCoverageAndKnownDevices) {
  Resources r({device("a", 1), device("b", 1)});
  Placement p = plan(r, {.rows = 10, .model = gmm(2, 1)});
  Placement overlap = p;
  overlap.shards[1].start = 4;
  expect_mentions(message_of<InvalidInput>([&] { overlap.validate(); }), {"overlap", "row 4"});
  Placement gap = p;
  gap.shards[1].start = 6;
  expect_mentions(message_of<InvalidInput>([&] { gap.validate(); }), {"gap", "row 5"});
  Placement short_end = p;
  short_end.shards[1].stop = 9;
  expect_mentions(message_of<InvalidInput>([&] { short_end.validate(); }), {"gap", "total_rows=10"});
  Placement foreign = p;
  foreign.shards[0].device = device("stranger", 1);
  expect_mentions(message_of<InvalidInput>([&] { foreign.validate(); }), {"stranger", "declared resources"});
  Placement empty = p;
  empty.shards.push_back({p.shards[1].device, 10, 10});
  expect_mentions(message_of<InvalidInput>([&] { empty.validate(); }), {"empty"});
  expect_mentions(message_of<InvalidInput>([&] { p.validate(11); }), {"total_rows=10", "data length=11"});
  Resources other({device("a", 1), device("c", 1)});
  expect_mentions(message_of<InvalidInput>([&] { p.validate(10, &other); }), {"different resources"});
  Placement small = p;
  small.shards[0].device.memory_bytes = 10;
  small.resources.reset();
  expect_mentions(message_of<MemoryError>([&] { small.validate(); }), {"a[0:5]", "memory_bytes=10", "needs"});
  EXPECT_NO_THROW(p.validate(10, &r));
}

TEST(Placement, JsonRoundTripsExactly) {
  Resources r({device("slow", 1.0 / 3.0, 1'000'000), device("fast", 2.0 / 3.0)});
  Placement p = plan(r, {.rows = 12345, .model = gmm(3, 5), .num_chunks = 5, .sub_chunks = 2, .safety_factor = 1.1});
  const std::string text = p.to_json();
  Placement back = Placement::from_json(text);
  EXPECT_EQ(back, p);
  EXPECT_EQ(back.to_json(), text);
  // Negative byte counts and fractional rows are refused with the field named.
  std::string bad = text;
  bad.replace(bad.find("\"encoded_bytes\":"), 16, "\"encoded_bytes\":-");
  expect_mentions(message_of<InvalidInput>([&] { Placement::from_json(bad); }),
                  {"shards[0].encoded_bytes", "non-negative"});
  std::string frac = text;
  frac.replace(frac.find("\"total_rows\":12345"), 18, "\"total_rows\":12345.5");
  expect_mentions(message_of<InvalidInput>([&] { Placement::from_json(frac); }),
                  {"total_rows=12345.5", "exact integer"});
  // A shard written without its optional fields reads one sub-chunk and no bytes.
  nlohmann::json bare = nlohmann::json::parse(text);
  for (nlohmann::json& shard : bare["shards"])
    for (const char* field : {"sub_chunks", "encoded_bytes", "transient_bytes"}) ASSERT_EQ(shard.erase(field), 1u);
  const Placement read = Placement::from_json(bare.dump());
  ASSERT_EQ(read.shards.size(), p.shards.size());
  for (const auto& shard : read.shards) {
    EXPECT_EQ(shard.sub_chunks, 1u);
    EXPECT_EQ(shard.encoded_bytes, 0u);
    EXPECT_EQ(shard.transient_bytes, 0u);
  }
}

TEST(ShardPlan, ThroughputWeightedComponentRanges) {
  Resources r({device("slow", 1), device("fast", 3)});
  std::vector<ModelShard> shards = model_sharding_plan(gmm(5, 2), r);
  ASSERT_EQ(shards.size(), 2u);
  EXPECT_EQ(shards[0].component_start, 0u);
  EXPECT_EQ(shards[0].component_stop, 1u);
  EXPECT_EQ(shards[1].component_start, 1u);
  EXPECT_EQ(shards[1].component_stop, 5u);
  EXPECT_GT(shards[1].parameter_bytes + shards[1].statistic_bytes,
            shards[0].parameter_bytes + shards[0].statistic_bytes);
  // Per-component bytes add up to the whole model's parameters; each shard's statistics are its
  // components' share of the rest plus the two global float64 values (log-likelihood, rows),
  // which every shard keeps a copy of.
  EXPECT_EQ(shards[0].parameter_bytes + shards[1].parameter_bytes, gmm(5, 2).parameter_bytes());
  const std::uint64_t global = 2 * sizeof(double), per_component = (gmm(5, 2).statistic_bytes() - global) / 5;
  EXPECT_EQ(shards[0].statistic_bytes, 1 * per_component + global);
  EXPECT_EQ(shards[1].statistic_bytes, 4 * per_component + global);
  EXPECT_EQ(shards[0].statistic_bytes + shards[1].statistic_bytes, gmm(5, 2).statistic_bytes() + global);
}

TEST(ShardPlan, MinComponentsPerShardHonoured) {
  Resources four = Resources::local(4);
  std::vector<ModelShard> shards = model_sharding_plan(gmm(5, 1), four, {.min_components_per_shard = 2});
  ASSERT_EQ(shards.size(), 2u);
  EXPECT_EQ(shards[0].num_components(), 3u);
  EXPECT_EQ(shards[1].num_components(), 2u);
  for (const ModelShard& s : shards) EXPECT_GE(s.num_components(), 2u);
  // The minimum may be K itself: one shard holds every component.
  shards = model_sharding_plan(gmm(5, 1), four, {.min_components_per_shard = 5});
  ASSERT_EQ(shards.size(), 1u);
  EXPECT_EQ(shards[0].component_start, 0u);
  EXPECT_EQ(shards[0].num_components(), 5u);
}

TEST(ShardPlan, RejectsImpossibleRequests) {
  Resources four = Resources::local(4);
  expect_mentions(
      message_of<InvalidInput>([&] { model_sharding_plan(gmm(5, 1), four, {.min_components_per_shard = 6}); }),
      {"min_components_per_shard=6", "cannot exceed", "K=5", "accepted"});
  expect_mentions(message_of<InvalidInput>([&] { model_sharding_plan(gmm(5, 1), four, {.axis = "features"}); }),
                  {"axis='features'", "components"});
  Resources tiny({device("cpu:0", 1, 1)});
  expect_mentions(message_of<MemoryError>([&] { model_sharding_plan(gmm(5, 1), tiny); }),
                  {"capacity", "memory_bytes=1"});
}

TEST(ShardPlan, JsonRoundTrip) {
  Resources r({device("a", 1, 1 << 20), device("b", 2)});
  for (const ModelShard& s : model_sharding_plan(gmm(7, 3), r)) {
    EXPECT_EQ(ModelShard::from_json(s.to_json()), s);
  }
  // A document is validated as it is read: an empty range is refused.
  ModelShard empty = model_sharding_plan(gmm(7, 3), r)[0];
  empty.component_stop = empty.component_start;
  expect_mentions(message_of<InvalidInput>([&] { ModelShard::from_json(empty.to_json()); }),
                  {"has an empty component range"});
}

// A trillion components split as exactly as five: the rule starts from the floors, so it adds a
// few units, not one at a time from zero.
TEST(ShardPlan, ATrillionComponentsAreSplitAtOnce) {
  Resources r({device("slow", 1), device("fast", 3)});
  const std::vector<ModelShard> shards = model_sharding_plan(gmm(1'000'000'000'001ull, 1), r);
  ASSERT_EQ(shards.size(), 2u);
  EXPECT_EQ(shards[0].component_stop - shards[0].component_start, 250'000'000'000u);
  EXPECT_EQ(shards[1].component_stop - shards[1].component_start, 750'000'000'001u);
}

TEST(ShardPlan, RejectsAModelWithoutComponents) {
  expect_mentions(message_of<InvalidInput>([] {
                    model_sharding_plan(ModelSummary{0, {{"poisson", 1, 0}}}, Resources::local(2));
                  }),
                  {"components=0", "K ≥ 1"});
}

TEST(Placement, ReadsAReferenceShapedDocument) {
  // What the Python layer's Placement.to_dict() writes: no mixle fields, resources null, the
  // reference's engine names.
  const char* doc = R"({"total_rows": 10, "encoded_row_bytes": 8.0, "transient_row_bytes": 24.0,
    "model_bytes": 100, "statistic_bytes": 100, "dtype_bytes": 8, "resources": null,
    "shards": [{"device": "cpu:0", "kind": "cpu", "engine": "numpy", "start": 0, "stop": 6,
                "sub_chunks": 1, "encoded_bytes": 60, "transient_bytes": 300},
               {"device": "cpu:1", "kind": "cpu", "engine": "numpy", "start": 6, "stop": 10,
                "sub_chunks": 2, "encoded_bytes": 40, "transient_bytes": 200}]})";
  Placement p = Placement::from_json(doc);
  EXPECT_EQ(p.total_rows, 10u);
  EXPECT_FALSE(p.resources.has_value());
  ASSERT_EQ(p.shards.size(), 2u);
  EXPECT_EQ(p.shards[1].device.name, "cpu:1");
  EXPECT_EQ(p.shards[1].device.engine, "numpy");
  EXPECT_EQ(p.shards[1].sub_chunks, 2u);
  // Without resources a shard's own kind and engine describe its device (cpu when absent).
  std::string gpu = doc;
  gpu.replace(gpu.find(R"("device": "cpu:1", "kind": "cpu", "engine": "numpy")"), 51,
              R"("device": "cuda:0", "kind": "cuda", "engine": "cupy")");
  const Placement on_gpu = Placement::from_json(gpu);
  EXPECT_EQ(on_gpu.shards[1].device.name, "cuda:0");
  EXPECT_EQ(on_gpu.shards[1].device.kind, "cuda");
  EXPECT_EQ(on_gpu.shards[1].device.engine, "cupy");
  std::string bare = doc;
  bare.replace(bare.find(R"("device": "cpu:1", "kind": "cpu", "engine": "numpy")"), 51, R"("device": "gpu-a")");
  const Placement defaults = Placement::from_json(bare);
  EXPECT_EQ(defaults.shards[1].device.kind, "cpu");
  EXPECT_EQ(defaults.shards[1].device.engine, "cpu");
  EXPECT_EQ(p.rows_per_chunk, 0u);  // absent: the reference's whole-shard working set
  EXPECT_EQ(Placement::from_json(p.to_json()), p);
  // One-byte elements (uint8 codes) are a dtype; zero bytes is not.
  std::string one_byte = doc;
  one_byte.replace(one_byte.find("\"dtype_bytes\": 8"), 16, "\"dtype_bytes\": 1");
  EXPECT_EQ(Placement::from_json(one_byte).dtype_bytes, 1u);
  std::string zero_bytes = doc;
  zero_bytes.replace(zero_bytes.find("\"dtype_bytes\": 8"), 16, "\"dtype_bytes\": 0");
  expect_mentions(message_of<InvalidInput>([&] { Placement::from_json(zero_bytes); }), {"dtype_bytes=0"});
}
