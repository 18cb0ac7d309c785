// gaussian_full on CUDA: −½‖P (x − mean)‖² added to L (P lower triangular, P = C⁻¹ where
// cov = C Cᵀ), and the shifted moments Σ r (x − s), Σ r (x − s)(x − s)ᵀ. Same operation order
// as kernels/cpu/families/gaussian_full.hpp.
#include "kernels/cuda/device.cuh"

#include <algorithm>
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
    // gpu-model: full-log-density-rowwise fp=17 per (row, component, j of a 16-output group)
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

// Staged log-density (the default where its shared memory fits 48 KiB: D ≤ 112 in float, ≤ 69
// in double): a block owns one component and R rows (128, 64 or 32: the most that fit). It stages
// P_k by 16-output group (for each group the 16 outputs' entries of the columns j it reads; a
// triangle of 16 × 16 tiles, half the square P_kᵀ the first version staged, which is what lets
// 128 rows fit at D = 64) and d = x − m_k for its rows (transposed, so lane n reads row n: no
// bank conflict), then each of its R/2 threads forms y = P d for two rows, sixteen outputs at a
// time. For the columns j < i0 below the group every output takes part: four 16-byte broadcast
// loads of P and one d load per row feed 32 FMAs, no mask (one row a thread took 1.5
// instructions per FMA in the SASS; two take 1.3); the 16 columns of the group's own triangle are
// unrolled with compile-time bounds, so only j ≤ i is ever added. Per output the arithmetic is
// the CPU's: y_i = Σ_{j≤i} P_ij d_j with j ascending, then l −= ½ y_i² with i ascending.
constexpr int kFullGroup = 16;
constexpr std::size_t kFullSharedLimit = 48 * 1024;

/// Shared memory of the staged log-density: P_k by output group — group g (outputs i0 = 16g …
/// i0 + 15) holds, for the columns j < i0 + 16 it reads, the 16 values P_{i0+a, j} (0 where j > i or
/// i ≥ D), a triangle of groups — then d.
template <class T>
struct StagedDensityLayout {
  int D, groups, rows;
  __host__ __device__ StagedDensityLayout(int D_, int rows_)
      : D(D_), groups((D_ + kFullGroup - 1) / kFullGroup), rows(rows_) {}
  /// Where group g starts: 16·16 values for each of the groups 0…g before it, cumulated.
  __host__ __device__ int group_begin(int g) const { return kFullGroup * kFullGroup * g * (g + 1) / 2; }
  __host__ __device__ int d_t() const { return group_begin(groups); }  // after P's groups
  __host__ __device__ int d_stride() const { return rows + 1; }
  __host__ __device__ std::size_t bytes() const { return static_cast<std::size_t>(d_t() + D * d_stride()) * sizeof(T); }
};

/// Rows per block of the staged log-density, or 0 when even 32 rows would not fit.
template <class T>
int staged_density_rows(int D) {
  for (int rows : {128, 64, 32})
    if (StagedDensityLayout<T>(D, rows).bytes() <= kFullSharedLimit) return rows;
  return 0;
}

template <class T>
__device__ __forceinline__ void load_group(const T* p, T (&v)[kFullGroup]) {
  if constexpr (sizeof(T) == 4) {
#pragma unroll
    for (int q = 0; q < kFullGroup / 4; ++q) {
      const float4 w = reinterpret_cast<const float4*>(p)[q];
      v[4 * q] = w.x, v[4 * q + 1] = w.y, v[4 * q + 2] = w.z, v[4 * q + 3] = w.w;
    }
  } else {
#pragma unroll
    for (int q = 0; q < kFullGroup / 2; ++q) {
      const double2 w = reinterpret_cast<const double2*>(p)[q];
      v[2 * q] = w.x, v[2 * q + 1] = w.y;
    }
  }
}

