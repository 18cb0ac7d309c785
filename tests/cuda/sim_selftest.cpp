// The CUDA simulator tested as a tool (simulator builds only): small kernels with planted bugs —
// a removed __syncthreads, an off-by-one tail, a shuffle from a lane outside the mask, a shared
// array overrun, a host pointer used as a device pointer — must each be caught, and the same
// kernels without the bug must pass under every schedule. Then the execution model itself:
// warp collectives, barriers, deferred stream work, device memory, cuBLAS rounding.
#include "kernels/cuda/device.cuh"

#include <cublas_v2.h>
#include <mixle/cudasim/testing.hpp>

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <string>
#include <vector>

namespace mixle::kernels::cuda {
namespace {

namespace sim = ::mixle::cudasim;

constexpr const char* kSchedules[] = {"forward", "reverse", "random:1", "random:2", "random:3"};

class ScopedSchedule {
 public:
  explicit ScopedSchedule(const char* value) {
    if (const char* old = std::getenv("MIXLE_SIM_SCHEDULE")) old_ = old, had_ = true;
    ::setenv("MIXLE_SIM_SCHEDULE", value, 1);
  }
  ~ScopedSchedule() {
    if (had_)
      ::setenv("MIXLE_SIM_SCHEDULE", old_.c_str(), 1);
    else
      ::unsetenv("MIXLE_SIM_SCHEDULE");
  }

 private:
  std::string old_;
  bool had_ = false;
};

/// Device memory for a test, freed at the end of the scope.
template <class T>
struct Device {
  explicit Device(std::size_t n) : count(n) { EXPECT_EQ(cudaMalloc(&p, n * sizeof(T)), cudaSuccess); }
  ~Device() { cudaFree(p); }
  std::vector<T> read() const {
    std::vector<T> h(count);
    EXPECT_EQ(cudaMemcpy(h.data(), p, count * sizeof(T), cudaMemcpyDeviceToHost), cudaSuccess);
    return h;
  }
  void write(const std::vector<T>& h) {
    EXPECT_EQ(cudaMemcpy(p, h.data(), h.size() * sizeof(T), cudaMemcpyHostToDevice), cudaSuccess);
  }
  T* p = nullptr;
  std::size_t count;
};

/// Clears the sticky error a planted bug left on the device (a simulator-only mercy).
class SimSelfTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(cudaDeviceReset(), cudaSuccess);
    GTEST_FLAG_SET(death_test_style, "threadsafe");
  }
  void TearDown() override { cudaDeviceReset(); }
};

// ---- planted bug 1: a removed __syncthreads --------------------------------------------------
constexpr int kReduceThreads = 128;

/// Each block sums its 128 inputs through shared memory; thread 0 writes the block's sum.
template <bool kBarrier>
__global__ void block_sum_kernel(const float* x, float* out) {
  __shared__ float s[kReduceThreads];
  const int tid = threadIdx.x;
  s[tid] = x[blockIdx.x * kReduceThreads + tid];
  if (kBarrier) __syncthreads();
  if (tid == 0) {
    float total = 0.0f;
    for (int i = 0; i < kReduceThreads; ++i) total += s[i];
    out[blockIdx.x] = total;
  }
}

template <bool kBarrier>
std::vector<float> block_sums(const char* schedule) {
  ScopedSchedule order(schedule);
  constexpr int blocks = 3;
  std::vector<float> x(blocks * kReduceThreads);
  std::iota(x.begin(), x.end(), 1.0f);
  Device<float> in(x.size()), out(blocks);
  in.write(x);
  launch_kernel<block_sum_kernel<kBarrier>>(blocks, kReduceThreads, 0, nullptr, in.p, out.p);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  return out.read();
}

