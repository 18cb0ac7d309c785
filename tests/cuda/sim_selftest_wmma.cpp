// The CUDA simulator's warp matrix functions (nvcuda::wmma, TF32 m16n16k8) tested as a tool
// (simulator builds only): a small GEMM through load, mma and store in every operand layout
// must give the product within the TF32 bound, under every schedule; a missing TF32 conversion,
// a misaligned pointer, lanes that disagree on the pointer and a lane that skips the collective
// must each be caught and named.
#include "kernels/cuda/device.cuh"

#include <mixle/cudasim/testing.hpp>
#include <mma.h>

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

namespace mixle::kernels::cuda {
namespace {

namespace sim = ::mixle::cudasim;
namespace wmma = ::nvcuda::wmma;

constexpr int kM = 32, kN = 32, kK = 16;  // C (32 × 32) = A (32 × 16) · B (16 × 32) + C0

class SimWmma : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_EQ(cudaDeviceReset(), cudaSuccess); }
  void TearDown() override {
    cudaDeviceReset();
    ::unsetenv("MIXLE_SIM_SCHEDULE");
  }
};

enum class Planted { none, unconverted, misaligned, diverging_pointer, missing_lane };

/// Four warps, one 16 × 16 tile of C each. A is row-major (lda kK) or column-major (lda kM), B
/// row-major (ldb kN) or column-major (ldb kK); C0 is read and C written in `layout`.
template <class LayoutA, class LayoutB, Planted kBug = Planted::none>
__global__ void gemm_kernel(const float* a, const float* b, const float* c0, float* c, wmma::layout_t layout) {
  constexpr bool kRowA = std::is_same_v<LayoutA, wmma::row_major>, kRowB = std::is_same_v<LayoutB, wmma::row_major>;
  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
  if (kBug == Planted::missing_lane && lane == 31) return;
  const int ti = warp / 2, tj = warp % 2;
  const bool rows = layout == wmma::mem_row_major;
  const std::size_t c_at =
      rows ? static_cast<std::size_t>(16 * ti) * kN + 16 * tj : static_cast<std::size_t>(16 * tj) * kM + 16 * ti;
  const unsigned ldc = rows ? kN : kM;
  wmma::fragment<wmma::accumulator, 16, 16, 8, float> acc;
  wmma::load_matrix_sync(acc, c0 + c_at, ldc, layout);
  for (int k0 = 0; k0 < kK; k0 += 8) {
    wmma::fragment<wmma::matrix_a, 16, 16, 8, wmma::precision::tf32, LayoutA> fa;
    wmma::fragment<wmma::matrix_b, 16, 16, 8, wmma::precision::tf32, LayoutB> fb;
    const float* pa = kRowA ? a + 16 * ti * kK + k0 : a + k0 * kM + 16 * ti;
    if (kBug == Planted::misaligned) pa += 1;
    if (kBug == Planted::diverging_pointer && lane == 5) pa += 8;
    wmma::load_matrix_sync(fa, pa, kRowA ? kK : kM);
    wmma::load_matrix_sync(fb, kRowB ? b + k0 * kN + 16 * tj : b + 16 * tj * kK + k0, kRowB ? kN : kK);
    if (kBug != Planted::unconverted) {
      for (int i = 0; i < fa.num_elements; ++i) fa.x[i] = wmma::__float_to_tf32(fa.x[i]);
      for (int i = 0; i < fb.num_elements; ++i) fb.x[i] = wmma::__float_to_tf32(fb.x[i]);
    }
    wmma::mma_sync(acc, fa, fb, acc);
  }
  wmma::store_matrix_sync(c + c_at, acc, ldc, layout);
}

struct Operands {
  std::vector<float> a, b, c0;  // A and B with 13 or more low bits set, so the conversion matters
};

Operands draw(unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-2.0f, 2.0f);
  Operands o;
  for (int i = 0; i < kM * kK; ++i) o.a.push_back(u(rng));
  for (int i = 0; i < kK * kN; ++i) o.b.push_back(u(rng));
  for (int i = 0; i < kM * kN; ++i) o.c0.push_back(u(rng));
  return o;
}