template <class T>
__global__ void full_log_density_staged_kernel(PartView<T> part, const T* __restrict__ x, int ld, T* __restrict__ logp,
                                               int K, std::int64_t rows, int block_rows) {
  MIXLE_DYNAMIC_SHARED(T, smem);
  const int D = part.dims, tid = threadIdx.x;
  const StagedDensityLayout<T> lay(D, block_rows);
  T* pt = smem;              // pt[group_begin(g) + j·16 + a] = P_{16g+a, j} (j ≤ 16g + a < D), else 0
  T* dt = smem + lay.d_t();  // dt[j·(rows + 1) + r] = x_j − m_j of the block's row r
  const int ds = lay.d_stride();
  const int k = static_cast<int>(blockIdx.y);
  const std::int64_t n0 = static_cast<std::int64_t>(blockIdx.x) * block_rows;
  const T* mean = part.coef + static_cast<std::int64_t>(k) * part.coef_stride;
  const T* P = mean + D;
  for (int g = 0; g < lay.groups; ++g)
    for (int e = tid; e < (g + 1) * kFullGroup * kFullGroup; e += blockDim.x) {
      const int j = e / kFullGroup, i = g * kFullGroup + e % kFullGroup;
      pt[lay.group_begin(g) + e] = i < D && j <= i ? P[static_cast<std::int64_t>(i) * D + j] : T(0);
    }
  for (int e = tid; e < block_rows * D; e += blockDim.x) {
    const int r = e / D, j = e % D;
    const std::int64_t n = n0 + r;
    dt[j * ds + r] = n < rows ? x[n * ld + part.col_begin + j] - mean[j] : T(0);
  }
  __syncthreads();
  // Two rows a thread (tid and tid + half): each load of P feeds both rows' FMAs.
  const int half = blockDim.x;
  const std::int64_t n = n0 + tid, n_b = n + half;
  if (n >= rows) return;
  T l = logp[n * K + k];
  T l_b = n_b < rows ? logp[n_b * K + k] : T(0);
  const T* d_a = dt + tid;
  const T* d_b = dt + tid + half;
  // gpu-model: full-log-density-group fp=336 per (row pair, component, 16-output group)
  for (int i0 = 0; i0 < D; i0 += kFullGroup) {
    const T* pg = pt + lay.group_begin(i0 / kFullGroup);
    T y[kFullGroup], y_b[kFullGroup];
#pragma unroll
    for (int a = 0; a < kFullGroup; ++a) y[a] = y_b[a] = T(0);
    // gpu-model: full-log-density fp=32 per (row pair, component, j below a 16-output group)
    for (int j = 0; j < i0; ++j) {
      const T d = d_a[j * ds], e = d_b[j * ds];
      T p[kFullGroup];
      load_group(pg + j * kFullGroup, p);
#pragma unroll
      for (int a = 0; a < kFullGroup; ++a) y[a] += p[a] * d, y_b[a] += p[a] * e;
    }
#pragma unroll
    for (int jl = 0; jl < kFullGroup; ++jl) {  // the group's triangle: j = i0 + jl ≤ i = i0 + a
      if (i0 + jl >= D) break;
      const T d = d_a[(i0 + jl) * ds], e = d_b[(i0 + jl) * ds];
      T p[kFullGroup];
      load_group(pg + (i0 + jl) * kFullGroup, p);
#pragma unroll
      for (int a = jl; a < kFullGroup; ++a) y[a] += p[a] * d, y_b[a] += p[a] * e;
    }
#pragma unroll
    for (int a = 0; a < kFullGroup; ++a)
      if (i0 + a < D) l -= T(0.5) * y[a] * y[a], l_b -= T(0.5) * y_b[a] * y_b[a];
  }
  logp[n * K + k] = l;
  if (n_b < rows) logp[n_b * K + k] = l_b;
}

