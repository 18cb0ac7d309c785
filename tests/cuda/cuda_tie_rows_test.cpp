// Rows at +inf log-density under several components (x = −inf under an exponential): the CUDA
// normalisation shares them equally among those components with log-likelihood +inf, as the
// CPU pass does (tests/kernels/cpu_tie_rows_test.cpp) — wherever they lie among finite rows.
#include "common/kernel_compare.hpp"
#include "engine/compute.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

namespace mixle::engine {
namespace {

TEST(CudaTies, PlusInfinityRowsMatchTheCpu) {
  MIXLE_CUDA_OR_SKIP(cuda);
  Model m;
  m.weights = {0.3, 0.7};
  Part e;
  e.family = Family::exponential;
  e.col_begin = 0;
  e.col_end = 1;
  e.rate = {0.5, 2.0};
  m.parts = {e};
  constexpr double kInf = std::numeric_limits<double>::infinity();
  std::vector<double> x(300, 1.25);
  for (std::size_t i : {0u, 5u, 31u, 32u, 33u, 299u}) x[i] = -kInf;
  const Dataset rows = Dataset::from_vector(x, x.size(), 1);
  const auto cpu = make_cpu_compute(1);
  for (const Precision p : {Precision::fp32, Precision::fp64}) {
    std::vector<double> ll_gpu(x.size()), resp_gpu(2 * x.size()), ll_cpu(x.size()), resp_cpu(2 * x.size());
    cuda->score(m, rows, p, ll_gpu.data(), resp_gpu.data());
    cpu->score(m, rows, p, ll_cpu.data(), resp_cpu.data());
    for (std::size_t i = 0; i < x.size(); ++i) {
      SCOPED_TRACE(i);
      if (std::isinf(x[i])) {
        EXPECT_EQ(ll_gpu[i], kInf);
        EXPECT_EQ(resp_gpu[2 * i], 0.5);
        EXPECT_EQ(resp_gpu[2 * i + 1], 0.5);
        EXPECT_EQ(ll_cpu[i], kInf);
        EXPECT_EQ(resp_cpu[2 * i], 0.5);
      } else {
        EXPECT_NEAR(ll_gpu[i], ll_cpu[i], 1e-5 * std::abs(ll_cpu[i]));
        EXPECT_NEAR(resp_gpu[2 * i], resp_cpu[2 * i], 1e-5);
      }
    }
  }
}

}  // namespace
}  // namespace mixle::engine
