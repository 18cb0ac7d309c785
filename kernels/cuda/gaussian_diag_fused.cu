// Fused E-step for the benchmark shape — a model that is one gaussian_diag part, float32,
// K ≤ 256, D ≤ 64, ⌈K/2⌉·⌈D/4⌉ ≤ 256: log-densities, normalisation and statistics in one
// kernel, so the rows × K block never leaves shared memory (materialising it in device memory
// costs ≈ 2× at best). A block owns one statistics slot. The model's coefficients are staged
// once per block in shared memory by quad of components: per dimension the quad's 4 means, then
// its 4 −½h, so a thread's loads for a dimension are two 16-byte vectors at fixed offsets from
// one pointer, and quads lie an odd number of 16-byte units apart, so a warp's lanes (consecutive
// quads) read distinct banks. Per tile of TR rows (32, or 16 where 32 would not fit 48 KiB):
//  1. x is staged in shared memory (row-major, the row stride padded so rows fall in
//     different banks);
//  2. log-densities, register-blocked: a thread forms 2 rows × 4 components, so per dimension
//     two coefficient vectors and two x values (read four dimensions at a time, one vector per
//     row) feed 8 (subtract, multiply, FMA) triples — in the CPU's order: log_const, then
//     h·(t·t) dim by dim (dimensions pad to 4 with zeros, which add +0);
//  3. each row is normalised by one warp (normalise_row_warp, the unfused kernel's code);
//  4. statistics, register-blocked: a thread owns 2 components × 4 dims of r·(x − s) and
//     r·(x − s)², reading per row one r pair and one x vector; a row in which every real
//     component of the warp has r = 0 is skipped by the whole warp — the CPU's rule (a zero r
//     adds nothing) taken warp by warp, so a NaN row, whose r are all 0, folds nothing; in the
//     others a zero r adds ±0, which leaves the sums' bits alone.
// Sums run in float within kSubBlockRows rows and in float64 across them, as everywhere.
// Every quantity is formed by the same operations in the same order as the unfused path (init +
// log-density + normalise + header + tiled statistics), so the two agree to FMA contraction;
// MIXLE_CUDA_FUSED=0 selects the unfused path for comparison. bench/gpu-model reads the SASS of
// the loops marked `gpu-model:` below.
// Under the TF32 opt-in step 2 runs on the tensor cores (`diag_fused_kernel<Density::tensor>`):
// expanded about the part's centre c (tf32_expansion.cuh), h (x − m)² = h y² − 2hν y + h ν² with
// y = x − c, ν = m − c, so the tile's log-densities less their constants are the product
// [y∘y, y] (tile rows × 2D) · [h; −2hν] (2D × K), formed by warp matrix operations (TF32
// m16n16k8, float accumulators) from y, staged beside x, and weights staged once per block; then
// log_const + c_k (c_k = Σ_d h ν², in float64, rounded once) is added. Steps 1 and 3 are the
// fp32 kernel's; neither the features nor the rows × K block reach device memory. The statistics
// stay fp32 SIMT (TF32 never touches second moments) under the statistics guard: a component
// whose mean lies within 2σ of the centre in every dimension (tf32_expansion.cuh) sums r·y and
// r·y² about the centre — two FMAs an entry, y and y² staged beside x — and has its sums folded
// to its shift in float64 at the slot's end; the others stay centred. Rows that fold nothing get
// y = y² = 0, since the expanded loop does not test r.
#include "kernels/cuda/device.cuh"
#include "kernels/cuda/diag_moments.cuh"
#include "kernels/cuda/row_normalise.cuh"
#include "kernels/cuda/tf32_expansion.cuh"

#include <mma.h>

#include <cstdlib>
#include <cstring>