/// MIXLE_CUDA_FULL_DENSITY=rowwise selects the row-per-thread log-density that reads P from
/// global memory (for comparisons; it is also the path for D beyond the staged kernel's).
bool use_rowwise_full_density() {
  const char* v = std::getenv("MIXLE_CUDA_FULL_DENSITY");
  return v && std::strcmp(v, "rowwise") == 0;
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
// diagonal of regions). Its threads take the 4 × 4 blocks of the region that hold an entry
// (i, j < D) and, in a diagonal region, lie on or above the diagonal of blocks — 136 of 256 at
// D = 64, 10 at D = 16 — one each, so whole warps past the last block do no arithmetic; every
// block above the diagonal is also written to its mirror image (S2 is symmetric). A diagonal
// region's diagonal blocks come first (the first warp) and also sum the first moments Σ r·t_i —
// r·t_i is the product they form anyway — so no other kernel reads the rows for them. The
// mirror holds Σ (r·t_i)·t_j where the CPU sums (r·t_j)·t_i, the same value to rounding. 32 rows
// of t = x − s_k (the region's i and j columns that exist) and of r are staged in shared memory at
// a time, so per row a thread does 16 FMAs for 8 shared loads. Per entry the arithmetic is the
// generic kernel's and the CPU's: acc += (r·t_i)·t_j in row order, T within kSubBlockRows rows,
// float64 across.
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
  const std::int64_t slot = blockIdx.x;
  const int k = static_cast<int>(blockIdx.y);
  // blockIdx.z enumerates the region pairs (ib ≤ jb) row by row.
  int ib = 0, z = static_cast<int>(blockIdx.z);
  while (z >= spans - ib) z -= spans - ib, ++ib;
  const int jb = ib + z;
  const int i0 = ib * kFullSpan, j0 = jb * kFullSpan;
  const int D = part.dims;
  const int ni = D - i0 < kFullSpan ? D - i0 : kFullSpan, nj = D - j0 < kFullSpan ? D - j0 : kFullSpan;
  // This thread's block (ty, tx): the tid-th of the region's computed blocks — in a diagonal
  // region its blocks_i diagonal blocks, then those above them row by row; else row by row.
  const int blocks_i = (ni + kFullReg - 1) / kFullReg, blocks_j = (nj + kFullReg - 1) / kFullReg;
  const bool diagonal_region = ib == jb;
  int ty = -1, tx = 0;
  if (diagonal_region && tid < blocks_i) {
    ty = tx = tid;
  } else {
    for (int by = 0, t = diagonal_region ? tid - blocks_i : tid; by < blocks_i; ++by) {
      const int first = diagonal_region ? by + 1 : 0;
      if (t < blocks_j - first) {
        ty = by, tx = first + t;
        break;
      }
      t -= blocks_j - first;
    }
  }
  const bool active = ty >= 0;
  const bool mirrored = !diagonal_region || ty < tx;
  const bool first_moments = diagonal_region && active && ty == tx;
  const T* shift = part.shift + static_cast<std::int64_t>(k) * D;
  const std::int64_t begin = slot * rows_per_slot;
  const std::int64_t end = begin + rows_per_slot < rows ? begin + rows_per_slot : rows;
  T acc[kFullReg][kFullReg], acc1[kFullReg];
  double tot[kFullReg][kFullReg], tot1[kFullReg];
#pragma unroll
  for (int a = 0; a < kFullReg; ++a) {
    tot1[a] = 0.0;
#pragma unroll
    for (int b = 0; b < kFullReg; ++b) tot[a][b] = 0.0;
  }
  for (std::int64_t b0 = begin; b0 < end; b0 += kSubBlockRows) {
    const std::int64_t b1 = b0 + kSubBlockRows < end ? b0 + kSubBlockRows : end;
#pragma unroll
    for (int a = 0; a < kFullReg; ++a) {
      acc1[a] = T(0);
#pragma unroll
      for (int b = 0; b < kFullReg; ++b) acc[a][b] = T(0);
    }
    for (std::int64_t r0 = b0; r0 < b1; r0 += kFullRowsPerLoad) {
      const int nrow = static_cast<int>(b1 - r0 < kFullRowsPerLoad ? b1 - r0 : kFullRowsPerLoad);
      __syncthreads();                                           // the previous tile has been consumed
      for (int e = tid; e < nrow * ni; e += kFullTileThreads) {  // ni ≥ nj: i0 ≤ j0
        const int row = e / ni, col = e % ni;
        const T* xr = x + (r0 + row) * ld + part.col_begin;
        ti[row][col] = xr[i0 + col] - shift[i0 + col];
        if (col < nj) tj[row][col] = xr[j0 + col] - shift[j0 + col];
      }
      if (tid < nrow) rsh[tid] = resp[(r0 + tid) * K + k];
      __syncthreads();
      if (!active) continue;  // (the loop's barriers are at its top: every thread still reaches them)
      // Columns past ni / nj of a block hold stale values; they feed only entries never written.
      // (fp=24: the first moments' 4 adds are counted for every warp, though only the first
      // warp of a diagonal region issues them)
      // gpu-model: full-second-moment fp=24 per (row, component, region, computed block)
      for (int row = 0; row < nrow; ++row) {
        const T r = rsh[row];
        if (r == T(0)) continue;  // uniform across the block
        T rti[kFullReg], tjv[kFullReg];
#pragma unroll
        for (int a = 0; a < kFullReg; ++a) rti[a] = r * ti[row][ty * kFullReg + a];
#pragma unroll
        for (int b = 0; b < kFullReg; ++b) tjv[b] = tj[row][tx * kFullReg + b];
        if (first_moments)
#pragma unroll
          for (int a = 0; a < kFullReg; ++a) acc1[a] += rti[a];
#pragma unroll
        for (int a = 0; a < kFullReg; ++a)
#pragma unroll
          for (int b = 0; b < kFullReg; ++b) acc[a][b] += rti[a] * tjv[b];
      }
    }
#pragma unroll
    for (int a = 0; a < kFullReg; ++a) {
      tot1[a] += static_cast<double>(acc1[a]);
#pragma unroll
      for (int b = 0; b < kFullReg; ++b) tot[a][b] += static_cast<double>(acc[a][b]);
    }
  }
  double* first = partials + slot * stat_size + part.stat_offset + static_cast<std::int64_t>(k) * part.stat_stride;
  if (first_moments)
#pragma unroll
    for (int a = 0; a < kFullReg; ++a)
      if (i0 + ty * kFullReg + a < D) first[i0 + ty * kFullReg + a] = tot1[a];
  double* out = first + D;
#pragma unroll
  for (int a = 0; a < kFullReg; ++a)
#pragma unroll
    for (int b = 0; b < kFullReg; ++b) {
      const int i = i0 + ty * kFullReg + a, j = j0 + tx * kFullReg + b;
      if (active && i < D && j < D) {
        out[static_cast<std::int64_t>(i) * D + j] = tot[a][b];
        if (mirrored) out[static_cast<std::int64_t>(j) * D + i] = tot[a][b];
      }
    }
}