TEST_F(SimSelfTest, RemovedBarrierGivesAWrongSumUnderSomeSchedule) {
  int wrong = 0;
  for (const char* schedule : kSchedules) {
    const std::vector<float> good = block_sums<true>(schedule);
    for (int b = 0; b < 3; ++b) {
      // Σ of 128 consecutive integers from 128b + 1: exact in float.
      const float want = 64.0f * (2.0f * 128.0f * static_cast<float>(b) + 129.0f);
      EXPECT_EQ(good[static_cast<std::size_t>(b)], want) << schedule << " block " << b;
    }
    const std::vector<float> bad = block_sums<false>(schedule);
    for (int b = 0; b < 3; ++b) wrong += !(bad[static_cast<std::size_t>(b)] == good[static_cast<std::size_t>(b)]);
  }
  EXPECT_GT(wrong, 0) << "a missing __syncthreads went unnoticed under every schedule";
}

/// Two rounds of "each warp counts, then every thread adds the counts up". Without the barrier
/// at the end of a round, a warp that runs ahead rewrites its count for the next round while
/// other warps still read this round's — the race a GPU's independent warps expose, and which the
/// simulator exposes by letting a warp whose collective has completed run ahead.
template <bool kBarrier>
__global__ void warp_rounds_kernel(int* out) {
  __shared__ int counts[4];
  const int lane = static_cast<int>(threadIdx.x) % 32, warp = static_cast<int>(threadIdx.x) / 32;
  int total = 0;
  for (int round = 0; round < 2; ++round) {
    const unsigned ballot = __ballot_sync(0xffffffffu, (static_cast<int>(threadIdx.x) + round) % 3 == 0);
    if (lane == 0) counts[warp] = __popc(ballot);
    __syncthreads();
    for (int w = 0; w < 4; ++w) total += counts[w];
    if (kBarrier) __syncthreads();
  }
  out[threadIdx.x] = total;
}

TEST_F(SimSelfTest, RemovedBarrierBetweenRoundsIsCaughtWhenAWarpRunsAhead) {
  int wrong = 0;
  for (const char* schedule : kSchedules) {
    ScopedSchedule order(schedule);
    Device<int> good(128), bad(128);
    launch_kernel<warp_rounds_kernel<true>>(1, 128, 0, nullptr, good.p);
    launch_kernel<warp_rounds_kernel<false>>(1, 128, 0, nullptr, bad.p);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess) << schedule;
    // Round r counts the threads t of 128 with (t + r) % 3 == 0: 43, then 42.
    EXPECT_EQ(good.read(), std::vector<int>(128, 85)) << schedule;
    wrong += bad.read() != good.read();
  }
  EXPECT_GT(wrong, 0) << "a warp running ahead past a missing barrier went unnoticed under every schedule";
}

// ---- planted bug 2: an off-by-one tail bound ---------------------------------------------------
template <bool kOffByOne>
__global__ void scale_kernel(const float* x, float* y, int n) {
  const int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (kOffByOne ? i > n : i >= n) return;
  y[i] = 2.0f * x[i];
}

void run_scale_off_by_one() {
  constexpr int n = 100;  // 128 threads: the tail is 28 threads wide
  Device<float> x(n), y(n);
  x.write(std::vector<float>(n, 1.0f));
  launch_kernel<scale_kernel<true>>(1, 128, 0, nullptr, x.p, y.p, n);
  const cudaError_t e = cudaDeviceSynchronize();
  if (e != cudaSuccess) std::fprintf(stderr, "synchronise: %s; %s\n", cudaGetErrorName(e), sim::last_fault().c_str());
  std::exit(e == cudaSuccess ? 0 : 3);
}

TEST_F(SimSelfTest, OffByOneTailIsCaughtAndNamesTheKernel) {
  {
    constexpr int n = 100;
    Device<float> x(n), y(n);
    x.write(std::vector<float>(n, 1.0f));
    launch_kernel<scale_kernel<false>>(1, 128, 0, nullptr, x.p, y.p, n);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    EXPECT_EQ(y.read(), std::vector<float>(n, 2.0f));
  }
  // AddressSanitizer stops the read of x[100]; without it the write of y[100] lands in the
  // allocation's guard bytes, and the simulator reports it after the kernel.
#if MIXLE_SANITIZE_ADDRESS
  EXPECT_DEATH(run_scale_off_by_one(), "heap-buffer-overflow.*in kernel .*scale_kernel<true>");
#else
  EXPECT_EXIT(run_scale_off_by_one(), ::testing::ExitedWithCode(3),
              "cudaErrorIllegalAddress.*kernel .*scale_kernel<true> wrote up to [0-9]+ byte");
#endif
}

