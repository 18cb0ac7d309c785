// The nccl communicator on a GPU, or on the CUDA simulator's NCCL (world size 1 still runs init,
// the collectives, the polling, host-buffer staging, a split and the clean shutdown; several ranks
// run in tests/cuda/cuda_cli_test.cpp). Skipped visibly without NCCL or a device;
// MIXLE_REQUIRE_GPU=1 turns the skip into a failure on machines that must have one.
#include "comms/communicator.hpp"
#include "comms/store.hpp"

#include <mixle/error.hpp>

#include <gtest/gtest.h>

#include <cstdlib>

#if MIXLE_HAVE_NCCL
#include <cuda_runtime_api.h>
#endif
#if MIXLE_CUDA_SIM
#include <mixle/cudasim/testing.hpp>
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
#if MIXLE_CUDA_SIM
  const std::size_t held_before = cudasim::device_memory_used(0);
#endif
  StoreServer server("127.0.0.1", 0, "tok");
  CommOptions o;
  o.timeout = 60s;
  o.store = std::make_shared<StoreClient>("127.0.0.1", server.port(), "tok", 0, 5s, 60s);
  auto comm = make_communicator("nccl", std::move(o));
  EXPECT_EQ(comm->type(), "nccl");
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
  // Host buffers are staged through the communicator's device buffer.
  EXPECT_TRUE(comm->accepts(MemorySpace::host));
  std::vector<double> staged = host;
  comm->all_reduce_sum(std::span<double>(staged), MemorySpace::host);
  EXPECT_EQ(staged, host);
  std::vector<float> big(3'000'000, 0.5f);  // larger than the first staging allocation (1 MiB)
  comm->all_reduce_max(std::span<float>(big), MemorySpace::host);
  EXPECT_EQ(big.front(), 0.5f);
  EXPECT_EQ(big.back(), 0.5f);
  std::vector<int> send{7, 8}, recv(2, 0);
  comm->all_gather(std::span<const int>(send), std::span<int>(recv), MemorySpace::host);
  EXPECT_EQ(recv, send);
  comm->broadcast(std::span<int>(send), 0, MemorySpace::host);
  EXPECT_EQ(send, (std::vector<int>{7, 8}));
  // A split child (ncclCommSplit) reduces (host buffers staged); the parent works afterwards too.
  auto child = comm->split(3, 0);
  EXPECT_EQ(child->type(), "nccl");
  EXPECT_EQ(child->size(), 1);
  child->all_reduce_sum(std::span<double>(staged), MemorySpace::host);
  EXPECT_EQ(staged, host);
  child->barrier();
  child.reset();
  comm->all_reduce_sum(std::span<double>(staged), MemorySpace::host);
  EXPECT_EQ(staged, host);
#if MIXLE_CUDA_SIM
  // Closing the communicator gives back its device memory (the staging buffer included).
  comm.reset();
  EXPECT_EQ(cudasim::device_memory_used(0), held_before);
#endif
#endif
}

}  // namespace
}  // namespace mixle::comms