// Packed second moments (float, D ≤ 64: the default there). The region kernel above gives one
// component a block and a thread a 4 × 4 block of S2: at D = 64 it issues 160 lanes for 136
// blocks and about two instructions per FMA (8 shared loads and 4 multiplies per 16 FMAs). Here a
// thread owns a 4 × 8 block (rows i = 4a…4a+3, columns j = 8b…8b+7) of one component's S2, the
// blocks that hold an entry on or above the diagonal (b ≥ ⌊a/2⌋: 72 per component at D = 64, 6 at
// D = 16), and a block serves as many components as fill its warps (3 at D = 64: 216 of 224
// lanes busy). A block owns (slot, its components); per 32 rows it stages r and t = x − s_k for
// each of its components, and per row a thread reads r and three 16-byte vectors of t and does 4
// multiplies and 32 FMAs — or nothing when r = 0 (the CPU's rule, which also keeps a NaN row's
// data out). The blocks with b = ⌊a/2⌋ (which hold the diagonal) come first, and also sum the
// first moments Σ r·t_i. Per entry the arithmetic and what is written are the region kernel's —
// acc += (r·t_i)·t_j in row order, float within kSubBlockRows rows, float64 across; within a
// 4 × 4 block on the diagonal both orders summed, above it mirrored — so the two kernels give the
// same bits.
constexpr int kPackedRows = 32;     // rows of r and t staged at a time
constexpr int kPackedI = 4;         // rows of a thread's block of S2
constexpr int kPackedJ = 8;         // columns of a thread's block of S2
constexpr int kPackedMaxDims = 64;  // beyond, the region kernel
constexpr int kPackedMaxThreads = 256;

