// Rows streamed from a mapped file under a memory budget (LocalEncodedData::stream_rows) reach
// the CUDA Compute chunk after chunk: its statistics are the resident handle's, bit for bit (the
// device folds in fixed slots whatever the chunking), and a bad row in a later chunk is named by
// its row in the file — on a GPU or on the simulator.
#include "common/bad_files.hpp"
#include "common/kernel_compare.hpp"

#include "engine/local_handle.hpp"
#include "kernels/cpu/cpu_kernels.hpp"

#include <mixle/data.hpp>
#include <mixle/error.hpp>
#include <mixle/fit.hpp>
#include <mixle/model.hpp>

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

TEST(CudaStreamedRows, ChunkAfterChunkGivesTheResidentStatistics) {
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
    EXPECT_EQ(a.values, b.values) << precision_name(precision);
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

}  // namespace
}  // namespace mixle::test