// ---- planted bug 3: a shuffle from a lane outside the mask -------------------------------------
template <bool kOutside>
__global__ void half_warp_rotate_kernel(int* out) {
  const int lane = static_cast<int>(threadIdx.x);
  int v = lane;
  if (lane < 16) {
    // The first half-warp rotates its values; the buggy version reads lane 16 from lane 15.
    const int src = kOutside ? lane + 1 : (lane + 1) % 16;
    v = __shfl_sync(0x0000ffffu, v, src);
  }
  out[lane] = v;
}

TEST_F(SimSelfTest, ShuffleFromALaneOutsideTheMaskIsCaught) {
  Device<int> out(32);
  launch_kernel<half_warp_rotate_kernel<false>>(1, 32, 0, nullptr, out.p);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  const std::vector<int> got = out.read();
  for (int l = 0; l < 32; ++l) EXPECT_EQ(got[static_cast<std::size_t>(l)], l < 16 ? (l + 1) % 16 : l);

  launch_kernel<half_warp_rotate_kernel<true>>(1, 32, 0, nullptr, out.p);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaErrorLaunchFailure);
  const std::string fault = sim::last_fault();
  EXPECT_NE(fault.find("half_warp_rotate_kernel<true>"), std::string::npos) << fault;
  EXPECT_NE(fault.find("reads lane 16 of warp 0, which is not in the mask"), std::string::npos) << fault;
  // The fault is sticky, as on a GPU: the device refuses further work until it is reset.
  EXPECT_EQ(cudaMemset(out.p, 0, sizeof(int)), cudaErrorLaunchFailure);
}

// ---- planted bug 4: a shared array overrun -----------------------------------------------------
template <bool kOverrun>
__global__ void shift_left_kernel(const float* x, float* y) {
  __shared__ float s[64];
  const int tid = static_cast<int>(threadIdx.x);
  s[tid] = x[tid];
  __syncthreads();
  // Each thread takes its right neighbour's value; the last one wraps (or, buggy, overruns).
  y[tid] = s[kOverrun ? tid + 1 : (tid + 1) % 64];
}

void run_shared_overrun() {
  Device<float> x(64), y(64);
  x.write(std::vector<float>(64, 1.0f));
  launch_kernel<shift_left_kernel<true>>(1, 64, 0, nullptr, x.p, y.p);
  std::exit(cudaDeviceSynchronize() == cudaSuccess ? 0 : 3);
}

TEST_F(SimSelfTest, SharedArrayOverrunIsCaughtAndNamesTheKernel) {
  {
    Device<float> x(64), y(64);
    std::vector<float> v(64);
    std::iota(v.begin(), v.end(), 0.0f);
    x.write(v);
    launch_kernel<shift_left_kernel<false>>(1, 64, 0, nullptr, x.p, y.p);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    const std::vector<float> got = y.read();
    for (int i = 0; i < 64; ++i) EXPECT_EQ(got[static_cast<std::size_t>(i)], static_cast<float>((i + 1) % 64));
  }
#if MIXLE_SANITIZE_UNDEFINED
  // UBSan's bounds check knows the array's extent (shared arrays are arrays, not pointers). GCC's
  // UBSan runtime is not AddressSanitizer's, so the simulator's death callback does not run for
  // it; its stack trace names the kernel.
  ::setenv("UBSAN_OPTIONS", "print_stacktrace=1", 1);
  EXPECT_DEATH(run_shared_overrun(), "index 64 out of bounds for type 'float \\[64\\]'.*shift_left_kernel<true>");
#else
  GTEST_SKIP() << "a shared array overrun is caught by UndefinedBehaviorSanitizer's bounds check; this build "
                  "has none (scripts/test builds the simulator tier with MIXLE_SANITIZE=address;undefined)";
#endif
}

