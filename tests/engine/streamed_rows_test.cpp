// A handle streaming its rows (LocalEncodedData::stream_rows: what a memory budget below the
// rows turns on) computes exactly what the resident handle computes — statistics bit for bit in
// both precisions, with sample weights, over chunks that end inside the rows — and names a bad
// row by its place in the file, whichever chunk holds it.
#include "common/bad_files.hpp"
#include "common/peak_memory.hpp"
#include "engine_test_util.hpp"

#include "comms/thread_group.hpp"
#include "engine/compute.hpp"
#include "engine/distributed_handle.hpp"
#include "engine/local_handle.hpp"
#include "kernels/cpu/cpu_kernels.hpp"

#include <mixle/data.hpp>
#include <mixle/error.hpp>

#include <gtest/gtest.h>

#include <unistd.h>

#include <chrono>
#include <cmath>
#include <fstream>
#include <memory>
#include <functional>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

namespace mixle {
namespace {

using engine::EstimatorOptions;
using engine::LocalEncodedData;
using engine::Precision;

constexpr std::size_t kTile = kernels::cpu::kTileRows;
constexpr std::size_t kRows = 3 * kTile + 517;  // three whole chunks and a short one

/// `rows` written to a float64 .npy and mapped back, with weights when `weighted`.
Dataset mapped(const test::TempDir& dir, const Dataset& rows, bool weighted) {
  const std::vector<double> v = rows.values();
  write_matrix(dir.file("rows.npy"), v.data(), rows.rows(), rows.cols());
  Dataset d = read_data(dir.file("rows.npy"));
  EXPECT_TRUE(d.mapped());
  if (!weighted) return d;
  std::vector<double> w(d.rows());
  for (std::size_t r = 0; r < w.size(); ++r) w[r] = 0.25 + static_cast<double>((r * 7919) % 13) / 4.0;
  return d.with_weights(std::move(w));
}

struct Pair {
  LocalEncodedData resident, streamed;
  explicit Pair(const Dataset& rows)
      : resident(rows, engine::make_cpu_compute(2)), streamed(rows, engine::make_cpu_compute(2)) {
    streamed.stream_rows(kTile);
  }
};

TEST(StreamedRows, StatisticsAreTheResidentOnesBitForBit) {
  test::TempDir dir("streamed-stats");
  const Model model = test::truth_model("mixed");
  for (const bool weighted : {false, true}) {
    Pair h(mapped(dir, sample(model, kRows, 5), weighted));
    for (const Precision precision : {Precision::fp32, Precision::fp64}) {
      EstimatorOptions o;
      o.precision = precision;
      const engine::Statistics a = h.resident.stream_accumulate(model, o);
      const engine::Statistics b = h.streamed.stream_accumulate(model, o);
      EXPECT_EQ(a.values, b.values) << "weighted " << weighted << ", precision " << precision_name(precision);
      EXPECT_EQ(b.rows(), weighted ? h.resident.total_weight() : static_cast<double>(kRows));
    }
  }
}

TEST(StreamedRows, EveryOtherPassSeesTheSameRows) {
  test::TempDir dir("streamed-passes");
  const Model model = test::truth_model("mixed");
  Pair h(mapped(dir, sample(model, kRows, 6), /*weighted=*/true));
  EXPECT_EQ(h.resident.column_max(), h.streamed.column_max());
  const Dataset a = h.resident.sample(11, 700), b = h.streamed.sample(11, 700);
  ASSERT_GT(a.rows(), 0u);
  EXPECT_EQ(a.values(), b.values());
  EXPECT_EQ(std::vector<double>(a.weights(), a.weights() + a.rows()),
            std::vector<double>(b.weights(), b.weights() + b.rows()));
  // Hard assignments by global row: component r mod K.
  const Assigner assign = [](const Dataset& rows, std::size_t first, std::size_t K, std::size_t* label) {
    for (std::size_t r = 0; r < rows.rows(); ++r) label[r] = (first + r) % K;
  };
  EXPECT_EQ(h.resident.accumulate_assigned(model, assign).values, h.streamed.accumulate_assigned(model, assign).values);
  // fold_rows: the same chunks of rows, at the same global rows.
  std::vector<std::pair<std::size_t, double>> seen[2];
  for (int i = 0; i < 2; ++i) {
    std::vector<double> sums;
    (i ? h.streamed : h.resident).fold_rows(sums, [&](const Dataset& rows, std::size_t first) {
      double s = 0.0;
      for (std::size_t r = 0; r < rows.rows(); ++r) s += rows.at(r, 1);
      seen[i].emplace_back(first, s);
    });
  }
  EXPECT_EQ(seen[0], seen[1]);
  h.streamed.check(model);
}

TEST(StreamedRows, ABadRowInALaterChunkIsNamedByItsRowInTheFile) {
  test::TempDir dir("streamed-bad");
  const Model model = test::truth_model("mixed");
  const std::vector<double> good = sample(model, kRows, 7).values();
  const std::size_t C = model.columns();
  auto message = [](const std::function<void()>& fn) -> std::string {
    try {
      fn();
    } catch (const Error& e) {
      return e.what();
    }
    return "no error";
  };
  EstimatorOptions o;
  o.precision = Precision::fp64;
  std::vector<double> v = good;
  v[(kTile + 3) * C + 2] = 5.0;  // not a code of 3 categories, in the second chunk
  {
    Pair h(mapped(dir, Dataset::from_vector(v, kRows, C), false));
    const std::string checked = message([&] { h.streamed.check(model); });
    EXPECT_NE(checked.find("row " + std::to_string(kTile + 3) + ", column 2"), std::string::npos) << checked;
    EXPECT_NE(checked.find("accepted: integer codes 0 … 2"), std::string::npos) << checked;  // 3 categories
    EXPECT_EQ(checked, message([&] { h.resident.check(model); }));
  }
  // NaN in the gaussian columns of the third and fourth chunks: the check names the first one
  // (the gaussian part is checked before the categorical one, as resident rows are), and the
  // E-step's report lists rows from both chunks — a full list of eight, counted from the file.
  v[(2 * kTile + 9) * C + 0] = std::numeric_limits<double>::quiet_NaN();
  for (std::size_t r = 3 * kTile + 4; r < 3 * kTile + 13; ++r)  // nine more: the report lists eight in all
    v[r * C + 1] = std::numeric_limits<double>::quiet_NaN();
  {
    Pair h(mapped(dir, Dataset::from_vector(v, kRows, C), false));
    const std::string checked = message([&] { h.streamed.check(model); });
    EXPECT_NE(checked.find("row " + std::to_string(2 * kTile + 9) + ", column 0"), std::string::npos) << checked;
    EXPECT_EQ(checked, message([&] { h.resident.check(model); }));
  }
  v[(kTile + 3) * C + 2] = good[(kTile + 3) * C + 2];  // the E-step reads valid codes only
  Pair h(mapped(dir, Dataset::from_vector(v, kRows, C), false));
  const std::string streamed = message([&] { h.streamed.stream_accumulate(model, o); });
  EXPECT_NE(streamed.find(std::to_string(2 * kTile + 9)), std::string::npos) << streamed;
  EXPECT_NE(streamed.find(std::to_string(3 * kTile + 4)), std::string::npos) << streamed;
  EXPECT_EQ(streamed, message([&] { h.resident.stream_accumulate(model, o); }));
}

TEST(StreamedRows, NoPassHoldsMoreThanItsChunksOfAMappedFile) {
  if (test::status_kib("VmHWM") < 0 || !test::reset_peak()) GTEST_SKIP() << "no resettable VmHWM on this system";
  test::TempDir dir("streamed-peak");
  const Model model = test::truth_model("mixed");
  constexpr std::size_t kBig = std::size_t{1} << 21;  // 2M rows of 4 float64 columns: 64 MiB
  {
    const Dataset some = sample(model, 4 * kTile, 8);
    std::vector<double> v(kBig * model.columns());
    const std::vector<double> block = some.values();
    for (std::size_t i = 0; i < v.size(); ++i) v[i] = block[i % block.size()];
    write_matrix(dir.file("big.npy"), v.data(), kBig, model.columns());
  }
  LocalEncodedData h(read_data(dir.file("big.npy")), engine::make_cpu_compute(2));
  h.stream_rows(kTile);
  EstimatorOptions o;
  o.precision = Precision::fp32;
  const Assigner assign = [](const Dataset& rows, std::size_t first, std::size_t K, std::size_t* label) {
    for (std::size_t r = 0; r < rows.rows(); ++r) label[r] = (first + r) % K;
  };
  const std::vector<std::pair<const char*, std::function<void()>>> passes{
      {"check", [&] { h.check(model); }},
      {"column_max", [&] { h.column_max(); }},
      {"sample", [&] { h.sample(3, 1000); }},
      {"stream_accumulate", [&] { h.stream_accumulate(model, o); }},
      {"accumulate_assigned", [&] { h.accumulate_assigned(model, assign); }},
      {"fold_rows",
       [&] {
         std::vector<double> sums;
         h.fold_rows(sums, [](const Dataset& rows, std::size_t) { volatile double x = rows.at(rows.rows() - 1, 0); });
       }},
  };
  const long before = test::status_kib("VmRSS");  // nothing of the file mapped yet
  for (const auto& [name, pass] : passes) {
    ASSERT_TRUE(test::reset_peak());  // the peak from here: what earlier passes still hold, and this one
    pass();
    const long grew = test::status_kib("VmHWM") - before;
    // The whole file is 64 MiB; a streamed pass maps a chunk at a time: 128 KiB, Lloyd's
    // windows 2 MiB, the assignment pass's 1M values 8 MiB (with its grouped copy, 8 MiB, and
    // its responsibilities and labels, 10 MiB: 26 MiB measured).
    EXPECT_LT(grew, 32 * 1024) << name << " held " << grew << " KiB more at its peak";
  }
}

TEST(StreamedRows, RowsThatFillTheirChunksMakeNoEmptyVisit) {
  constexpr std::size_t kFold = std::size_t{1} << 16;  // fold_rows' chunk
  LocalEncodedData h(Dataset::from_vector(std::vector<double>(2 * kFold, 1.0), 2 * kFold, 1),
                     engine::make_cpu_compute(1));
  for (const std::size_t chunk : {std::size_t{0}, kFold}) {
    h.stream_rows(chunk);
    std::vector<std::size_t> visits;
    std::vector<double> sums;
    h.fold_rows(sums, [&](const Dataset& rows, std::size_t) { visits.push_back(rows.rows()); });
    EXPECT_EQ(visits, (std::vector<std::size_t>{kFold, kFold})) << "streamed in chunks of " << chunk;
  }
}

/// A Compute that calls itself a GPU and runs the CPU kernels; it counts the times a handle asks
/// it to all-reduce the statistics where they are (and declines, so the host does it).
class GpuNamedCompute final : public engine::Compute {
 public:
  std::string name() const override { return "cuda:9"; }
  kernels::PassReport accumulate(const Model& model, const Dataset& rows, Precision precision,
                                 std::vector<double>& stats) override {
    return cpu_->accumulate(model, rows, precision, stats);
  }
  kernels::PassReport score(const Model& model, const Dataset& rows, Precision precision, double* loglik,
                            double* resp) override {
    return cpu_->score(model, rows, precision, loglik, resp);
  }
  void accumulate_given(const Model& model, const Dataset& rows, const double* resp,
                        std::vector<double>& stats) override {
    cpu_->accumulate_given(model, rows, resp, stats);
  }
  bool all_reduce_statistics(comms::Communicator&, std::vector<double>&) override {
    ++device_reduces;
    return false;
  }
  int device_reduces = 0;