/// Runs the kernel on `o` (laid out as the kernel reads it) and returns C row-major, or the fault.
template <class LayoutA, class LayoutB, Planted kBug = Planted::none>
std::vector<float> run(const Operands& o, wmma::layout_t layout, std::string* fault = nullptr) {
  constexpr bool kRowA = std::is_same_v<LayoutA, wmma::row_major>, kRowB = std::is_same_v<LayoutB, wmma::row_major>;
  std::vector<float> a(o.a.size()), b(o.b.size()), c0(o.c0.size());
  for (int i = 0; i < kM; ++i)
    for (int k = 0; k < kK; ++k) a[kRowA ? i * kK + k : k * kM + i] = o.a[i * kK + k];
  for (int k = 0; k < kK; ++k)
    for (int j = 0; j < kN; ++j) b[kRowB ? k * kN + j : j * kK + k] = o.b[k * kN + j];
  const bool rows = layout == wmma::mem_row_major;
  for (int i = 0; i < kM; ++i)
    for (int j = 0; j < kN; ++j) c0[rows ? i * kN + j : j * kM + i] = o.c0[i * kN + j];
  float *da, *db, *dc0, *dc;
  EXPECT_EQ(cudaMalloc(&da, a.size() * sizeof(float)), cudaSuccess);
  EXPECT_EQ(cudaMalloc(&db, b.size() * sizeof(float)), cudaSuccess);
  EXPECT_EQ(cudaMalloc(&dc0, c0.size() * sizeof(float)), cudaSuccess);
  EXPECT_EQ(cudaMalloc(&dc, c0.size() * sizeof(float)), cudaSuccess);
  cudaMemcpy(da, a.data(), a.size() * sizeof(float), cudaMemcpyHostToDevice);
  cudaMemcpy(db, b.data(), b.size() * sizeof(float), cudaMemcpyHostToDevice);
  cudaMemcpy(dc0, c0.data(), c0.size() * sizeof(float), cudaMemcpyHostToDevice);
  launch_kernel<gemm_kernel<LayoutA, LayoutB, kBug>>(1, 128, 0, nullptr, da, db, dc0, dc, layout);
  const cudaError_t e = cudaDeviceSynchronize();
  std::vector<float> got(c0.size()), c(c0.size());
  if (fault) *fault = e == cudaSuccess ? std::string() : sim::last_fault();
  if (e == cudaSuccess) {
    cudaMemcpy(got.data(), dc, got.size() * sizeof(float), cudaMemcpyDeviceToHost);
    for (int i = 0; i < kM; ++i)
      for (int j = 0; j < kN; ++j) c[i * kN + j] = got[rows ? i * kN + j : j * kM + i];
  }
  cudaFree(da), cudaFree(db), cudaFree(dc0), cudaFree(dc);
  return c;
}

/// C against the float64 product of the TF32-rounded operands: within the fp32 accumulation's
/// bound (kK + 1 roundings of terms no larger than Σ|a||b| + |c0|); and far from the product of
/// the unrounded operands for at least one entry (so the conversion took place).
void expect_product(const Operands& o, const std::vector<float>& c, const std::string& what) {
  const double u = std::ldexp(1.0, -24);
  int differs_from_fp32 = 0;
  for (int i = 0; i < kM; ++i)
    for (int j = 0; j < kN; ++j) {
      double want = o.c0[i * kN + j], exact = want, size = std::fabs(want);
      for (int k = 0; k < kK; ++k) {
        const double p =
            static_cast<double>(wmma::__float_to_tf32(o.a[i * kK + k])) * wmma::__float_to_tf32(o.b[k * kN + j]);
        want += p;
        exact += static_cast<double>(o.a[i * kK + k]) * o.b[k * kN + j];
        size += std::fabs(p);
      }
      const double got = c[static_cast<std::size_t>(i * kN + j)];
      EXPECT_LE(std::fabs(got - want), (kK + 1) * u * size) << what << " C(" << i << ", " << j << ")";
      differs_from_fp32 += std::fabs(got - exact) > (kK + 1) * u * size;
    }
  EXPECT_GT(differs_from_fp32, 0) << what << ": no entry shows the TF32 rounding of the operands";
}

