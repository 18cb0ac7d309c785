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

#define MIXLE_SKIP_WITHOUT_NCCL()                                                       \
  if (gpu_required()) FAIL() << "MIXLE_REQUIRE_GPU=1 but mixle was built without NCCL"; \
  GTEST_SKIP() << "built without NCCL"

/// A world of one nccl rank (the collectives still run: init, the reduce, its stream).
struct NcclWorld {
  comms::StoreServer server{"127.0.0.1", 0, "tok"};
  std::unique_ptr<comms::Communicator> comm;
  NcclWorld() {
    comms::CommOptions o;
    o.timeout = 60s;
    o.store = std::make_shared<comms::StoreClient>("127.0.0.1", server.port(), "tok", 0, 5s, 60s);
    comm = comms::make_communicator("nccl", std::move(o));
  }
};

struct Fixture {
  Model model = random_model(Family::gaussian_diag, 6, 5, 41);
  Dataset data;
  Fixture() {
    std::mt19937_64 rng(42);
    const std::vector<double> values = sample_rows(model, 700, rng);
    data = Dataset::from_vector(std::vector<float>(values.begin(), values.end()), 700, 5);
  }
};

TEST(CudaStatistics, AllReducedFromDeviceMemoryUnderNccl) {
#if !MIXLE_HAVE_NCCL
  MIXLE_SKIP_WITHOUT_NCCL();
#else
  MIXLE_CUDA_OR_SKIP(cuda);
  NcclWorld world;
  Fixture f;
  std::vector<double> stats(static_cast<std::size_t>(engine::stat_layout(f.model).size), 0.0);
  cuda->accumulate(f.model, f.data, Precision::fp32, stats);
  std::vector<double> values = stats;
  values.push_back(0.0);  // the caller's error mark rides along
#if MIXLE_CUDA_SIM
  cudasim::reset_counters();
#endif
  ASSERT_TRUE(cuda->all_reduce_statistics(*world.comm, values));
#if MIXLE_CUDA_SIM
  const cudasim::Counters c = cudasim::counters();
  EXPECT_EQ(c.h2d_bytes, sizeof(double)) << "only the mark goes to the device; the statistics are there";
  EXPECT_EQ(c.d2h_bytes, values.size() * sizeof(double)) << "the sums come back once";
#endif
  values.pop_back();
  EXPECT_EQ(values, stats);  // one rank: the sum is the identity, bit for bit
  // The buffer now holds sums: a second reduction would count them twice, so it is refused.
  std::vector<double> again = stats;
  EXPECT_FALSE(cuda->all_reduce_statistics(*world.comm, again));
#endif
}

TEST(CudaStatistics, OnlyAnAccumulatesOwnStatisticsAreReducedOnTheDevice) {
#if !MIXLE_HAVE_NCCL
  MIXLE_SKIP_WITHOUT_NCCL();
#else
  MIXLE_CUDA_OR_SKIP(cuda);
  NcclWorld world;
  Fixture f;
  const std::size_t size = static_cast<std::size_t>(engine::stat_layout(f.model).size);
  std::vector<double> stats(size, 0.0);
  cuda->accumulate(f.model, f.data, Precision::fp32, stats);
  std::vector<double> longer(size + 2, 0.0), shorter(size - 1, 0.0);
  EXPECT_FALSE(cuda->all_reduce_statistics(*world.comm, longer));  // more than one trailing value
  EXPECT_FALSE(cuda->all_reduce_statistics(*world.comm, shorter));
  auto host = comms::make_communicator("single", {});
  EXPECT_FALSE(cuda->all_reduce_statistics(*host, stats));  // a host communicator reduces host buffers
  std::vector<double> ll(f.data.rows());
  cuda->score(f.model, f.data, Precision::fp32, ll.data(), nullptr);  // the buffer is no longer the statistics
  EXPECT_FALSE(cuda->all_reduce_statistics(*world.comm, stats));
  EXPECT_FALSE(engine::make_cpu_compute(1)->all_reduce_statistics(*world.comm, stats));
#endif
}

// The distributed handle's E-step takes that path under nccl (its error mark in the same
// reduction) and returns what the local handle does (one rank).
TEST(CudaStatistics, TheDistributedEStepUnderNcclMatchesTheLocalOne) {
#if !MIXLE_HAVE_NCCL
  MIXLE_SKIP_WITHOUT_NCCL();
#else
  MIXLE_CUDA_OR_SKIP(cuda);
  NcclWorld world;
  Fixture f;
  engine::EstimatorOptions options;
  options.precision = Precision::fp32;
  engine::LocalEncodedData local(f.data, std::move(cuda));
  std::string why;
  engine::DistributedEncodedData distributed(f.data, f.data.rows(), 0, *world.comm, cuda_or_reason(why));
  // Each handle's first pass uploads its rows; the second finds them resident.
  local.stream_accumulate(f.model, options);
  distributed.stream_accumulate(f.model, options);
#if MIXLE_CUDA_SIM
  cudasim::reset_counters();
#endif
  const engine::Statistics expected = local.stream_accumulate(f.model, options);
#if MIXLE_CUDA_SIM
  const std::uint64_t local_h2d = cudasim::counters().h2d_bytes;  // the model
  cudasim::reset_counters();
#endif
  const engine::Statistics got = distributed.stream_accumulate(f.model, options);
  EXPECT_EQ(got.values, expected.values);
#if MIXLE_CUDA_SIM
  // The model and the error mark; staged through the host, the statistics would cross again.
  EXPECT_EQ(cudasim::counters().h2d_bytes, local_h2d + sizeof(double));
#endif
#endif
}

}  // namespace
}  // namespace mixle::test