 private:
  std::unique_ptr<engine::Compute> cpu_ = engine::make_cpu_compute(1);
};

std::unique_ptr<engine::Compute> gpu_named() { return std::make_unique<GpuNamedCompute>(); }

/// encoded_for, visible.
struct Probe : LocalEncodedData {
  using LocalEncodedData::encoded_for;
  using LocalEncodedData::LocalEncodedData;
};

TEST(StreamedRows, TheFloat32CopyRuleCountsWhatTheHandleCopies) {
  const double x[6] = {1, 2, 3, 4, 5, 6};
  const Dataset f64 = Dataset::view(x, 3, 2);
  EXPECT_EQ(engine::f32_copy_bytes("cuda:1", Precision::fp32, f64), 3u * 2u * 4u);
  EXPECT_EQ(engine::f32_copy_bytes("cuda", Precision::tf32, f64), 24u);
  EXPECT_EQ(engine::f32_copy_bytes("cuda:0", Precision::fp64, f64), 0u);
  EXPECT_EQ(engine::f32_copy_bytes("cpu", Precision::fp32, f64), 0u);
  // "auto" is a GPU exactly when make_compute would pick one (engine::resolve_device).
  EXPECT_EQ(engine::f32_copy_bytes("auto", Precision::fp32, f64), engine::cuda_device_count() > 0 ? 24u : 0u);
  const auto none = [] { return 0; };
  const auto one = [] { return 1; };
  const auto two = [] { return 2; };
  const auto unasked = []() -> int { throw std::logic_error("the GPUs are counted only for auto"); };
  EXPECT_EQ(engine::resolve_device("auto", none), "cpu");
  EXPECT_EQ(engine::resolve_device("auto", one), "cuda:0");
  EXPECT_EQ(engine::resolve_device("auto", two), "cuda:0");
  EXPECT_EQ(engine::resolve_device("cpu", unasked), "cpu");
  EXPECT_EQ(engine::resolve_device("cuda:1", unasked), "cuda:1");
  const float y[6] = {1, 2, 3, 4, 5, 6};
  EXPECT_EQ(engine::f32_copy_bytes("cuda:0", Precision::fp32, Dataset::view(y, 3, 2)), 0u);
  // No copy past an eighth of physical memory; exactly an eighth is copied. The views' shapes
  // are all the rule reads: nothing reads past x.
  const std::uint64_t eighth =
      static_cast<std::uint64_t>(sysconf(_SC_PHYS_PAGES)) * static_cast<std::uint64_t>(sysconf(_SC_PAGE_SIZE)) / 8;
  ASSERT_EQ(eighth % 4, 0u);
  const std::uint64_t rows = eighth / 4;  // one column: 4 bytes a row
  EXPECT_EQ(engine::f32_copy_bytes("cuda:0", Precision::fp32, Dataset::view(x, rows, 1)), rows * 4);
  EXPECT_EQ(engine::f32_copy_bytes("cuda:0", Precision::fp32, Dataset::view(x, rows + 1, 1)), 0u);
}

TEST(StreamedRows, OnlyAResidentGpuHandleCopiesFloat64RowsToFloat32) {
  const Dataset f64 = sample(test::truth_model("mixed"), 300, 1);
  ASSERT_EQ(f64.dtype(), DType::f64);
  Probe gpu(f64, gpu_named());
  const Dataset& copy = gpu.encoded_for(Precision::fp32);
  EXPECT_EQ(copy.dtype(), DType::f32);
  ASSERT_EQ(copy.rows(), f64.rows());
  for (std::size_t i = 0; i < f64.rows() * f64.cols(); ++i)
    ASSERT_EQ(copy.as<float>()[i], static_cast<float>(f64.as<double>()[i])) << i;
  EXPECT_EQ(gpu.encoded_for(Precision::fp64).data(), f64.data());  // float64 compute reads the rows
  gpu.stream_rows(kTile);
  EXPECT_EQ(gpu.encoded_for(Precision::fp32).data(), f64.data());  // streamed: no whole copy
  gpu.stream_rows(0);
  EXPECT_EQ(gpu.encoded_for(Precision::fp32).dtype(), DType::f32);  // resident again: copied again
  Probe declined(f64, gpu_named());
  declined.allow_f32_copy(false);  // a budget the copy does not fit in
  EXPECT_EQ(declined.encoded_for(Precision::fp32).data(), f64.data());
  Probe cpu(f64, engine::make_cpu_compute(1));  // the CPU kernels convert block by block
  EXPECT_EQ(cpu.encoded_for(Precision::fp32).data(), f64.data());
  const std::vector<double> v = f64.values();
  const Dataset f32 = Dataset::from_vector(std::vector<float>(v.begin(), v.end()), f64.rows(), f64.cols());
  Probe single(f32, gpu_named());  // float32 rows are what fp32 reads
  EXPECT_EQ(single.encoded_for(Precision::fp32).data(), f32.data());
}

TEST(StreamedRows, StreamingFreesTheFloat32Copy) {
  const std::size_t rows = std::size_t{1} << 20, cols = 4;  // 32 MiB of float64: a 16 MiB copy
  Probe gpu(Dataset::from_vector(std::vector<double>(rows * cols, 0.5), rows, cols), gpu_named());
  const long before = test::status_kib("VmRSS");
  if (before < 0) GTEST_SKIP() << "no VmRSS in /proc/self/status here";
  ASSERT_EQ(gpu.encoded_for(Precision::fp32).dtype(), DType::f32);
  const long copied = test::status_kib("VmRSS");
  EXPECT_GT(copied - before, 12 * 1024) << "the float32 copy should take 16 MiB";
  gpu.stream_rows(kTile);
  EXPECT_LT(test::status_kib("VmRSS"), copied - 12 * 1024) << "streaming should free the copy";
}

TEST(StreamedRows, StatisticsAreReducedOnTheDeviceOnlyWhenOneCallMadeThem) {
  const Model model = test::truth_model("mixed");
  const Dataset rows = sample(model, 2 * kTile + 5, 2);
  auto group = comms::make_thread_group(1, std::chrono::seconds(30));
  auto compute = std::make_unique<GpuNamedCompute>();
  GpuNamedCompute* gpu = compute.get();
  engine::DistributedEncodedData h(rows, rows.rows(), 0, *group[0],
                                   std::unique_ptr<engine::Compute>(std::move(compute)));
  EstimatorOptions o;
  o.precision = Precision::fp64;
  const engine::Statistics resident = h.stream_accumulate(model, o);
  EXPECT_EQ(gpu->device_reduces, 1) << "resident rows: one Compute call holds the step's statistics";
  h.stream_rows(4 * kTile);  // one chunk holds them all
  h.stream_accumulate(model, o);
  EXPECT_EQ(gpu->device_reduces, 2);
  h.stream_rows(kTile);  // three chunks: the host holds the sums
  EXPECT_EQ(h.stream_accumulate(model, o).values, resident.values);
  EXPECT_EQ(gpu->device_reduces, 2);
  h.stream_rows(0);
  o.marginalise = true;  // the marginalised rows' sums are the host's
  h.stream_accumulate(model, o);
  EXPECT_EQ(gpu->device_reduces, 2);
}

TEST(StreamedRows, ChunksOtherThanWholeTilesAreRefused) {
  LocalEncodedData h(Dataset::from_vector(std::vector<double>(8, 1.0), 4, 2), engine::make_cpu_compute(1));
  EXPECT_THROW(h.stream_rows(kTile + 128), InvalidInput);
  EXPECT_THROW(h.stream_rows(1000), InvalidInput);
  h.stream_rows(2 * kTile);
  EXPECT_EQ(h.chunk_rows(), 2 * kTile);
  h.stream_rows(0);
  EXPECT_EQ(h.chunk_rows(), 0u);
}

}  // namespace
}  // namespace mixle
