// A handle streaming its rows (LocalEncodedData::stream_rows: what a memory budget below the
// rows turns on) computes exactly what the resident handle computes — statistics bit for bit in
// both precisions, with sample weights, over chunks that end inside the rows — and names a bad
// row by its place in the file, whichever chunk holds it.
#include "common/bad_files.hpp"
#include "engine_test_util.hpp"

#include "engine/compute.hpp"
#include "engine/local_handle.hpp"
#include "kernels/cpu/cpu_kernels.hpp"

#include <mixle/data.hpp>
#include <mixle/error.hpp>

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <functional>
#include <limits>
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
    EXPECT_EQ(checked, message([&] { h.resident.check(model); }));
  }
  // NaN in the gaussian columns of the third and fourth chunks: the check names the first one
  // (the gaussian part is checked before the categorical one, as resident rows are), and the
  // E-step's report lists both, from two chunks.
  v[(2 * kTile + 9) * C + 0] = std::numeric_limits<double>::quiet_NaN();
  v[(3 * kTile + 4) * C + 1] = std::numeric_limits<double>::quiet_NaN();
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

/// A field of /proc/self/status in KiB ("VmHWM", "VmRSS"); -1 when absent.
long status_kib(const std::string& field) {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line))
    if (line.rfind(field + ":", 0) == 0) return std::stol(line.substr(field.size() + 1));
  return -1;
}

/// Resets this process's peak resident set (VmHWM) to its current size; false where Linux
/// does not offer it.
bool reset_peak() {
  std::ofstream clear("/proc/self/clear_refs");
  clear << "5";
  clear.flush();
  return clear.good();
}

TEST(StreamedRows, NoPassHoldsMoreThanItsChunksOfAMappedFile) {
  if (status_kib("VmHWM") < 0 || !reset_peak()) GTEST_SKIP() << "no resettable VmHWM on this system";
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
  const long before = status_kib("VmRSS");  // nothing of the file mapped yet
  for (const auto& [name, pass] : passes) {
    ASSERT_TRUE(reset_peak());  // the peak from here: what earlier passes still hold, and this one
    pass();
    const long grew = status_kib("VmHWM") - before;
    // The whole file is 64 MiB; a streamed pass maps a chunk at a time: 128 KiB, Lloyd's
    // windows 2 MiB, the assignment pass's 1M values 8 MiB (with its grouped copy, 8 MiB, and
    // its responsibilities and labels, 10 MiB: 26 MiB measured).
    EXPECT_LT(grew, 32 * 1024) << name << " held " << grew << " KiB more at its peak";
  }
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