/// How a block of the packed kernel is laid out for D and K (computed on the host).
struct PackedMomentShape {
  int D = 0, ni = 0, nj = 0;  // row blocks of 4, column blocks of 8
  int dp = 0;                 // staged columns per row: nj·8 rounded up to a power of 2, past D zero
  int per_comp = 0;           // thread blocks of S2 per component (ni of them hold the diagonal)
  int comps = 0, threads = 0;
  int comp_stride = 0;  // floats of t per component: kPackedRows·dp + 4 (a bank apart)
  __host__ __device__ std::size_t bytes() const {
    return static_cast<std::size_t>(comps) * (comp_stride + kPackedRows + dp) * sizeof(float);
  }
};

PackedMomentShape packed_moment_shape(int D, int K) {
  PackedMomentShape s;
  s.D = D;
  s.ni = (D + kPackedI - 1) / kPackedI;
  s.nj = (D + kPackedJ - 1) / kPackedJ;
  for (s.dp = kPackedJ; s.dp < s.nj * kPackedJ;) s.dp *= 2;
  for (int a = 0; a < s.ni; ++a) s.per_comp += s.nj - a / 2;
  s.comp_stride = kPackedRows * s.dp + 4;
  const std::size_t per_comp_bytes = static_cast<std::size_t>(s.comp_stride + kPackedRows + s.dp) * sizeof(float);
  s.comps = std::min({K, kPackedMaxThreads / s.per_comp, static_cast<int>(kFullSharedLimit / per_comp_bytes)});
  s.threads = (s.comps * s.per_comp + 31) / 32 * 32;
  return s;
}

