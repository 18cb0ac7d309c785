// The CUDA entry points as every build sees them: device counting, refusal with the right error,
// and --device parsing's choice — meaningful with and without a GPU or a CUDA build.
#include "common/kernel_compare.hpp"
#include "engine/compute.hpp"

#include <mixle/error.hpp>
#include <mixle/plan/resources.hpp>

#include <gtest/gtest.h>

#if MIXLE_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

namespace mixle::engine {
namespace {

TEST(CudaRuntime, DeviceCountIsNonNegativeAndStable) {
  const int count = cuda_device_count();
  EXPECT_GE(count, 0);
  EXPECT_EQ(count, cuda_device_count());
#if !MIXLE_HAVE_CUDA
  EXPECT_EQ(count, 0) << "a CPU-only build reports zero devices";
#endif
}

TEST(CudaRuntime, MissingDeviceIsRefusedWithTypedError) {
  const int count = cuda_device_count();
#if MIXLE_HAVE_CUDA
  // A CUDA build: asking for a device that does not exist is invalid input naming the count.
  try {
    make_cuda_compute(count);
    FAIL() << "cuda:" << count << " should not exist";
  } catch (const InvalidInput& e) {
    EXPECT_NE(std::string(e.what()).find(std::to_string(count) + " CUDA device"), std::string::npos) << e.what();
  }
  EXPECT_THROW(make_cuda_compute(-1), InvalidInput);
#else
  (void)count;
  EXPECT_THROW(make_cuda_compute(0), NotCompiled);
#endif
}

TEST(CudaRuntime, AutoPicksCpuWithoutDeviceAndCudaWithOne) {
  const auto compute = make_compute("auto", 1);
  if (cuda_device_count() == 0) {
    EXPECT_EQ(compute->name(), "cpu");
    EXPECT_ANY_THROW(make_compute("cuda", 1));
    EXPECT_ANY_THROW(make_compute("cuda:0", 1));
  } else {
    EXPECT_EQ(compute->name(), "cuda:0");
    EXPECT_EQ(make_compute("cuda:0", 1)->name(), "cuda:0");
  }
}

// Resource discovery lists one cuda:i per visible device, described as the runtime describes it.
TEST(CudaRuntime, DiscoveredGpusAreDescribedAsTheRuntimeSeesThem) {
  const plan::Resources found = plan::Resources::discover({});
  std::vector<plan::DeviceSpec> gpus;
  for (const plan::DeviceSpec& d : found.devices())
    if (d.kind == "cuda") gpus.push_back(d);
  ASSERT_EQ(gpus.size(), static_cast<std::size_t>(cuda_device_count()));
#if MIXLE_HAVE_CUDA
  for (std::size_t i = 0; i < gpus.size(); ++i) {
    cudaDeviceProp props{};
    ASSERT_EQ(cudaGetDeviceProperties(&props, static_cast<int>(i)), cudaSuccess);
    EXPECT_EQ(gpus[i].name, "cuda:" + std::to_string(i));
    EXPECT_EQ(gpus[i].product, std::optional<std::string>(props.name));
    EXPECT_EQ(gpus[i].memory_bytes, std::optional<std::uint64_t>(props.totalGlobalMem));
    EXPECT_EQ(gpus[i].compute_units, std::optional<std::int64_t>(props.multiProcessorCount));
  }
#endif
}

TEST(CudaRuntime, CudaRefusesTooFewDataColumns) {
  MIXLE_CUDA_OR_SKIP(cuda);
  Model model;
  model.weights = {1.0};
  Part p;
  p.col_begin = 0, p.col_end = 3;
  p.mean = {0, 0, 0}, p.var = {1, 1, 1};
  model.parts.push_back(p);
  const std::vector<float> two_columns(20, 0.0f);
  std::vector<double> stats(static_cast<std::size_t>(stat_layout(model).size), 0.0);
  EXPECT_THROW(cuda->accumulate(model, Dataset::from_vector(two_columns, 10, 2), Precision::fp32, stats), InvalidInput);
}

}  // namespace
}  // namespace mixle::engine
