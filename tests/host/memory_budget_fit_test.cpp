// Fits of rows mapped from a file under a memory budget never hold the file: what each fit adds
// to this process's resident memory at its peak (VmHWM, reset before it) stays far below the
// file's 64 MiB — the library's full-batch and stepwise fits, and fit_distributed's stepwise
// batches — while the same fit with its rows resident holds them all.
#include "common/bad_files.hpp"
#include "common/peak_memory.hpp"

#include <mixle/data.hpp>
#include <mixle/distributed.hpp>
#include <mixle/fit.hpp>
#include <mixle/model.hpp>

#include <gtest/gtest.h>

#include <fstream>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace mixle {
namespace {

const char* kTruth = R"({"format":"mixle-model","version":1,"weights":[0.5,0.5],"parts":[
    {"family":"gaussian_diag","columns":[0,2],"mean":[[0,0],[4,4]],"var":[[1,1],[1,2]]}]})";

TEST(MemoryBudgetFit, NoFitHoldsAMappedFileBeyondItsBudget) {
  if (test::status_kib("VmHWM") < 0 || !test::reset_peak()) GTEST_SKIP() << "no resettable VmHWM here";
  test::TempDir dir("memory-budget-fit");
  constexpr std::size_t kRows = std::size_t{1} << 20, kCols = 8, kBlock = 4096;  // 64 MiB of float64
  {
    const Dataset two = sample(model_from_json(kTruth), kBlock, 3);
    std::ofstream out(dir.file("rows.npy"), std::ios::binary);
    out << test::npy_bytes({}, kRows, kCols);
    std::vector<double> block(kBlock * kCols);
    for (std::size_t r = 0; r < kBlock; ++r)
      for (std::size_t c = 0; c < kCols; ++c) block[r * kCols + c] = c < 2 ? two.at(r, c) : 1.0;
    for (std::size_t b = 0; b < kRows / kBlock; ++b)
      out.write(reinterpret_cast<const char*>(block.data()), static_cast<std::streamsize>(block.size() * 8));
  }
  const Dataset rows = read_data(dir.file("rows.npy"));
  ASSERT_TRUE(rows.mapped());
  FitOptions o;
  o.layout = "gaussian_diag:0-2";
  o.components = 2;
  o.max_iter = 2;
  o.tol = 0;
  o.init = InitMethod::select;
  o.init_p = 0.001;
  o.memory_budget = std::size_t{4} << 20;  // chunks of 2048 rows: 128 KiB
  FitOptions stepwise = o;
  stepwise.batch_size = 300000;
  stepwise.epochs = 1;
  const std::vector<std::pair<const char*, std::function<void()>>> fits{
      {"fit", [&] { fit(rows, o); }},
      {"stepwise fit", [&] { fit(rows, stepwise); }},
      {"stepwise fit_distributed", [&] { fit_distributed(rows, stepwise, {}); }},
  };
  const long before = test::status_kib("VmRSS");  // nothing of the file mapped yet
  for (const auto& [name, run] : fits) {
    ASSERT_TRUE(test::reset_peak());
    run();
    const long grew = test::status_kib("VmHWM") - before;
    EXPECT_LT(grew, 24 * 1024) << name << " held " << grew << " KiB more at its peak";
  }
  o.memory_budget = 0;  // the default: resident
  ASSERT_TRUE(test::reset_peak());
  fit(rows, o);
  EXPECT_GT(test::status_kib("VmHWM") - before, 56 * 1024) << "the resident fit should hold the file";
}

}  // namespace
}  // namespace mixle