// ---- planted bug 5: a host pointer passed as a device pointer --------------------------------
__global__ void fill_kernel(float* y, float v, int n) {
  const int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (i < n) y[i] = v;
}

struct Span {
  float* data;
  int size;
};
__global__ void fill_span_kernel(Span s) {
  const int i = static_cast<int>(threadIdx.x);
  if (i < s.size) s.data[i] = 1.0f;
}

TEST_F(SimSelfTest, HostPointerPassedAsDevicePointerIsCaught) {
  std::vector<float> host(32, 0.0f);
  launch_kernel<fill_kernel>(1, 32, 0, nullptr, host.data(), 5.0f, 32);
  EXPECT_EQ(cudaPeekAtLastError(), cudaErrorIllegalAddress);
  std::string fault = sim::last_fault();
  EXPECT_NE(fault.find("fill_kernel: argument 0 is host memory"), std::string::npos) << fault;
  EXPECT_EQ(host, std::vector<float>(32, 0.0f)) << "the kernel must not have run";

  ASSERT_EQ(cudaDeviceReset(), cudaSuccess);
  // A pointer inside a struct argument is checked too.
  launch_kernel<fill_span_kernel>(1, 32, 0, nullptr, Span{host.data(), 32});
  EXPECT_EQ(cudaPeekAtLastError(), cudaErrorIllegalAddress);
  fault = sim::last_fault();
  EXPECT_NE(fault.find("argument 0.field0 is host memory"), std::string::npos) << fault;

  ASSERT_EQ(cudaDeviceReset(), cudaSuccess);
  // A copy with the pointers swapped is refused (not a device fault: the call fails).
  Device<float> dev(32);
  EXPECT_EQ(cudaMemcpy(host.data(), dev.p, 32 * sizeof(float), cudaMemcpyHostToDevice), cudaErrorInvalidValue);
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidValue);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess) << "a refused copy is not sticky";
  // Freed device memory is not device memory any more.
  float* freed = nullptr;
  ASSERT_EQ(cudaMalloc(&freed, 64), cudaSuccess);
  ASSERT_EQ(cudaFree(freed), cudaSuccess);
  launch_kernel<fill_kernel>(1, 16, 0, nullptr, freed, 1.0f, 16);
  EXPECT_EQ(cudaPeekAtLastError(), cudaErrorIllegalAddress);
  fault = sim::last_fault();
  EXPECT_NE(fault.find("freed device memory"), std::string::npos) << fault;
}

#if MIXLE_SANITIZE_ADDRESS
void read_device_memory_on_the_host() {
  Device<float> dev(8);
  volatile float v = dev.p[3];  // the bug: host code dereferencing a device pointer
  (void)v;
  std::exit(0);
}

TEST_F(SimSelfTest, HostCodeReadingDeviceMemoryIsCaught) {
  EXPECT_DEATH(read_device_memory_on_the_host(), "use-after-poison");
}
#endif

// ---- the execution model -----------------------------------------------------------------------
__global__ void divergent_barrier_kernel(int* out) {
  if (threadIdx.x >= 32) return;
  __syncthreads();
  out[threadIdx.x] = 1;
}

TEST_F(SimSelfTest, BarrierInDivergentCodeIsAFault) {
  Device<int> out(64);
  launch_kernel<divergent_barrier_kernel>(1, 64, 0, nullptr, out.p);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaErrorLaunchFailure);
  EXPECT_NE(sim::last_fault().find("a barrier in divergent code"), std::string::npos) << sim::last_fault();
}

__global__ void early_exit_shuffle_kernel(int* out) {
  if (threadIdx.x == 7) return;  // lane 7 leaves; the others still name it in their mask
  out[threadIdx.x] = __shfl_xor_sync(0xffffffffu, static_cast<int>(threadIdx.x), 1);
}

