// gaussian_full on CUDA: −½‖P (x − mean)‖² added to L (P lower triangular, P = C⁻¹ where
// cov = C Cᵀ), and the shifted moments Σ r (x − s), Σ r (x − s)(x − s)ᵀ. Same operation order
// as kernels/cpu/families/gaussian_full.hpp.
#include "kernels/cuda/device.cuh"

#include <cstdlib>
#include <cstring>

namespace mixle::kernels::cuda {
namespace {

constexpr int kFullRows = 128;

constexpr int kFullOutputs = 16;  // y_i kept in registers per pass over the row

/// One thread per row, one component per blockIdx.y: the warp shares P_k (broadcast reads), the
/// larger operand (D² against D). y = P (x − mean) is formed kFullOutputs rows of P at a time:
/// each x_j − mean_j is computed once per group and feeds up to 16 FMAs (instead of being
/// recomputed for every i). Per output the arithmetic is the CPU's: y_i = Σ_{j≤i} P_ij (x_j − m_j)
/// with j ascending, then l −= ½ y_i² with i ascending.
template <class T>
__global__ void full_log_density_kernel(PartView<T> part, const T* __restrict__ x, int ld, T* __restrict__ logp, int K,
                                        std::int64_t rows) {
  const std::int64_t n = static_cast<std::int64_t>(blockIdx.x) * kFullRows + threadIdx.x;
  const int k = static_cast<int>(blockIdx.y);
  if (n >= rows) return;
  const int D = part.dims;
  const T* xr = x + n * ld + part.col_begin;
  const T* mean = part.coef + static_cast<std::int64_t>(k) * part.coef_stride;
  const T* P = mean + D;
  T l = logp[n * K + k];
  for (int i0 = 0; i0 < D; i0 += kFullOutputs) {
    T y[kFullOutputs];
#pragma unroll
    for (int a = 0; a < kFullOutputs; ++a) y[a] = T(0);
    const int j_end = i0 + kFullOutputs < D ? i0 + kFullOutputs : D;
    // gpu-model: full-log-density fp=17 per (row, component, j of a 16-output group)
    for (int j = 0; j < j_end; ++j) {
      const T dj = xr[j] - mean[j];
#pragma unroll
      for (int a = 0; a < kFullOutputs; ++a) {
        const int i = i0 + a;
        if (i < D && j <= i) y[a] += P[static_cast<std::int64_t>(i) * D + j] * dj;
      }
    }
#pragma unroll
    for (int a = 0; a < kFullOutputs; ++a)
      if (i0 + a < D) l -= T(0.5) * y[a] * y[a];
  }
  logp[n * K + k] = l;
}

/// Entry j < D: Σ r t_j; entry D + i·D + j: Σ r t_i t_j, t = x − s.
template <class T>
struct FullMoment {
  int i, j;
  bool second;
  T si, sj;
  __device__ FullMoment(const PartView<T>& part, int k, int e) {
    const int D = part.dims;
    second = e >= D;
    const int idx = second ? e - D : e;
    i = second ? idx / D : idx;
    j = second ? idx % D : idx;
    const T* s = part.shift + static_cast<std::int64_t>(k) * D;
    si = s[i];
    sj = s[j];
  }
  __device__ T operator()(const T* x, T r) const {
    if (!second) return r * (x[i] - si);
    return (r * (x[i] - si)) * (x[j] - sj);
  }
};

// Tiled second moments: a block owns (slot, component k, a 64 × 64 region of S2 on or above the
// diagonal of regions); each of its 256 threads keeps a 4 × 4 register block, and a region above
// the diagonal is also written to its mirror image (S2 is symmetric): half the work. The mirror
// holds Σ (r·t_i)·t_j where the CPU sums (r·t_j)·t_i, the same value to rounding. 32 rows of t = x − s_k (the region's
// i and j columns) and of r are staged in shared memory at a time, so per row a thread does 16 FMAs for 8 shared loads.
// Per entry the arithmetic is the generic kernel's and the CPU's: acc += (r·t_i)·t_j in row order, T within
// kSubBlockRows rows, float64 across.
constexpr int kFullSpan = 64;
constexpr int kFullReg = 4;
constexpr int kFullTileThreads = (kFullSpan / kFullReg) * (kFullSpan / kFullReg);  // 256
constexpr int kFullRowsPerLoad = 32;

template <class T>
__global__ void __launch_bounds__(kFullTileThreads)
    full_second_moment_kernel(PartView<T> part, const T* __restrict__ x, int ld, const T* __restrict__ resp, int K,
                              std::int64_t rows, std::int64_t rows_per_slot, double* __restrict__ partials,
                              std::int64_t stat_size, int spans) {
  __shared__ T ti[kFullRowsPerLoad][kFullSpan];
  __shared__ T tj[kFullRowsPerLoad][kFullSpan];
  __shared__ T rsh[kFullRowsPerLoad];
  const int tid = threadIdx.x;
  const int ty = tid / (kFullSpan / kFullReg), tx = tid % (kFullSpan / kFullReg);
  const std::int64_t slot = blockIdx.x;
  const int k = static_cast<int>(blockIdx.y);
  // blockIdx.z enumerates the region pairs (ib ≤ jb) row by row.
  int ib = 0, z = static_cast<int>(blockIdx.z);
  while (z >= spans - ib) z -= spans - ib, ++ib;
  const int jb = ib + z;
  const int i0 = ib * kFullSpan, j0 = jb * kFullSpan;
  const int D = part.dims;
  const T* shift = part.shift + static_cast<std::int64_t>(k) * D;
  const std::int64_t begin = slot * rows_per_slot;
  const std::int64_t end = begin + rows_per_slot < rows ? begin + rows_per_slot : rows;
  T acc[kFullReg][kFullReg];
  double tot[kFullReg][kFullReg];
#pragma unroll
  for (int a = 0; a < kFullReg; ++a)
#pragma unroll
    for (int b = 0; b < kFullReg; ++b) tot[a][b] = 0.0;
  for (std::int64_t b0 = begin; b0 < end; b0 += kSubBlockRows) {
    const std::int64_t b1 = b0 + kSubBlockRows < end ? b0 + kSubBlockRows : end;
#pragma unroll
    for (int a = 0; a < kFullReg; ++a)
#pragma unroll
      for (int b = 0; b < kFullReg; ++b) acc[a][b] = T(0);
    for (std::int64_t r0 = b0; r0 < b1; r0 += kFullRowsPerLoad) {
      const int nrow = static_cast<int>(b1 - r0 < kFullRowsPerLoad ? b1 - r0 : kFullRowsPerLoad);
      __syncthreads();  // the previous tile has been consumed
      for (int e = tid; e < nrow * kFullSpan; e += kFullTileThreads) {
        const int row = e / kFullSpan, col = e % kFullSpan;
        const T* xr = x + (r0 + row) * ld + part.col_begin;
        ti[row][col] = i0 + col < D ? xr[i0 + col] - shift[i0 + col] : T(0);
        tj[row][col] = j0 + col < D ? xr[j0 + col] - shift[j0 + col] : T(0);
      }
      if (tid < nrow) rsh[tid] = resp[(r0 + tid) * K + k];
      __syncthreads();
      // gpu-model: full-second-moment fp=20 per (row, component, region, thread)
      for (int row = 0; row < nrow; ++row) {
        const T r = rsh[row];
        if (r == T(0)) continue;  // uniform across the block
        T rti[kFullReg], tjv[kFullReg];
#pragma unroll
        for (int a = 0; a < kFullReg; ++a) rti[a] = r * ti[row][ty * kFullReg + a];
#pragma unroll
        for (int b = 0; b < kFullReg; ++b) tjv[b] = tj[row][tx * kFullReg + b];
#pragma unroll
        for (int a = 0; a < kFullReg; ++a)
#pragma unroll
          for (int b = 0; b < kFullReg; ++b) acc[a][b] += rti[a] * tjv[b];
      }
    }
#pragma unroll
    for (int a = 0; a < kFullReg; ++a)
#pragma unroll
      for (int b = 0; b < kFullReg; ++b) tot[a][b] += static_cast<double>(acc[a][b]);
  }
  double* out = partials + slot * stat_size + part.stat_offset + static_cast<std::int64_t>(k) * part.stat_stride + D;
#pragma unroll
  for (int a = 0; a < kFullReg; ++a)
#pragma unroll
    for (int b = 0; b < kFullReg; ++b) {
      const int i = i0 + ty * kFullReg + a, j = j0 + tx * kFullReg + b;
      if (i < D && j < D) {
        out[static_cast<std::int64_t>(i) * D + j] = tot[a][b];
        if (ib < jb) out[static_cast<std::int64_t>(j) * D + i] = tot[a][b];
      }
    }
}

/// MIXLE_CUDA_FULL_STATS=generic selects the generic statistics kernel (for comparisons).
bool use_generic_full_stats() {
  const char* v = std::getenv("MIXLE_CUDA_FULL_STATS");
  return v && std::strcmp(v, "generic") == 0;
}

}  // namespace

template <class T>
void launch_gaussian_full_log_density(const PartView<T>& part, const ChunkArgs<T>& c, cudaStream_t s) {
  if (c.rows == 0) return;
  const dim3 grid(ceil_div(c.rows, kFullRows), static_cast<unsigned>(c.components));
  launch_kernel<full_log_density_kernel<T>>(grid, kFullRows, 0, s, part, c.x, c.ld, c.resp, c.components, c.rows);
  MIXLE_CUDA_CHECK_LAUNCH();
}

template <class T>
void launch_gaussian_full_accumulate(const PartView<T>& part, const ChunkArgs<T>& c, const SlotPlan& plan,
                                     cudaStream_t s) {
  if (use_generic_full_stats()) {
    launch_accumulate<T, FullMoment<T>>(part, c, plan, s);
    return;
  }
  if (c.rows == 0 || part.dims == 0) return;
  // First moments (D entries per component) with the generic kernel, S2 tiled.
  launch_accumulate<T, FullMoment<T>>(part, c, plan, s, part.dims);
  const int spans = static_cast<int>(ceil_div(part.dims, kFullSpan));
  const dim3 grid(static_cast<unsigned>(plan.slots), static_cast<unsigned>(c.components),
                  static_cast<unsigned>(spans * (spans + 1) / 2));
  launch_kernel<full_second_moment_kernel<T>>(grid, kFullTileThreads, 0, s, part, c.x, c.ld, c.resp, c.components,
                                              c.rows, plan.rows_per_slot, plan.partials, plan.stat_size, spans);
  MIXLE_CUDA_CHECK_LAUNCH();
}

template void launch_gaussian_full_log_density<float>(const PartView<float>&, const ChunkArgs<float>&, cudaStream_t);
template void launch_gaussian_full_log_density<double>(const PartView<double>&, const ChunkArgs<double>&, cudaStream_t);
template void launch_gaussian_full_accumulate<float>(const PartView<float>&, const ChunkArgs<float>&, const SlotPlan&,
                                                     cudaStream_t);
template void launch_gaussian_full_accumulate<double>(const PartView<double>&, const ChunkArgs<double>&,
                                                      const SlotPlan&, cudaStream_t);

}  // namespace mixle::kernels::cuda