namespace mixle::kernels::cuda {
namespace {

constexpr int kFusedThreads = 256;
constexpr int kFusedWarps = kFusedThreads / 32;
// Three blocks per SM (80 registers a thread on sm_90) rather than two (128): the kernel measured
// latency bound at two (22 % achieved occupancy, half the issue slots used; docs/cuda.md). At 80
// registers ptxas keeps everything the loops use in registers and moves only the float64 running
// totals of the statistics block to local memory, which is touched once per kSubBlockRows rows.
constexpr int kFusedBlocksPerSm = 3;
constexpr int kFusedMaxK = 256;
constexpr int kFusedMaxD = 64;
constexpr int kDensityRows = 2;  // a thread's log-density block: 2 rows × 4 components
constexpr int kDensityComps = 4;
constexpr std::size_t kFusedSharedLimit = 48 * 1024;

/// How step 2 forms the tile's log-densities.
enum class Density {
  simt,    // the centred form on the SIMT lanes (fp32, the default)
  tensor,  // the expanded form on the tensor cores (TF32 opt-in)
};

/// The block's shared-memory layout, in floats. Every array starts on a 16-byte boundary (the
/// SIMT loops' float4 loads), or a 32-byte one where the tensor cores read or write it (wmma
/// pointers are 256-bit aligned). fp32: components and dimensions pad to 4, the coefficients by
/// quad of components (coef_t). Under Density::tensor, components pad to 16 and dimensions to
/// 8 (the m16n16k8 tiles), the coefficient arrays are the product's weights [h; −2hν], row-major
/// 2·dp × kp, and more arrays hold the centre c (dp), the statistics guard's verdict per
/// component (kp ints: 1 where its second moments are summed about c) and the tile's y = x − c
/// and y² (tile_rows × xs_stride each) beside x.
struct FusedLayout {
  int K, D, kp, dp, xs_stride, tile_rows;
  bool tensor;
  __host__ __device__ FusedLayout(int K_, int D_, int tile_rows_, bool tensor_)
      : K(K_),
        D(D_),
        kp(tensor_ ? (K_ + 15) / 16 * 16 : (K_ + 3) / 4 * 4),
        dp(tensor_ ? (D_ + 7) / 8 * 8 : (D_ + 3) / 4 * 4),
        xs_stride(tensor_ ? (D_ + 7) / 8 * 8 + 4 : (D_ + 3) / 4 * 4 + 4),
        tile_rows(tile_rows_),
        tensor(tensor_) {}
  // fp32: per quad of components, per dimension its 4 means then its 4 −½h; quads coef_stride()
  // apart, an odd number of 16-byte units, so a warp's lanes (consecutive quads) read distinct banks
  __host__ __device__ int coef_stride() const { return 8 * dp + 4; }
  __host__ __device__ int coef_t() const { return 0; }            // kp/4 × coef_stride()
  __host__ __device__ int weight_sq() const { return 0; }         // tensor: h, dp × kp
  __host__ __device__ int weight_lin() const { return dp * kp; }  // tensor: −2hν, dp × kp
  __host__ __device__ int log_const() const { return tensor ? 2 * dp * kp : kp / 4 * coef_stride(); }  // kp
  __host__ __device__ int centre() const { return log_const() + kp; }                                  // tensor: dp
  __host__ __device__ int expanded() const { return centre() + (tensor ? dp : 0); }  // tensor: kp ints
  __host__ __device__ int xs() const { return expanded() + (tensor ? kp : 0); }      // tile_rows × xs_stride
  __host__ __device__ int ys() const { return xs() + tile_rows * xs_stride; }        // tensor: tile_rows × xs_stride
  __host__ __device__ int y2s() const { return ys() + (tensor ? tile_rows * xs_stride : 0); }  // tensor: likewise
  __host__ __device__ int ls() const { return y2s() + (tensor ? tile_rows * xs_stride : 0); }  // tile_rows × kp
  // The tile's per-row log-likelihoods (tile_rows doubles: ls() + tile_rows·kp is a multiple of 4
  // floats, so they are 8-byte aligned) and statuses (tile_rows ints).
  __host__ __device__ int row_loglik() const { return ls() + tile_rows * kp; }
  __host__ __device__ int row_status() const { return row_loglik() + 2 * tile_rows; }
  // tensor: per row of the tile, 1 if an x is infinite, 2 if one is NaN (tile_rows ints)
  __host__ __device__ int nonfinite() const { return row_status() + tile_rows; }
  __host__ __device__ std::size_t bytes() const {
    return static_cast<std::size_t>(nonfinite() + (tensor ? tile_rows : 0)) * sizeof(float);
  }
};

int fused_tile_rows(int K, int D, bool tensor) {
  return FusedLayout(K, D, 32, tensor).bytes() <= kFusedSharedLimit ? 32 : 16;
}

/// Step 2 on the tensor cores: each warp forms 16 × 16 tiles of [y∘y, y] · [h; −2hν] from the
/// staged y = x − c (converted to TF32 in the fragment: y·y and y) and the staged weights,
/// stores them in the tile's log-densities and adds log_const + c_k after the product, as the
/// unfused TF32 pass does. The 16-row tiles past the tile's rows are not formed; rows past
/// `nrow` inside the last one hold stale y, and their log-densities are never read.
__device__ void tensor_log_densities(const float* w_sq, const float* w_lin, const float* lc, const float* ys, float* ls,
                                     int kp, int dp, int ystride, int nrow, int warp) {
  namespace wmma = nvcuda::wmma;
  const int ctiles = kp / 16, tiles = (nrow + 15) / 16 * ctiles;
  for (int t = warp; t < tiles; t += kFusedWarps) {
    const int rt = t / ctiles, ct = t % ctiles;
    wmma::fragment<wmma::accumulator, 16, 16, 8, float> acc;
    wmma::fill_fragment(acc, 0.0f);
    // gpu-model: fused-tensor-density mma=8192 per (16 rows, 16 components, 8 dims)
#pragma unroll 1
    for (int d0 = 0; d0 < dp; d0 += 8) {
      wmma::fragment<wmma::matrix_a, 16, 16, 8, wmma::precision::tf32, wmma::row_major> ya, sq;
      wmma::load_matrix_sync(ya, ys + rt * 16 * ystride + d0, ystride);
#pragma unroll
      for (int i = 0; i < ya.num_elements; ++i) {
        const float v = ya.x[i];
        sq.x[i] = wmma::__float_to_tf32(v * v);
        ya.x[i] = wmma::__float_to_tf32(v);
      }
      wmma::fragment<wmma::matrix_b, 16, 16, 8, wmma::precision::tf32, wmma::row_major> hq, hl;
      wmma::load_matrix_sync(hq, w_sq + d0 * kp + ct * 16, kp);
      wmma::load_matrix_sync(hl, w_lin + d0 * kp + ct * 16, kp);
      wmma::mma_sync(acc, sq, hq, acc);
      wmma::mma_sync(acc, ya, hl, acc);
    }
    float* out = ls + rt * 16 * kp + ct * 16;
    wmma::store_matrix_sync(out, acc, kp, wmma::mem_row_major);
    __syncwarp();  // the lanes' stores are seen by the lanes that add the constants
    const int lane = static_cast<int>(threadIdx.x) & 31, col = lane & 15;
    for (int r = lane >> 4; r < 16; r += 2) out[r * kp + col] += lc[ct * 16 + col];
  }
}

template <Density kDensity>
__global__ void __launch_bounds__(kFusedThreads, kFusedBlocksPerSm)
    diag_fused_kernel(PartView<float> part, const float* __restrict__ log_const, const float* __restrict__ x, int ld,
                      int K, int tile_rows, std::int64_t rows, std::int64_t rows_per_slot, double* __restrict__ loglik,
                      int* __restrict__ status, DeviceReport* report, double* __restrict__ partials,
                      std::int64_t stat_size) {
  constexpr bool kTensor = kDensity == Density::tensor;
  MIXLE_DYNAMIC_SHARED(float, smem);
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int D = part.dims;
  const FusedLayout lay(K, D, tile_rows, kTensor);
  float* coef_t = smem + lay.coef_t();
  float* lc = smem + lay.log_const();
  float* xs = smem + lay.xs();
  float* ls = smem + lay.ls();
  double* row_ll = reinterpret_cast<double*>(smem + lay.row_loglik());
  int* row_st = reinterpret_cast<int*>(smem + lay.row_status());
  int* nonfinite = reinterpret_cast<int*>(smem + lay.nonfinite());
  const int kp = lay.kp, xstride = lay.xs_stride;
  const std::int64_t slot = blockIdx.x;
  const std::int64_t begin = slot * rows_per_slot;
  const std::int64_t end = begin + rows_per_slot < rows ? begin + rows_per_slot : rows;

  // Under Density::tensor the centre first: the weights are taken about it, and the statistics
  // guard measures each component's distance from it.
  float* centre = smem + lay.centre();
  int* expanded = reinterpret_cast<int*>(smem + lay.expanded());
  if constexpr (kTensor) {
    for (int d = tid; d < lay.dp; d += kFusedThreads) centre[d] = d < D ? tf32_centre(part, K, d) : 0.0f;
    __syncthreads();
    for (int k = tid; k < kp; k += kFusedThreads) expanded[k] = k < K && expanded_statistics_admitted(part, k, centre);
  }
  // Coefficients, transposed; padding components (and, for the tensor cores, padding dimensions)
  // get 0, so they add nothing to a product and their log-densities are never read.
  for (int e = tid; e < lay.dp * kp; e += kFusedThreads) {
    const int d = e / kp, k = e % kp;
    const bool real = k < K && d < D;
    if constexpr (kTensor) {
      const Tf32Weights w = real ? tf32_weights(part, k, d, centre[d]) : Tf32Weights{0.0f, 0.0f, 0.0};
      smem[lay.weight_sq() + e] = nvcuda::wmma::__float_to_tf32(w.sq);
      smem[lay.weight_lin() + e] = nvcuda::wmma::__float_to_tf32(w.lin);
    } else {
      const float* coef = part.coef + static_cast<std::int64_t>(k) * part.coef_stride;
      float* quad = coef_t + k / kDensityComps * lay.coef_stride() + d * 2 * kDensityComps + k % kDensityComps;
      quad[0] = real ? coef[d] : 0.0f;
      quad[kDensityComps] = real ? coef[D + d] : 0.0f;
    }
  }
  for (int k = tid; k < kp; k += kFusedThreads) {
    if (k >= K) {
      lc[k] = 0.0f;
    } else if constexpr (kTensor) {
      // log_const + c_k, c_k = Σ_d h ν² in float64, rounded once.
      double ck = 0.0;
      for (int d = 0; d < D; ++d) ck += tf32_weights(part, k, d, centre[d]).constant;
      lc[k] = static_cast<float>(static_cast<double>(log_const[k]) + ck);
    } else {
      lc[k] = log_const[k];
    }
  }
  // Padding columns stay 0 (y and y² too: the tensor cores read y's, against zero weights).
  for (int e = tid; e < (kTensor ? 3 : 1) * tile_rows * xstride; e += kFusedThreads) xs[e] = 0.0f;
  if constexpr (kTensor)
    for (int row = tid; row < tile_rows; row += kFusedThreads) nonfinite[row] = 0;  // then reset as read

  // This thread's statistics block: components 2·sc, 2·sc + 1 and dims 4·sd … 4·sd + 3.
  const int dquads = (D + kDiagBlockDims - 1) / kDiagBlockDims;
  const bool stats_thread = tid < (K + kDiagBlockComps - 1) / kDiagBlockComps * dquads;
  const int sc = tid / dquads, sd = tid % dquads;
  DiagMomentBlock<float> block([&](int a, int b) {
    const int k = kDiagBlockComps * sc + a, d = kDiagBlockDims * sd + b;
    return stats_thread && k < K && d < D ? part.shift[static_cast<std::int64_t>(k) * D + d] : 0.0f;
  });
  float mass = 0.0f;
  double mass_total = 0.0;
  double slot_ll = 0.0, slot_valid = 0.0;  // the slot header's [0] and [1], the last warp's
  const int kquads = kp / kDensityComps;
  const int density_units = tile_rows / kDensityRows * kquads;

  for (std::int64_t b0 = begin; b0 < end; b0 += kSubBlockRows) {
    const std::int64_t b1 = b0 + kSubBlockRows < end ? b0 + kSubBlockRows : end;
    block.begin_sub_block();
    mass = 0.0f;
    for (std::int64_t r0 = b0; r0 < b1; r0 += tile_rows) {
      const int nrow = static_cast<int>(b1 - r0 < tile_rows ? b1 - r0 : tile_rows);
      __syncthreads();  // the previous tile has been consumed (and, at first, the coefficients staged)
      for (int e = tid; e < nrow * D; e += kFusedThreads) {
        const float v = x[(r0 + e / D) * ld + part.col_begin + e % D];
        xs[e / D * xstride + e % D] = v;
        if constexpr (kTensor) {
          const float y = v - centre[e % D];
          smem[lay.ys() + e / D * xstride + e % D] = y;
          smem[lay.y2s() + e / D * xstride + e % D] = y * y;
          if (!isfinite(v)) atomicOr(nonfinite + e / D, isnan(v) ? 2 : 1);
        }
      }
      __syncthreads();
      if constexpr (kTensor) {
        tensor_log_densities(smem + lay.weight_sq(), smem + lay.weight_lin(), lc, smem + lay.ys(), ls, kp, lay.dp,
                             xstride, nrow, warp);
      } else
        for (int u = tid; u < density_units; u += kFusedThreads) {
          const int kq = u % kquads, row = u / kquads * kDensityRows;
          if (row >= nrow) continue;
          const float4 c = *reinterpret_cast<const float4*>(lc + kDensityComps * kq);
          float l0[kDensityComps] = {c.x, c.y, c.z, c.w}, l1[kDensityComps] = {c.x, c.y, c.z, c.w};
          // x four dimensions at a time, one 16-byte load a row: dimensions pad to 4 with zero
          // coefficients and zero x, so a padding dimension adds 0·0 = +0, which changes nothing.
          const float* quad = coef_t + kq * lay.coef_stride();  // dimension 0's means and −½h
          // x of dimensions d0 … d0 + 3 of the row, and of row + 1 xstride further (past nrow it holds
          // stale values, and its result is never read)
          const float* xa4 = xs + row * xstride;
          // gpu-model: fused-log-density fp=3 per (row, component, dim)
          for (int d0 = 0; d0 < lay.dp; d0 += 4, quad += 4 * 2 * kDensityComps, xa4 += 4) {
            const float4 a = *reinterpret_cast<const float4*>(xa4), b = *reinterpret_cast<const float4*>(xa4 + xstride);
            const float xa[4] = {a.x, a.y, a.z, a.w}, xb[4] = {b.x, b.y, b.z, b.w};
#pragma unroll
            for (int e = 0; e < 4; ++e) {
              const float4 m = *reinterpret_cast<const float4*>(quad + e * 2 * kDensityComps);
              const float4 h = *reinterpret_cast<const float4*>(quad + e * 2 * kDensityComps + kDensityComps);
              const float mv[kDensityComps] = {m.x, m.y, m.z, m.w}, hv[kDensityComps] = {h.x, h.y, h.z, h.w};
#pragma unroll
              for (int j = 0; j < kDensityComps; ++j) {
                const float ta = xa[e] - mv[j], tb = xb[e] - mv[j];
                l0[j] += hv[j] * (ta * ta);
                l1[j] += hv[j] * (tb * tb);
              }
            }
          }
          *reinterpret_cast<float4*>(ls + row * kp + kDensityComps * kq) = make_float4(l0[0], l0[1], l0[2], l0[3]);
          *reinterpret_cast<float4*>(ls + (row + 1) * kp + kDensityComps * kq) =
              make_float4(l1[0], l1[1], l1[2], l1[3]);
        }
      __syncthreads();
      for (int row = warp; row < nrow; row += kFusedWarps) {
        if constexpr (kTensor)
          if (nonfinite[row] != 0) {
            // The expansion turns an infinite x into −inf + inf = NaN; the centred form (and the
            // CPU) gives −inf under every component — an impossible row — unless an x is NaN.
            if (nonfinite[row] == 1)
              for (int k = lane; k < K; k += 32) ls[row * kp + k] = -INFINITY;
            __syncwarp();  // every lane has read the flag
            if (lane == 0) nonfinite[row] = 0;
            __syncwarp();
          }
        normalise_row_warp(ls + row * kp, K, lane, row_ll + row, row_st + row, report);
        if (lane == 0) loglik[r0 + row] = row_ll[row], status[r0 + row] = row_st[row];
        if constexpr (kTensor) {
          // A row that folds nothing (NaN or impossible: all r 0, x perhaps not finite) gets
          // y = y² = 0, so the expanded statistics, which do not test r, add 0 for it (0 · NaN
          // would be NaN).
          __syncwarp();  // lane 0's status
          if (row_st[row] != kRowOk && row_st[row] != kRowTie)
            for (int d = lane; d < D; d += 32)
              smem[lay.ys() + row * xstride + d] = 0.0f, smem[lay.y2s() + row * xstride + d] = 0.0f;
        }
      }
      __syncthreads();
      // The header's sums in row order, as the unfused header kernel forms them, by the last
      // warp: its lanes read the tile's rows at once (one shared-memory latency, not one a row on
      // a single thread while the block waits at the next barrier), then every lane adds the
      // valid ones in row order from shuffles that do not depend on the sum. An excluded row adds
      // +0.0, which leaves the sum's bits alone (no valid row's log-likelihood is −0.0).
      if (warp == kFusedWarps - 1) {
        const bool valid = lane < nrow && (row_st[lane] == kRowOk || row_st[lane] == kRowTie);
        const double v = valid ? row_ll[lane] : 0.0;
        // gpu-model: fused-header fp64=1 per (row)
        for (int row = 0; row < nrow; ++row) slot_ll += __shfl_sync(0xffffffffu, v, row);
        slot_valid += static_cast<double>(__popc(__ballot_sync(0xffffffffu, valid)));
      }
      // Under Density::tensor the statistics guard chose, per component, centred or expanded sums
      // (the thread's pair: both expanded, one, or neither — each its own loop).
      bool pair_expanded[kDiagBlockComps] = {false, false};
      if constexpr (kTensor)
        for (int a = 0; a < kDiagBlockComps; ++a) pair_expanded[a] = expanded[kDiagBlockComps * sc + a] != 0;
      const float* yrow = smem + lay.ys() + kDiagBlockDims * sd;
      const float* y2row = smem + lay.y2s() + kDiagBlockDims * sd;
      // The lanes of this warp that run the centred loop (every lane of the block gets here).
      const unsigned centred_lanes = __ballot_sync(0xffffffffu, stats_thread && !pair_expanded[0] && !pair_expanded[1]);
      if (stats_thread && pair_expanded[0] && pair_expanded[1]) {
        // gpu-model: fused-statistics-expanded fp=2 per (row, component, dim)
        for (int row = 0; row < nrow; ++row) {
          float r[kDiagBlockComps], yv[kDiagBlockDims], y2v[kDiagBlockDims];
          load_pair(ls + row * kp + kDiagBlockComps * sc, r);
          load_quad(yrow + row * xstride, yv);
          load_quad(y2row + row * xstride, y2v);
          block.fold_row_expanded(r, yv, y2v);
        }
      } else if (stats_thread && (pair_expanded[0] || pair_expanded[1])) {
        for (int row = 0; row < nrow; ++row) {
          float r[kDiagBlockComps], xv[kDiagBlockDims], yv[kDiagBlockDims], y2v[kDiagBlockDims];
          load_pair(ls + row * kp + kDiagBlockComps * sc, r);
          load_quad(xs + row * xstride + kDiagBlockDims * sd, xv);
          load_quad(yrow + row * xstride, yv);
          load_quad(y2row + row * xstride, y2v);
          block.fold_row_guarded(r, xv, yv, y2v, pair_expanded);
        }
      } else if (stats_thread) {
        // A row none of these lanes' components takes part in is skipped by all of them at once
        // — on separated data most rows, for most warps, and every row that folds nothing (its r
        // are all 0, its x perhaps not finite); the others add every entry (fold_row_every), as
        // a test of r per component cost an instruction an entry and split the warp.
        // The pair's second component may be padding (odd K), whose r is never normalised (NaN in
        // a NaN row): the vote reads only real components.
        const bool second_real = kDiagBlockComps * sc + 1 < K;
        const float* rp = ls + kDiagBlockComps * sc;
        const float* xp = xs + kDiagBlockDims * sd;
        // gpu-model: fused-statistics fp=4 per (row, component, dim)
        for (int row = 0; row < nrow; ++row, rp += kp, xp += xstride) {
          float r[kDiagBlockComps], xv[kDiagBlockDims];
          load_pair(rp, r);
          load_quad(xp, xv);
          if (__any_sync(centred_lanes, r[0] != 0.0f || (second_real && r[1] != 0.0f))) block.fold_row_every(r, xv);
        }
      }
      if (tid < K)
        // gpu-model: fused-mass fp=1 per (row, component)
        for (int row = 0; row < nrow; ++row) mass += ls[row * kp + tid];
    }
    block.end_sub_block();
    mass_total += static_cast<double>(mass);
  }

  // An expanded component's sums are about the centre c; fold them to its shift s in float64 with
  // its mass N (Σ r, the header's) and δ = s − c: Σ r (x − s) = S₁ − δN and
  // Σ r (x − s)² = S₂ − 2δS₁ + δ²N (docs/numerics.md §4).
  const double* mass_of = reinterpret_cast<const double*>(ls);
  if constexpr (kTensor) {
    __syncthreads();  // every tile's statistics have read ls
    if (tid < K) reinterpret_cast<double*>(ls)[tid] = mass_total;
    if (tid < K && expanded[tid]) atomicAdd(&report->expanded_pairs, static_cast<unsigned long long>(end - begin));
    __syncthreads();
  }
  double* out = partials + slot * stat_size;
  if (stats_thread)
    block.write([&](int a, int b, double m1, double m2) {
      const int k = kDiagBlockComps * sc + a, d = kDiagBlockDims * sd + b;
      if (k >= K || d >= D) return;
      if (kTensor && expanded[k]) {
        const double delta = static_cast<double>(block.shift[a][b]) - static_cast<double>(centre[d]);
        const double n = mass_of[k];
        m2 = m2 - 2.0 * delta * m1 + delta * delta * n;
        m1 = m1 - delta * n;
      }
      double* entry = out + part.stat_offset + static_cast<std::int64_t>(k) * part.stat_stride + d;
      entry[0] = m1;
      entry[D] = m2;
    });
  if (tid < K) out[kStatHeader + tid] = mass_total;
  if (tid == kFusedThreads - 32) out[0] = slot_ll, out[1] = slot_valid;
}

}  // namespace

bool gaussian_diag_fused_eligible(const ModelView<float>& model, bool tf32) {
  const char* v = std::getenv("MIXLE_CUDA_FUSED");
  if (v && std::strcmp(v, "0") == 0) return false;
  if (model.num_parts != 1 || model.row_offset) return false;
  const PartView<float>& part = model.parts[0];
  const int K = model.components, D = part.dims;
  return part.kind == PartKind::gaussian_diag && D >= 1 && D <= kFusedMaxD && K >= 1 && K <= kFusedMaxK &&
         (K + kDiagBlockComps - 1) / kDiagBlockComps * ((D + kDiagBlockDims - 1) / kDiagBlockDims) <= kFusedThreads &&
         FusedLayout(K, D, fused_tile_rows(K, D, tf32), tf32).bytes() <= kFusedSharedLimit;
}

void launch_gaussian_diag_fused(const ModelView<float>& model, const ChunkArgs<float>& c, const SlotPlan& plan,
                                DeviceReport* report, bool tf32, cudaStream_t s) {
  if (c.rows == 0) return;
  const int K = c.components, D = model.parts[0].dims;
  const int tile_rows = fused_tile_rows(K, D, tf32);
  const std::size_t shared = FusedLayout(K, D, tile_rows, tf32).bytes();
  if (tf32)
    launch_kernel<diag_fused_kernel<Density::tensor>>(
        static_cast<unsigned>(plan.slots), kFusedThreads, shared, s, model.parts[0], model.log_const, c.x, c.ld, K,
        tile_rows, c.rows, plan.rows_per_slot, c.loglik, c.status, report, plan.partials, plan.stat_size);
  else
    launch_kernel<diag_fused_kernel<Density::simt>>(
        static_cast<unsigned>(plan.slots), kFusedThreads, shared, s, model.parts[0], model.log_const, c.x, c.ld, K,
        tile_rows, c.rows, plan.rows_per_slot, c.loglik, c.status, report, plan.partials, plan.stat_size);
  MIXLE_CUDA_CHECK_LAUNCH();
}

}  // namespace mixle::kernels::cuda