TEST_F(SimSelfTest, ShuffleWaitingForAnExitedLaneIsAFault) {
  Device<int> out(32);
  launch_kernel<early_exit_shuffle_kernel>(1, 32, 0, nullptr, out.p);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaErrorLaunchFailure);
  EXPECT_NE(sim::last_fault().find("lane 7 of warp 0, which has exited"), std::string::npos) << sim::last_fault();
}

/// Every warp collective's result, for one warp of 32 lanes.
__global__ void collectives_kernel(int* out) {
  const int lane = static_cast<int>(threadIdx.x);
  int* o = out + lane * 8;
  o[0] = __shfl_up_sync(0xffffffffu, lane, 3, 16);    // own value for the first 3 lanes of each half
  o[1] = __shfl_down_sync(0xffffffffu, lane, 5, 16);  // own value for the last 5 of each half
  o[2] = __shfl_xor_sync(0xffffffffu, lane, 16);
  o[3] = __shfl_sync(0xffffffffu, lane, 35);  // lane 35 mod 32 = 3
  o[4] = static_cast<int>(__ballot_sync(0xffffffffu, lane % 3 == 0));
  o[5] = __any_sync(0xffffffffu, lane == 31) + 2 * __all_sync(0xffffffffu, lane < 31);
  o[6] = __syncthreads_count(lane % 4 == 0);
  o[7] = __reduce_add_sync(0xffffffffu, lane);
}

TEST_F(SimSelfTest, WarpCollectivesFollowCudasSemantics) {
  for (const char* schedule : kSchedules) {
    ScopedSchedule order(schedule);
    Device<int> out(32 * 8);
    launch_kernel<collectives_kernel>(1, 32, 0, nullptr, out.p);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess) << schedule;
    const std::vector<int> got = out.read();
    unsigned ballot = 0;
    for (int l = 0; l < 32; l += 3) ballot |= 1u << l;
    for (int l = 0; l < 32; ++l) {
      const int* o = got.data() + l * 8;
      SCOPED_TRACE(std::string(schedule) + " lane " + std::to_string(l));
      EXPECT_EQ(o[0], l % 16 < 3 ? l : l - 3);
      EXPECT_EQ(o[1], l % 16 >= 11 ? l : l + 5);
      EXPECT_EQ(o[2], l ^ 16);
      EXPECT_EQ(o[3], 3);
      EXPECT_EQ(static_cast<unsigned>(o[4]), ballot);
      EXPECT_EQ(o[5], 1);
      EXPECT_EQ(o[6], 8);
      EXPECT_EQ(o[7], 31 * 32 / 2);
    }
  }
}

__global__ void dynamic_shared_kernel(float* out, int n) {
  MIXLE_DYNAMIC_SHARED(float, tile);
  const int tid = static_cast<int>(threadIdx.x);
  tile[tid] = static_cast<float>(tid);
  __syncthreads();
  if (tid < n) out[tid] = tile[n - 1 - tid];
}

TEST_F(SimSelfTest, DynamicSharedMemoryHasTheLaunchsSize) {
  Device<float> out(32);
  launch_kernel<dynamic_shared_kernel>(1, 32, 32 * sizeof(float), nullptr, out.p, 32);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  const std::vector<float> got = out.read();
  for (int i = 0; i < 32; ++i) EXPECT_EQ(got[static_cast<std::size_t>(i)], static_cast<float>(31 - i));
#if MIXLE_SANITIZE_ADDRESS
  // 31 floats of dynamic shared memory for 32 threads: thread 31 writes past the end.
  EXPECT_DEATH(
      {
        launch_kernel<dynamic_shared_kernel>(1, 32, 31 * sizeof(float), nullptr, out.p, 31);
        cudaDeviceSynchronize();
      },
      "heap-buffer-overflow.*in kernel .*dynamic_shared_kernel");
#endif
}

