// Rows streamed from a mapped file under a memory budget (LocalEncodedData::stream_rows) reach
// the CUDA Compute chunk after chunk: its statistics are the resident handle's to float64
// rounding (the same block sums, folded per call), and a bad row in a later chunk is named by
// its row in the file; stepwise EM's batches run on the GPU too — on a GPU or on the simulator.
#include "common/bad_files.hpp"
#include "common/kernel_compare.hpp"

#include "engine/local_handle.hpp"
#include "kernels/cpu/cpu_kernels.hpp"

#include <mixle/data.hpp>
#include <mixle/error.hpp>
#include <mixle/fit.hpp>
#include <mixle/model.hpp>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

namespace mixle::test {
namespace {

using engine::EstimatorOptions;
using engine::LocalEncodedData;
using engine::Precision;

constexpr std::size_t kTile = kernels::cpu::kTileRows;
constexpr std::size_t kRows = 2 * kTile + 301;

const char* kModel = R"({"format":"mixle-model","version":1,"weights":[0.5,0.3,0.2],"parts":[
    {"family":"gaussian_diag","columns":[0,3],"mean":[[0,0,0],[4,4,1],[-3,5,2]],"var":[[1,1,1],[1,2,1],[0.5,1,2]]},
    {"family":"poisson","columns":[3,4],"rate":[[2],[7],[4]]}]})";

Dataset mapped(const TempDir& dir, const std::vector<double>& v, std::size_t cols) {
  write_matrix(dir.file("rows.npy"), v.data(), v.size() / cols, cols);
  Dataset d = read_data(dir.file("rows.npy"));
  EXPECT_TRUE(d.mapped());
  return d;
}

TEST(CudaStreamedRows, ChunkAfterChunkGivesTheResidentStatisticsToFloat64Rounding) {
  MIXLE_CUDA_OR_SKIP(probe);
  TempDir dir("cuda-streamed");
  const Model model = model_from_json(kModel);
  const Dataset rows = mapped(dir, sample(model, kRows, 4).values(), model.columns());
  for (const Precision precision : {Precision::fp32, Precision::fp64}) {
    LocalEncodedData resident(rows, engine::make_cuda_compute(0)), streamed(rows, engine::make_cuda_compute(0));
    streamed.stream_rows(kTile);
    EstimatorOptions o;
    o.precision = precision;
    const engine::Statistics a = resident.stream_accumulate(model, o);
    const engine::Statistics b = streamed.stream_accumulate(model, o);
    // Each chunk's slots are folded on the device and added to the host sums per call: the same
    // block sums, grouped differently in float64.
    ASSERT_EQ(a.values.size(), b.values.size());
    for (std::size_t i = 0; i < a.values.size(); ++i)
      EXPECT_NEAR(b.values[i], a.values[i], 1e-12 * (1.0 + std::abs(a.values[i])))
          << precision_name(precision) << " statistic " << i;
    EXPECT_EQ(b.rows(), static_cast<double>(kRows));
  }
}

TEST(CudaStreamedRows, ABadRowInALaterChunkIsNamedByItsRowInTheFile) {
  MIXLE_CUDA_OR_SKIP(probe);
  TempDir dir("cuda-streamed-bad");
  const Model model = model_from_json(kModel);
  std::vector<double> v = sample(model, kRows, 5).values();
  v[(2 * kTile + 17) * model.columns() + 1] = std::numeric_limits<double>::quiet_NaN();
  LocalEncodedData streamed(mapped(dir, v, model.columns()), engine::make_cuda_compute(0));
  streamed.stream_rows(kTile);
  EstimatorOptions o;
  o.precision = Precision::fp64;
  try {
    streamed.stream_accumulate(model, o);
    ADD_FAILURE() << "a NaN row was not reported";
  } catch (const InvalidInput& e) {
    EXPECT_NE(std::string(e.what()).find(std::to_string(2 * kTile + 17)), std::string::npos) << e.what();
  }
}

/// Stepwise EM on the GPU: every batch handle runs on the whole data's one CUDA Compute; the
/// fit is the CPU's stepwise fit up to the kernels' float64 rounding.
TEST(CudaStreamedRows, StepwiseBatchesOnTheGpuFitWhatTheCpuFits) {
  MIXLE_CUDA_OR_SKIP(probe);
  const Model truth = model_from_json(kModel);
  const Dataset rows = sample(truth, 4000, 2);
  FitOptions o;
  o.layout = "gaussian_diag:0-3,poisson:3-4";
  o.components = 3;
  o.seed = 1;
  o.precision = "fp64";
  o.batch_size = 500;
  o.epochs = 2;
  o.tol = 0;
  o.device = "cpu";
  const FitResult cpu = fit(rows, o);
  o.device = "cuda";
  const FitResult gpu = fit(rows, o);
  ASSERT_EQ(gpu.iterations, cpu.iterations);
  const auto near = [](const std::vector<double>& a, const std::vector<double>& b, const char* what) {
    ASSERT_EQ(a.size(), b.size()) << what;
    for (std::size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], b[i], 1e-9 * (1.0 + std::abs(b[i]))) << what << i;
  };
  near(gpu.model.weights, cpu.model.weights, "weights");
  near(gpu.model.parts[0].mean, cpu.model.parts[0].mean, "mean");
  near(gpu.model.parts[0].var, cpu.model.parts[0].var, "var");
  near(gpu.model.parts[1].rate, cpu.model.parts[1].rate, "rate");
  EXPECT_NEAR(gpu.final_mean_loglik, cpu.final_mean_loglik, 1e-10 * std::abs(cpu.final_mean_loglik));
}

}  // namespace
}  // namespace mixle::test
