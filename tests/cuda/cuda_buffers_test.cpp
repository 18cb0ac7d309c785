// The CUDA kernels' buffers (kernels/cuda/runtime.hpp): reserve() grows, never shrinks, keeps
// its allocation when asked for less, and leaves an empty buffer — not a stale size — when an
// allocation fails. On a GPU or on the simulator (whose device memory is configurable); CUDA
// builds only (the buffers are the CUDA kernels' own).
#include "common/kernel_compare.hpp"

#include <mixle/error.hpp>

#include <gtest/gtest.h>

#if MIXLE_HAVE_CUDA
#include "kernels/cuda/runtime.hpp"
#endif
#if MIXLE_CUDA_SIM
#include <mixle/cudasim/testing.hpp>
#endif

namespace mixle::test {
namespace {

#if MIXLE_HAVE_CUDA

namespace kc = kernels::cuda;

template <class Buffer>
void expect_grow_only(Buffer& b) {
  b.reserve(100);
  ASSERT_NE(b.data(), nullptr);
  EXPECT_EQ(b.size(), 100u);
  const auto* first = b.data();
  b.reserve(40);  // less: the same allocation
  EXPECT_EQ(b.data(), first);
  EXPECT_EQ(b.size(), 100u);
  b.reserve(300);
  EXPECT_EQ(b.size(), 300u);
}

TEST(CudaBuffers, ReserveGrowsAndNeverShrinks) {
  MIXLE_CUDA_OR_SKIP(cuda);
  kc::DeviceBuffer<double> device;
  expect_grow_only(device);
  kc::PinnedBuffer<float> pinned;
  expect_grow_only(pinned);
}

// A failed allocation throws MemoryError and leaves the buffer empty, so the next reserve
// allocates again instead of trusting a size it no longer has; the runtime's last error is
// reset, so the next launch check does not report the caught failure again.
TEST(CudaBuffers, AFailedAllocationLeavesAnEmptyBuffer) {
  MIXLE_CUDA_OR_SKIP(cuda);
  const std::size_t impossible = std::size_t{1} << 58;  // 2^61 bytes of doubles: no machine has it
  kc::DeviceBuffer<double> device(100);
  EXPECT_THROW(device.reserve(impossible), MemoryError);
  EXPECT_EQ(cudaPeekAtLastError(), cudaSuccess);
  EXPECT_EQ(device.size(), 0u);
  EXPECT_EQ(device.data(), nullptr);
  device.reserve(50);
  EXPECT_NE(device.data(), nullptr);
  kc::PinnedBuffer<double> pinned;
  pinned.reserve(100);
  EXPECT_THROW(pinned.reserve(impossible), MemoryError);
  EXPECT_EQ(cudaPeekAtLastError(), cudaSuccess);
  EXPECT_EQ(pinned.size(), 0u);
  EXPECT_EQ(pinned.data(), nullptr);
  pinned.reserve(50);
  EXPECT_NE(pinned.data(), nullptr);
  EXPECT_EQ(pinned.size(), 50u);
}

#endif  // MIXLE_HAVE_CUDA

#if MIXLE_CUDA_SIM
TEST(CudaBuffers, DeviceBuffersTakeExactlyTheirBytes) {
  const std::size_t before = cudasim::device_memory_used(0);
  {
    kc::DeviceBuffer<float> a(1000);
    kc::DeviceBuffer<double> b(3);
    EXPECT_EQ(cudasim::device_memory_used(0) - before, 1000 * sizeof(float) + 3 * sizeof(double));
  }
  EXPECT_EQ(cudasim::device_memory_used(0), before);
}
#endif

}  // namespace
}  // namespace mixle::test