TEST_F(SimSelfTest, BadLaunchConfigurationIsRefusedAndNotSticky) {
  Device<float> out(4);
  launch_kernel<fill_kernel>(1, 2048, 0, nullptr, out.p, 1.0f, 4);
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidConfiguration);
  launch_kernel<fill_kernel>(1, 4, 0, nullptr, out.p, 1.0f, 4);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_EQ(out.read(), std::vector<float>(4, 1.0f));
}

// ---- deferred stream work -----------------------------------------------------------------------
TEST_F(SimSelfTest, StreamWorkRunsWhenTheHostWaitsAndInStreamOrder) {
  cudaStream_t copy = nullptr, compute = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&copy, cudaStreamNonBlocking), cudaSuccess);
  ASSERT_EQ(cudaStreamCreateWithFlags(&compute, cudaStreamNonBlocking), cudaSuccess);
  cudaEvent_t uploaded = nullptr;
  ASSERT_EQ(cudaEventCreateWithFlags(&uploaded, cudaEventDisableTiming), cudaSuccess);
  float* pinned = nullptr;
  ASSERT_EQ(cudaMallocHost(&pinned, 4 * sizeof(float)), cudaSuccess);
  Device<float> dev(4);
  for (int i = 0; i < 4; ++i) pinned[i] = 1.0f;
  ASSERT_EQ(cudaMemcpyAsync(dev.p, pinned, 4 * sizeof(float), cudaMemcpyHostToDevice, copy), cudaSuccess);
  ASSERT_EQ(cudaEventRecord(uploaded, copy), cudaSuccess);
  // The bug this models: the host refills the pinned buffer before the copy has run. A copy from
  // pinned memory reads it when it runs, so the device sees the new values.
  for (int i = 0; i < 4; ++i) pinned[i] = 7.0f;
  ASSERT_EQ(cudaStreamWaitEvent(compute, uploaded, 0), cudaSuccess);
  launch_kernel<scale_kernel<false>>(1, 4, 0, compute, dev.p, dev.p, 4);
  ASSERT_EQ(cudaMemcpyAsync(pinned, dev.p, 4 * sizeof(float), cudaMemcpyDeviceToHost, compute), cudaSuccess);
  EXPECT_EQ(pinned[0], 7.0f) << "nothing has run before the host waits";
  ASSERT_EQ(cudaStreamSynchronize(compute), cudaSuccess);
  EXPECT_EQ(pinned[0], 14.0f) << "the compute stream waited for the copy stream's upload";
  // A copy from pageable memory takes the bytes at the call.
  std::vector<float> pageable(4, 3.0f);
  ASSERT_EQ(cudaMemcpyAsync(dev.p, pageable.data(), 4 * sizeof(float), cudaMemcpyHostToDevice, copy), cudaSuccess);
  pageable.assign(4, 5.0f);
  ASSERT_EQ(cudaStreamSynchronize(copy), cudaSuccess);
  EXPECT_EQ(dev.read(), std::vector<float>(4, 3.0f));
  EXPECT_EQ(cudaStreamQuery(copy), cudaSuccess);
  cudaFreeHost(pinned);
  cudaEventDestroy(uploaded);
  cudaStreamDestroy(copy);
  cudaStreamDestroy(compute);
}

TEST_F(SimSelfTest, DeviceMemoryIsLimitedByTheSimulatedSize) {
  ::setenv("MIXLE_SIM_DEVICE_MEMORY", "1M", 1);
  std::size_t free_bytes = 0, total = 0;
  ASSERT_EQ(cudaMemGetInfo(&free_bytes, &total), cudaSuccess);
  EXPECT_EQ(total, std::size_t{1} << 20);
  void* a = nullptr;
  void* b = nullptr;
  EXPECT_EQ(cudaMalloc(&a, 600 << 10), cudaSuccess);
  ASSERT_EQ(cudaMemGetInfo(&free_bytes, &total), cudaSuccess);
  EXPECT_EQ(free_bytes, (std::size_t{1} << 20) - (600u << 10));
  EXPECT_EQ(cudaMalloc(&b, 600 << 10), cudaErrorMemoryAllocation);
  EXPECT_EQ(cudaGetLastError(), cudaErrorMemoryAllocation);
  cudaFree(a);
  EXPECT_EQ(cudaMalloc(&b, 600 << 10), cudaSuccess);
  cudaFree(b);
  ::unsetenv("MIXLE_SIM_DEVICE_MEMORY");
}

