// The nccl communicator on a real GPU (world size 1 still runs init, the collectives, the polling
// and the clean shutdown). Skipped visibly without NCCL or a device; MIXLE_REQUIRE_GPU=1 turns the
// skip into a failure on machines that must have one.
#include "comms/communicator.hpp"
#include "comms/store.hpp"

#include <mixle/error.hpp>

#include <gtest/gtest.h>

#include <cstdlib>

#if MIXLE_HAVE_NCCL
#include <cuda_runtime_api.h>
#endif

namespace mixle::comms {
namespace {

using namespace std::chrono_literals;

bool gpu_required() {
  const char* v = std::getenv("MIXLE_REQUIRE_GPU");
  return v != nullptr && std::string(v) == "1";
}

TEST(CommNccl, WorldSizeOneOnDeviceBuffers) {
#if !MIXLE_HAVE_NCCL
  if (gpu_required()) FAIL() << "MIXLE_REQUIRE_GPU=1 but mixle was built without NCCL";
  GTEST_SKIP() << "built without NCCL";
#else
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    if (gpu_required()) FAIL() << "MIXLE_REQUIRE_GPU=1 but no CUDA device";
    GTEST_SKIP() << "no CUDA device";
  }
  StoreServer server("127.0.0.1", 0, "tok");
  CommOptions o;
  o.timeout = 60s;
  o.store = std::make_shared<StoreClient>("127.0.0.1", server.port(), "tok", 0, 5s, 60s);
  auto comm = make_communicator(CommKind::nccl, std::move(o));
  EXPECT_EQ(comm->backend(), "nccl");
  std::vector<double> host{1.0, 2.5, -4.0};
  void* raw = nullptr;
  ASSERT_EQ(cudaMalloc(&raw, host.size() * sizeof(double)), cudaSuccess);
  auto* dev = static_cast<double*>(raw);
  cudaMemcpy(dev, host.data(), host.size() * sizeof(double), cudaMemcpyHostToDevice);
  comm->all_reduce_sum(std::span<double>(dev, host.size()), MemorySpace::device);
  comm->all_reduce_max(std::span<double>(dev, host.size()), MemorySpace::device);
  comm->broadcast(std::span<double>(dev, host.size()), 0, MemorySpace::device);
  comm->barrier();
  std::vector<double> back(host.size());
  cudaMemcpy(back.data(), dev, back.size() * sizeof(double), cudaMemcpyDeviceToHost);
  cudaFree(dev);
  EXPECT_EQ(back, host);  // one rank: sum and max are the identity
  EXPECT_THROW(comm->all_reduce_sum(std::span<double>(host), MemorySpace::host), InvalidInput);
#endif
}

}  // namespace
}  // namespace mixle::comms