template <int DP>
__global__ void __launch_bounds__(kPackedMaxThreads, 2)
    full_second_moment_packed_kernel(PartView<float> part, const float* __restrict__ x, int ld,
                                     const float* __restrict__ resp, int K, std::int64_t rows,
                                     std::int64_t rows_per_slot, double* __restrict__ partials, std::int64_t stat_size,
                                     PackedMomentShape shape) {
  MIXLE_DYNAMIC_SHARED(float, smem);
  constexpr int dp = DP;
  const int C = shape.comps, cs = shape.comp_stride, ni = shape.ni, D = shape.D;
  float* ts = smem;                  // ts[c·cs + row·dp + col] = t of the tile's row for component k0 + c
  float* rs = ts + C * cs;           // rs[c·kPackedRows + row] = r
  float* ss = rs + C * kPackedRows;  // ss[c·dp + col] = the shift s (0 past D)
  const int tid = threadIdx.x, nthreads = blockDim.x;
  const std::int64_t slot = blockIdx.x;
  const int k0 = static_cast<int>(blockIdx.y) * C;
  // This thread's block of S2: component c, rows 4a…, columns 8b… (diagonal blocks first).
  int c = -1, a = 0, b = 0;
  if (tid < C * ni) {
    c = tid / ni, a = tid % ni, b = a / 2;
  } else if (tid < C * shape.per_comp) {
    const int off = shape.per_comp - ni, u = tid - C * ni;
    c = u / off;
    for (int t = u % off; a < ni; ++a) {
      const int first = a / 2 + 1;
      if (t < shape.nj - first) {
        b = first + t;
        break;
      }
      t -= shape.nj - first;
    }
  }
  const bool active = c >= 0 && k0 + c < K;
  const bool diagonal = tid < C * ni;
  for (int e = tid; e < C * dp; e += nthreads) {
    const int cc = e / dp, col = e % dp, k = k0 + cc;
    ss[e] = k < K && col < D ? part.shift[static_cast<std::int64_t>(k) * D + col] : 0.0f;
  }
  const std::int64_t begin = slot * rows_per_slot;
  const std::int64_t end = begin + rows_per_slot < rows ? begin + rows_per_slot : rows;
  float acc[kPackedI][kPackedJ], acc1[kPackedI];
  // The float64 totals are touched once per kSubBlockRows rows: kept in local memory (volatile),
  // they leave the registers to the row loop, whose loads can then be in flight together.
  volatile double tot[kPackedI][kPackedJ], tot1[kPackedI];
#pragma unroll
  for (int p = 0; p < kPackedI; ++p) {
    tot1[p] = 0.0;
#pragma unroll
    for (int q = 0; q < kPackedJ; ++q) tot[p][q] = 0.0;
  }
  const float* ti_base = ts + (c < 0 ? 0 : c) * cs + kPackedI * a;
  const float* tj_base = ts + (c < 0 ? 0 : c) * cs + kPackedJ * b;
  const float* r_base = rs + (c < 0 ? 0 : c) * kPackedRows;
  for (std::int64_t b0 = begin; b0 < end; b0 += kSubBlockRows) {
    const std::int64_t b1 = b0 + kSubBlockRows < end ? b0 + kSubBlockRows : end;
#pragma unroll
    for (int p = 0; p < kPackedI; ++p) {
      acc1[p] = 0.0f;
#pragma unroll
      for (int q = 0; q < kPackedJ; ++q) acc[p][q] = 0.0f;
    }
    for (std::int64_t r0 = b0; r0 < b1; r0 += kPackedRows) {
      const int nrow = static_cast<int>(b1 - r0 < kPackedRows ? b1 - r0 : kPackedRows);
      __syncthreads();  // the previous tile has been consumed (and, the first time, ss written)
      for (int e = tid; e < C * kPackedRows; e += nthreads) {
        const int row = e / C, cc = e % C, k = k0 + cc;  // consecutive threads, consecutive components
        rs[cc * kPackedRows + row] = row < nrow && k < K ? resp[(r0 + row) * K + k] : 0.0f;
      }
      for (int e = tid; e < kPackedRows * dp; e += nthreads) {
        const int row = e / dp, col = e - row * dp;
        const float xv = row < nrow && col < D ? x[(r0 + row) * ld + part.col_begin + col] : 0.0f;
        float* tp = ts + row * dp + col;
        const float* sp = ss + col;
        // gpu-model: full-packed-stage fp=1 per (row, component, staged column)
        for (int cc = 0; cc < C; ++cc, tp += cs, sp += dp) *tp = xv - *sp;
      }
      __syncthreads();
      // (The loop's barriers are at its top: a thread with no block still reaches them.)
      if (!active) continue;
#pragma unroll 4
      // gpu-model: full-packed-moment fp=40 per (row, block of components, thread)
      for (int row = 0; row < nrow; ++row) {
        const float r = r_base[row];
        if (r == 0.0f) continue;  // the CPU's rule; it also keeps a NaN row's data out
        const float4 vi = *reinterpret_cast<const float4*>(ti_base + row * dp);
        const float4 vj0 = *reinterpret_cast<const float4*>(tj_base + row * dp);
        const float4 vj1 = *reinterpret_cast<const float4*>(tj_base + row * dp + 4);
        const float rti[kPackedI] = {r * vi.x, r * vi.y, r * vi.z, r * vi.w};
        const float tj[kPackedJ] = {vj0.x, vj0.y, vj0.z, vj0.w, vj1.x, vj1.y, vj1.z, vj1.w};
        if (diagonal)
#pragma unroll
          for (int p = 0; p < kPackedI; ++p) acc1[p] += rti[p];
#pragma unroll
        for (int p = 0; p < kPackedI; ++p)
#pragma unroll
          for (int q = 0; q < kPackedJ; ++q) acc[p][q] += rti[p] * tj[q];
      }
    }
#pragma unroll
    for (int p = 0; p < kPackedI; ++p) {
      tot1[p] = tot1[p] + static_cast<double>(acc1[p]);
#pragma unroll
      for (int q = 0; q < kPackedJ; ++q) tot[p][q] = tot[p][q] + static_cast<double>(acc[p][q]);
    }
  }
  if (!active) return;
  double* first = partials + slot * stat_size + part.stat_offset + static_cast<std::int64_t>(k0 + c) * part.stat_stride;
  if (diagonal)
#pragma unroll
    for (int p = 0; p < kPackedI; ++p)
      if (kPackedI * a + p < D) first[kPackedI * a + p] = tot1[p];
  double* out = first + D;
#pragma unroll
  for (int p = 0; p < kPackedI; ++p)
#pragma unroll
    for (int q = 0; q < kPackedJ; ++q) {
      // The region kernel's rule, for the same bits: within a 4 × 4 block on the diagonal both
      // (r·t_i)·t_j and (r·t_j)·t_i are summed and written; above it an entry is also mirrored.
      const int i = kPackedI * a + p, j = kPackedJ * b + q;
      if (j >= kPackedI * a && j < D && i < D) {
        out[static_cast<std::int64_t>(i) * D + j] = tot[p][q];
        if (j >= kPackedI * (a + 1)) out[static_cast<std::int64_t>(j) * D + i] = tot[p][q];
      }
    }
}

