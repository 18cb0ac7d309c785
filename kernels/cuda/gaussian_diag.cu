// gaussian_diag on CUDA: Σ_d h_kd (x_d − m_kd)² added to L (h = −1/(2 var)), and the shifted
// moments Σ r (x − s), Σ r (x − s)². Same operation order as kernels/cpu/families/gaussian_diag.hpp.
#include "kernels/cuda/device.cuh"
#include "kernels/cuda/diag_moments.cuh"

#include <cstdlib>
#include <cstring>

namespace mixle::kernels::cuda {
namespace {

// Tiled statistics: a block owns one slot and a tile of up to kDiagMaxComps components ×
// kDiagMaxDims dims, stages 32 rows of x and of r in shared memory at a time, and each thread owns
// a register block of 2 components × 4 dims (the fused pass's blocking): per row it reads one r
// pair and one x vector for 8 (component, dim) pairs' two moments, with no per-pair bound
// checks (columns and components past the tile's edge feed only entries never written). x is
// read from global memory once per component tile, r once per dim tile. Per entry the arithmetic
// is the generic kernel's: the same row order, r = 0 skipped, the same T sums over kSubBlockRows
// rows, the same float64 total.
constexpr int kDiagThreads = 128;
constexpr int kDiagRowsPerLoad = 32;
constexpr int kDiagMaxDims = 64;
constexpr int kDiagMaxComps = 128;

template <class T>
__global__ void __launch_bounds__(kDiagThreads)
    diag_stats_tiled_kernel(PartView<T> part, const T* __restrict__ x, int ld, const T* __restrict__ resp, int K,
                            std::int64_t rows, std::int64_t rows_per_slot, double* __restrict__ partials,
                            std::int64_t stat_size, int comps_per_block, int dims_per_block) {
  __shared__ T xs[kDiagRowsPerLoad][kDiagMaxDims];
  __shared__ T rs[kDiagRowsPerLoad][kDiagMaxComps];
  const int tid = threadIdx.x;
  const std::int64_t slot = blockIdx.x;
  const int k0 = static_cast<int>(blockIdx.y) * comps_per_block;
  const int d0 = static_cast<int>(blockIdx.z) * dims_per_block;
  const int KT = min(comps_per_block, K - k0);
  const int DT = min(dims_per_block, part.dims - d0);
  const int dquads = (DT + kDiagBlockDims - 1) / kDiagBlockDims;
  const bool active = tid < (KT + kDiagBlockComps - 1) / kDiagBlockComps * dquads;
  const int sc = tid / dquads, sd = tid % dquads;  // components 2·sc + a, dims 4·sd + b of the tile
  const std::int64_t begin = slot * rows_per_slot;
  const std::int64_t end = begin + rows_per_slot < rows ? begin + rows_per_slot : rows;

  DiagMomentBlock<T> block([&](int a, int b) {
    const int k = kDiagBlockComps * sc + a, d = kDiagBlockDims * sd + b;
    return active && k < KT && d < DT ? part.shift[static_cast<std::int64_t>(k0 + k) * part.dims + d0 + d] : T(0);
  });
  for (std::int64_t b0 = begin; b0 < end; b0 += kSubBlockRows) {
    const std::int64_t b1 = b0 + kSubBlockRows < end ? b0 + kSubBlockRows : end;
    block.begin_sub_block();
    for (std::int64_t r0 = b0; r0 < b1; r0 += kDiagRowsPerLoad) {
      const int nrow = static_cast<int>(b1 - r0 < kDiagRowsPerLoad ? b1 - r0 : kDiagRowsPerLoad);
      __syncthreads();  // the previous tile has been consumed
      for (int i = tid; i < nrow * DT; i += kDiagThreads)
        xs[i / DT][i % DT] = x[(r0 + i / DT) * ld + part.col_begin + d0 + i % DT];
      for (int i = tid; i < nrow * KT; i += kDiagThreads) rs[i / KT][i % KT] = resp[(r0 + i / KT) * K + k0 + i % KT];
      __syncthreads();
      if (!active) continue;  // (the loop's barriers are at its top: every thread still reaches them)
      // gpu-model: tiled-statistics fp=4 per (row, component, dim)
      for (int row = 0; row < nrow; ++row) {
        T r[kDiagBlockComps], xv[kDiagBlockDims];
        load_pair(&rs[row][kDiagBlockComps * sc], r);
        load_quad(&xs[row][kDiagBlockDims * sd], xv);
        block.fold_row(r, xv);
      }
    }
    block.end_sub_block();
  }
  if (!active) return;
  block.write([&](int a, int b, double m1, double m2) {
    const int k = kDiagBlockComps * sc + a, d = kDiagBlockDims * sd + b;
    if (k >= KT || d >= DT) return;
    double* out =
        partials + slot * stat_size + part.stat_offset + static_cast<std::int64_t>(k0 + k) * part.stat_stride + d0 + d;
    out[0] = m1;
    out[part.dims] = m2;
  });
}

/// MIXLE_CUDA_DIAG_STATS=generic selects the generic statistics kernel (for comparisons).
bool use_generic_diag_stats() {
  const char* v = std::getenv("MIXLE_CUDA_DIAG_STATS");
  return v && std::strcmp(v, "generic") == 0;
}

}  // namespace

template <class T>
void launch_gaussian_diag_log_density(const PartView<T>& part, const ChunkArgs<T>& c, cudaStream_t s) {
  launch_log_density(part, c, NormalTerm<T, ValueFeature>{}, s);
}

template <class T>
void launch_gaussian_diag_accumulate(const PartView<T>& part, const ChunkArgs<T>& c, const SlotPlan& plan,
                                     cudaStream_t s) {
  if (use_generic_diag_stats()) {
    launch_accumulate<T, ShiftedMoment<T, ValueFeature>>(part, c, plan, s);
    return;
  }
  if (c.rows == 0 || part.dims == 0) return;
  const int dims_per_block = part.dims < kDiagMaxDims ? part.dims : kDiagMaxDims;
  const int dquads = (dims_per_block + kDiagBlockDims - 1) / kDiagBlockDims;
  int comps_per_block = kDiagThreads / dquads * kDiagBlockComps;  // one register block per thread
  comps_per_block = comps_per_block < kDiagMaxComps ? comps_per_block : kDiagMaxComps;
  comps_per_block = comps_per_block < c.components ? comps_per_block : c.components;
  const dim3 grid(static_cast<unsigned>(plan.slots), ceil_div(c.components, comps_per_block),
                  ceil_div(part.dims, dims_per_block));
  launch_kernel<diag_stats_tiled_kernel<T>>(grid, kDiagThreads, 0, s, part, c.x, c.ld, c.resp, c.components, c.rows,
                                            plan.rows_per_slot, plan.partials, plan.stat_size, comps_per_block,
                                            dims_per_block);
  MIXLE_CUDA_CHECK_LAUNCH();
}

template void launch_gaussian_diag_log_density<float>(const PartView<float>&, const ChunkArgs<float>&, cudaStream_t);
template void launch_gaussian_diag_log_density<double>(const PartView<double>&, const ChunkArgs<double>&, cudaStream_t);
template void launch_gaussian_diag_accumulate<float>(const PartView<float>&, const ChunkArgs<float>&, const SlotPlan&,
                                                     cudaStream_t);
template void launch_gaussian_diag_accumulate<double>(const PartView<double>&, const ChunkArgs<double>&,
                                                      const SlotPlan&, cudaStream_t);

}  // namespace mixle::kernels::cuda
