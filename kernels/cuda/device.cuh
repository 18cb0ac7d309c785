// Device-side building blocks shared by the family kernels (nvcc, or the host compiler against
// the CUDA simulator in a -DMIXLE_CUDA=SIM build: the same source either way).
#pragma once

#include "kernels/common/math.hpp"
#include "kernels/cuda/launch.hpp"

#include <cuda_runtime.h>

#include <cstddef>
#include <utility>

namespace mixle::kernels::cuda {

/// Every kernel launch goes through here — `launch_kernel<kernel>(grid, block, shared_bytes,
/// stream, args…)`, followed by MIXLE_CUDA_CHECK_LAUNCH() at the call — never `<<<>>>` directly:
/// under nvcc it is that launch; in a simulator build, the simulator's launch of the same kernel
/// (which names the kernel in its reports). This is the one place the two builds differ.
template <auto Kernel, class... Args>
void launch_kernel(dim3 grid, dim3 block, std::size_t shared_bytes, cudaStream_t stream, Args&&... args) {
#if MIXLE_CUDA_SIM
  ::mixle::cudasim::launch<Kernel>(grid, block, shared_bytes, stream, std::forward<Args>(args)...);
#else
  Kernel<<<grid, block, shared_bytes, stream>>>(std::forward<Args>(args)...);
#endif
}

/// `T* name` for the launch's dynamic shared memory (its third argument, in bytes), inside a
/// kernel: `MIXLE_DYNAMIC_SHARED(float, tile);`, 128-byte aligned (warp matrix loads and stores
/// need 256-bit alignment). In a simulator build the memory is a heap block of exactly that
/// size, so an overrun is caught by AddressSanitizer.
#if MIXLE_CUDA_SIM
#define MIXLE_DYNAMIC_SHARED(T, name) T* name = ::mixle::cudasim::dynamic_shared<T>()
#else
#define MIXLE_DYNAMIC_SHARED(T, name)                                     \
  extern __shared__ __align__(128) unsigned char mixle_dynamic_shared_[]; \
  T* name = reinterpret_cast<T*>(mixle_dynamic_shared_)
#endif

/// Most threads of a statistics block (one statistic entry each); narrower blocks for narrow
/// statistics (gaussian_diag at D = 32 has 64 entries per component) so no warp idles.
constexpr int kStatThreads = 128;
inline int stat_threads(int stat_stride) {
  const int warps = (stat_stride + 31) / 32;
  return warps * 32 < kStatThreads ? warps * 32 : kStatThreads;
}
/// Log-density tile: 32 components across a warp, 8 rows per block.
constexpr int kTileComponents = 32;
constexpr int kTileRows = 8;

inline unsigned ceil_div(std::int64_t a, std::int64_t b) { return static_cast<unsigned>((a + b - 1) / b); }

/// Grid of the per-(row, component) log-density kernels: rows on x (up to 2³¹ − 1 blocks; y and
/// z stop at 65535, which a chunk of 2²⁰ rows in tiles of 8 would exceed), component tiles on y.
inline dim3 log_density_grid(std::int64_t rows, int K) {
  return dim3(ceil_div(rows, kTileRows), ceil_div(K, kTileComponents));
}
inline dim3 log_density_block() { return dim3(kTileComponents, kTileRows); }

/// Grid of the statistics kernels: (entries of one component, components, slots).
inline dim3 accumulate_grid(int stat_stride, int K, const SlotPlan& plan) {
  return dim3(ceil_div(stat_stride, stat_threads(stat_stride)), static_cast<unsigned>(K),
              static_cast<unsigned>(plan.slots));
}

/// What a normal term reads: the value x (gaussian_diag) or log x (lognormal).
struct ValueFeature {
  template <class T>
  __device__ T operator()(T x) const {
    return x;
  }
};
struct LogFeature {
  template <class T>
  __device__ T operator()(T x) const {
    return log_of(x);
  }
};

/// Adds Σ_d −(f(x_d) − mean_kd)² / (2 var_kd) to L (coefficients mean [D], −1/(2 var) [D]),
/// f = Feature: gaussian_diag and lognormal. The CPU's order: h·(t·t), dimension by dimension.
template <class T, class Feature>
struct NormalTerm {
  __device__ T operator()(const PartView<T>& part, int k, const T* x, T l) const {
    const int D = part.dims;
    const T* mean = part.coef + static_cast<std::int64_t>(k) * part.coef_stride;
    const T* neg_half_prec = mean + D;
    for (int d = 0; d < D; ++d) {
      const T t = Feature{}(x[d]) - mean[d];
      l += neg_half_prec[d] * (t * t);
    }
    return l;
  }
};

/// The shifted moments of a normal term: entry j < D is Σ r (f(x_j) − s_j), entry D + d is
/// Σ r (f(x_d) − s_d)², for accumulate_kernel.
template <class T, class Feature>
struct ShiftedMoment {
  int d;
  bool second;
  T shift;
  __device__ ShiftedMoment(const PartView<T>& part, int k, int j)
      : d(j < part.dims ? j : j - part.dims),
        second(j >= part.dims),
        shift(part.shift[static_cast<std::int64_t>(k) * part.dims + (j < part.dims ? j : j - part.dims)]) {}
  __device__ T operator()(const T* x, T r) const {
    const T t = Feature{}(x[d]) - shift;
    const T rt = r * t;
    return second ? rt * t : rt;
  }
};

/// One thread per (slot, component k, statistic entry j): Σ over the slot's rows, in row order,
/// of r[n,k]·term(x_n). Sums run in T within kSubBlockRows rows and in float64 across them
/// (the CPU kernels' rounding). Rows with r = 0 are skipped, as on the CPU. Every entry of the
/// slot is written, so the partials need no clearing.
///   Term: struct with  __device__ Term(const PartView<T>&, int k, int j)  and
///                      __device__ T operator()(const T* x_row_part, T r) const.
/// Only entries [0, entries) of each component's block are computed (all by default).
template <class T, class Term>
__global__ void accumulate_kernel(PartView<T> part, const T* __restrict__ x, int ld, const T* __restrict__ resp, int K,
                                  std::int64_t rows, std::int64_t rows_per_slot, double* __restrict__ partials,
                                  std::int64_t stat_size, int entries) {
  const int j = static_cast<int>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (j >= entries) return;
  const int k = static_cast<int>(blockIdx.y);
  const std::int64_t slot = blockIdx.z;
  const std::int64_t begin = slot * rows_per_slot;
  const std::int64_t end = begin + rows_per_slot < rows ? begin + rows_per_slot : rows;
  const Term term(part, k, j);
  double total = 0.0;
  for (std::int64_t b0 = begin; b0 < end; b0 += kSubBlockRows) {
    const std::int64_t b1 = b0 + kSubBlockRows < end ? b0 + kSubBlockRows : end;
    T acc = T(0);
    for (std::int64_t n = b0; n < b1; ++n) {
      const T r = resp[n * K + k];
      if (r == T(0)) continue;
      acc += term(x + n * ld + part.col_begin, r);
    }
    total += static_cast<double>(acc);
  }
  partials[slot * stat_size + part.stat_offset + static_cast<std::int64_t>(k) * part.stat_stride + j] = total;
}

template <class T, class Term>
void launch_accumulate(const PartView<T>& part, const ChunkArgs<T>& c, const SlotPlan& plan, cudaStream_t s,
                       int entries = -1) {
  if (entries < 0) entries = part.stat_stride;
  if (c.rows == 0 || entries == 0) return;
  launch_kernel<accumulate_kernel<T, Term>>(accumulate_grid(entries, c.components, plan), stat_threads(entries), 0, s,
                                            part, c.x, c.ld, c.resp, c.components, c.rows, plan.rows_per_slot,
                                            plan.partials, plan.stat_size, entries);
  MIXLE_CUDA_CHECK_LAUNCH();
}

/// One thread per (row n, component k) adding a part's term to L[n,k]; the warp runs across
/// components so x_n is broadcast and L is written coalesced.
/// The term continues the running sum l (CPU order: log_const, then each part, dim by dim).
///   Term: __device__ T operator()(const PartView<T>&, int k, const T* x_row_part, T l) const.
template <class T, class Term>
__global__ void log_density_kernel(PartView<T> part, const T* __restrict__ x, int ld, T* __restrict__ logp, int K,
                                   std::int64_t rows, Term term) {
  const int k = static_cast<int>(blockIdx.y) * kTileComponents + threadIdx.x;
  const std::int64_t n = static_cast<std::int64_t>(blockIdx.x) * kTileRows + threadIdx.y;
  if (k >= K || n >= rows) return;
  T* l = logp + n * K + k;
  *l = term(part, k, x + n * ld + part.col_begin, *l);
}

template <class T, class Term>
void launch_log_density(const PartView<T>& part, const ChunkArgs<T>& c, Term term, cudaStream_t s) {
  if (c.rows == 0) return;
  launch_kernel<log_density_kernel<T, Term>>(log_density_grid(c.rows, c.components), log_density_block(), 0, s, part,
                                             c.x, c.ld, c.resp, c.components, c.rows, term);
  MIXLE_CUDA_CHECK_LAUNCH();
}

}  // namespace mixle::kernels::cuda