/// MIXLE_CUDA_FULL_STATS selects a statistics kernel for comparisons: `generic` (one thread per
/// statistic) or `region` (the 4 × 4 region kernel, also the default past the packed kernel's
/// reach: float64, or D > 64).
bool full_stats_variant(const char* name) {
  const char* v = std::getenv("MIXLE_CUDA_FULL_STATS");
  return v && std::strcmp(v, name) == 0;
}

}  // namespace

template <class T>
void launch_gaussian_full_log_density(const PartView<T>& part, const ChunkArgs<T>& c, cudaStream_t s) {
  if (c.rows == 0) return;
  const int block_rows = staged_density_rows<T>(part.dims);
  if (block_rows > 0 && !use_rowwise_full_density()) {
    const dim3 grid(ceil_div(c.rows, block_rows), static_cast<unsigned>(c.components));
    launch_kernel<full_log_density_staged_kernel<T>>(grid, block_rows / 2,
                                                     StagedDensityLayout<T>(part.dims, block_rows).bytes(), s, part,
                                                     c.x, c.ld, c.resp, c.components, c.rows, block_rows);
    MIXLE_CUDA_CHECK_LAUNCH();
    return;
  }
  const dim3 grid(ceil_div(c.rows, kFullRows), static_cast<unsigned>(c.components));
  launch_kernel<full_log_density_kernel<T>>(grid, kFullRows, 0, s, part, c.x, c.ld, c.resp, c.components, c.rows);
  MIXLE_CUDA_CHECK_LAUNCH();
}

template <class T>
void launch_gaussian_full_accumulate(const PartView<T>& part, const ChunkArgs<T>& c, const SlotPlan& plan,
                                     cudaStream_t s) {
  if (full_stats_variant("generic")) {
    launch_accumulate<T, FullMoment<T>>(part, c, plan, s);
    return;
  }
  if (c.rows == 0 || part.dims == 0) return;
  if constexpr (sizeof(T) == sizeof(float)) {
    if (part.dims <= kPackedMaxDims && !full_stats_variant("region")) {
      const PackedMomentShape shape = packed_moment_shape(part.dims, c.components);
      const dim3 grid(static_cast<unsigned>(plan.slots), static_cast<unsigned>(ceil_div(c.components, shape.comps)));
      const auto launch = [&]<int DP>() {
        launch_kernel<full_second_moment_packed_kernel<DP>>(grid, shape.threads, shape.bytes(), s, part, c.x, c.ld,
                                                            c.resp, c.components, c.rows, plan.rows_per_slot,
                                                            plan.partials, plan.stat_size, shape);
      };
      switch (shape.dp) {
        case 8: launch.template operator()<8>(); break;
        case 16: launch.template operator()<16>(); break;
        case 32: launch.template operator()<32>(); break;
        default: launch.template operator()<64>(); break;
      }
      MIXLE_CUDA_CHECK_LAUNCH();
      return;
    }
  }
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