TEST_F(SimWmma, ProductIsWithinTheTf32BoundInEveryLayoutAndSchedule) {
  const Operands o = draw(7);
  for (const char* schedule : {"forward", "reverse", "random:1", "random:2"}) {
    ::setenv("MIXLE_SIM_SCHEDULE", schedule, 1);
    for (wmma::layout_t layout : {wmma::mem_row_major, wmma::mem_col_major}) {
      const std::string what = std::string(schedule) + (layout == wmma::mem_row_major ? " C row" : " C col");
      expect_product(o, run<wmma::row_major, wmma::row_major>(o, layout), what + ", A row, B row");
      expect_product(o, run<wmma::row_major, wmma::col_major>(o, layout), what + ", A row, B col");
      expect_product(o, run<wmma::col_major, wmma::row_major>(o, layout), what + ", A col, B row");
      expect_product(o, run<wmma::col_major, wmma::col_major>(o, layout), what + ", A col, B col");
    }
  }
}

TEST_F(SimWmma, Tf32ConversionRoundsToNearestWithTiesAwayFromZero) {
  const float one = 1.0f;
  EXPECT_EQ(wmma::__float_to_tf32(one + std::ldexp(1.0f, -11)), one + std::ldexp(1.0f, -10));  // tie: away
  EXPECT_EQ(wmma::__float_to_tf32(-(one + std::ldexp(1.0f, -11))), -(one + std::ldexp(1.0f, -10)));
  EXPECT_EQ(wmma::__float_to_tf32(one + std::ldexp(1.0f, -12)), one);  // below the tie: down
  EXPECT_EQ(wmma::__float_to_tf32(one + 3 * std::ldexp(1.0f, -12)), one + std::ldexp(1.0f, -10));
  EXPECT_TRUE(std::isnan(wmma::__float_to_tf32(std::nanf(""))));
  EXPECT_EQ(wmma::__float_to_tf32(INFINITY), INFINITY);
}

TEST_F(SimWmma, MisuseIsAFaultThatNamesTheKernelAndTheRule) {
  const Operands o = draw(8);
  std::string fault;
  run<wmma::row_major, wmma::row_major, Planted::unconverted>(o, wmma::mem_row_major, &fault);
  EXPECT_NE(fault.find("gemm_kernel"), std::string::npos) << fault;
  EXPECT_NE(fault.find("is not a TF32 value (convert it with __float_to_tf32)"), std::string::npos) << fault;
  ASSERT_EQ(cudaDeviceReset(), cudaSuccess);
  run<wmma::row_major, wmma::row_major, Planted::misaligned>(o, wmma::mem_row_major, &fault);
  EXPECT_NE(fault.find("wmma::load_matrix_sync: the pointer is not 256-bit aligned"), std::string::npos) << fault;
  ASSERT_EQ(cudaDeviceReset(), cudaSuccess);
  run<wmma::row_major, wmma::row_major, Planted::diverging_pointer>(o, wmma::mem_row_major, &fault);
  EXPECT_NE(fault.find("the lanes of the warp passed different pointers or ldm"), std::string::npos) << fault;
  ASSERT_EQ(cudaDeviceReset(), cudaSuccess);
  run<wmma::row_major, wmma::row_major, Planted::missing_lane>(o, wmma::mem_row_major, &fault);
  EXPECT_NE(fault.find("gemm_kernel"), std::string::npos) << fault;
  EXPECT_NE(fault.find("lane 31"), std::string::npos) << fault;
}

}  // namespace
}  // namespace mixle::kernels::cuda
