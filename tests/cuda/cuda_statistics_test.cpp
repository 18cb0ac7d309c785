// The statistics stay on the device: under a communicator that works in device memory (nccl), the
// CUDA Compute all-reduces the float64 buffer its kernels folded the statistics into, and only the
// sums cross to the host. Needs NCCL (on a GPU, or the simulator's); the byte counts need the
// simulator.
#include "common/kernel_compare.hpp"
#include "comms/communicator.hpp"
#include "comms/store.hpp"
#include "engine/distributed_handle.hpp"

#if MIXLE_CUDA_SIM
#include <mixle/cudasim/testing.hpp>
#endif

namespace mixle::test {
namespace {

using namespace std::chrono_literals;
using engine::Precision;

/// One nccl rank (the collectives still run: init, the reduce, its stream), a CUDA Compute and a
/// small gaussian_diag problem; skipped without NCCL or a device (failed under MIXLE_REQUIRE_GPU=1).
class CudaStatistics : public ::testing::Test {
 protected:
  void SetUp() override {
#if !MIXLE_HAVE_NCCL
    if (gpu_required()) FAIL() << "MIXLE_REQUIRE_GPU=1 but mixle was built without NCCL";
    GTEST_SKIP() << "built without NCCL";
#endif
    std::string why;
    cuda = cuda_or_reason(why);
    if (!cuda) {
      if (gpu_required()) FAIL() << why << " (MIXLE_REQUIRE_GPU=1)";
      GTEST_SKIP() << why;
    }
    server = std::make_unique<comms::StoreServer>("127.0.0.1", 0, "tok");
    comms::CommOptions o;
    o.timeout = 60s;
    o.store = std::make_shared<comms::StoreClient>("127.0.0.1", server->port(), "tok", 0, 5s, 60s);
    comm = comms::make_communicator("nccl", std::move(o));
    std::mt19937_64 rng(42);
    const std::vector<double> values = sample_rows(model, 700, rng);
    data = Dataset::from_vector(std::vector<float>(values.begin(), values.end()), 700, 5);
  }

  /// The statistics of one CUDA accumulate into zeros.
  std::vector<double> accumulate() {
    std::vector<double> stats(static_cast<std::size_t>(engine::stat_layout(model).size), 0.0);
    cuda->accumulate(model, data, Precision::fp32, stats);
    return stats;
  }

  std::unique_ptr<comms::StoreServer> server;
  std::unique_ptr<comms::Communicator> comm;
  std::unique_ptr<engine::Compute> cuda;
  Model model = random_model(Family::gaussian_diag, 6, 5, 41);
  Dataset data;
};

TEST_F(CudaStatistics, AllReducedFromDeviceMemoryUnderNccl) {
  const std::vector<double> stats = accumulate();
  std::vector<double> values = stats;
  values.push_back(0.0);  // the caller's error mark rides along
#if MIXLE_CUDA_SIM
  cudasim::reset_counters();
#endif
  ASSERT_TRUE(cuda->all_reduce_statistics(*comm, values));
#if MIXLE_CUDA_SIM
  const cudasim::Counters c = cudasim::counters();
  EXPECT_EQ(c.h2d_bytes, sizeof(double)) << "only the mark goes to the device; the statistics are there";
  EXPECT_EQ(c.d2h_bytes, values.size() * sizeof(double)) << "the sums come back once";
#endif
  values.pop_back();
  EXPECT_EQ(values, stats);  // one rank: the sum is the identity, bit for bit
  // The buffer now holds sums: a second reduction would count them twice, so it is refused.
  std::vector<double> again = stats;
  EXPECT_FALSE(cuda->all_reduce_statistics(*comm, again));
}

TEST_F(CudaStatistics, OnlyAnAccumulatesOwnStatisticsAreReducedOnTheDevice) {
  std::vector<double> stats = accumulate();
  const std::size_t size = stats.size();
  std::vector<double> longer(size + 2, 0.0), shorter(size - 1, 0.0);
  EXPECT_FALSE(cuda->all_reduce_statistics(*comm, longer));  // more than one trailing value
  EXPECT_FALSE(cuda->all_reduce_statistics(*comm, shorter));
  auto host = comms::make_communicator("single", {});
  EXPECT_FALSE(cuda->all_reduce_statistics(*host, stats));  // a host communicator reduces host buffers
  std::vector<double> ll(data.rows());
  cuda->score(model, data, Precision::fp32, ll.data(), nullptr);  // the buffer is no longer the statistics
  EXPECT_FALSE(cuda->all_reduce_statistics(*comm, stats));
  EXPECT_FALSE(engine::make_cpu_compute(1)->all_reduce_statistics(*comm, stats));
}

// The distributed handle's E-step takes that path under nccl (its error mark in the same
// reduction) and returns what the local handle does (one rank).
TEST_F(CudaStatistics, TheDistributedEStepUnderNcclMatchesTheLocalOne) {
  engine::EstimatorOptions options;
  options.precision = Precision::fp32;
  engine::LocalEncodedData local(data, std::move(cuda));
  std::string why;
  engine::DistributedEncodedData distributed(data, data.rows(), 0, *comm, cuda_or_reason(why));
  // Each handle's first pass uploads its rows; the second finds them resident.
  local.stream_accumulate(model, options);
  distributed.stream_accumulate(model, options);
#if MIXLE_CUDA_SIM
  cudasim::reset_counters();
#endif
  const engine::Statistics expected = local.stream_accumulate(model, options);
#if MIXLE_CUDA_SIM
  const std::uint64_t local_h2d = cudasim::counters().h2d_bytes;  // the model
  cudasim::reset_counters();
#endif
  const engine::Statistics got = distributed.stream_accumulate(model, options);
  EXPECT_EQ(got.values, expected.values);
#if MIXLE_CUDA_SIM
  // The model and the error mark; staged through the host, the statistics would cross again.
  EXPECT_EQ(cudasim::counters().h2d_bytes, local_h2d + sizeof(double));
#endif
}

}  // namespace
}  // namespace mixle::test