// ---- cuBLAS ------------------------------------------------------------------------------------
TEST_F(SimSelfTest, Tf32GemmRoundsItsOperandsToTenMantissaBits) {
  // C (1×1) = A (1×1) · B (1×1): 1 + 2⁻¹² is not a TF32 value and rounds to 1; 1 + 2⁻¹⁰ is one.
  const float a_host[2] = {1.0f + std::ldexp(1.0f, -12), 1.0f + std::ldexp(1.0f, -10)};
  Device<float> a(2), b(1), c(1);
  a.write({a_host[0], a_host[1]});
  b.write({3.0f});
  cublasHandle_t handle = nullptr;
  ASSERT_EQ(cublasCreate(&handle), CUBLAS_STATUS_SUCCESS);
  const float one = 1.0f, zero = 0.0f;
  for (int i = 0; i < 2; ++i)
    for (cublasComputeType_t compute : {CUBLAS_COMPUTE_32F, CUBLAS_COMPUTE_32F_FAST_TF32}) {
      ASSERT_EQ(cublasGemmEx(handle, CUBLAS_OP_N, CUBLAS_OP_N, 1, 1, 1, &one, a.p + i, CUDA_R_32F, 1, b.p, CUDA_R_32F,
                             1, &zero, c.p, CUDA_R_32F, 1, compute, CUBLAS_GEMM_DEFAULT),
                CUBLAS_STATUS_SUCCESS);
      ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
      const float want = compute == CUBLAS_COMPUTE_32F_FAST_TF32 && i == 0 ? 3.0f : 3.0f * a_host[i];
      EXPECT_EQ(c.read()[0], want) << "operand " << i << (compute == CUBLAS_COMPUTE_32F ? " fp32" : " tf32");
    }
  // A host pointer as an operand is a device fault, named. (A static, not a heap block: simulated
  // device memory is heap memory, and without AddressSanitizer's gaps a small heap block can sit
  // right after a device allocation and be named as past its end.)
  static float host = 1.0f;
  EXPECT_EQ(cublasGemmEx(handle, CUBLAS_OP_N, CUBLAS_OP_N, 1, 1, 1, &one, &host, CUDA_R_32F, 1, b.p, CUDA_R_32F, 1,
                         &zero, c.p, CUDA_R_32F, 1, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
            CUBLAS_STATUS_EXECUTION_FAILED);
  EXPECT_NE(sim::last_fault().find("operand A (4 bytes) is host memory"), std::string::npos) << sim::last_fault();
  cublasDestroy(handle);
}

// ---- knobs ---------------------------------------------------------------------------------------
TEST(SimConfig, VisibleDevicesFollowCudaVisibleDevices) {
  ::setenv("MIXLE_SIM_DEVICES", "4", 1);
  ::setenv("CUDA_VISIBLE_DEVICES", "2,0,7,1", 1);  // stops at the invalid 7, as CUDA does
  EXPECT_EQ(sim::visible_devices(), (std::vector<int>{2, 0}));
  ::setenv("CUDA_VISIBLE_DEVICES", "", 1);
  EXPECT_TRUE(sim::visible_devices().empty());
  ::unsetenv("CUDA_VISIBLE_DEVICES");
  EXPECT_EQ(sim::visible_devices().size(), 4u);
  ::unsetenv("MIXLE_SIM_DEVICES");
  EXPECT_EQ(sim::visible_devices().size(), 1u);
  EXPECT_EQ(sim::parse_bytes("x", "3G"), std::size_t{3} << 30);
  EXPECT_EQ(sim::parse_bytes("x", "512"), 512u);
}

}  // namespace
}  // namespace mixle::kernels::cuda
