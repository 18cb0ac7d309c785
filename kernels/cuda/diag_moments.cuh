// The register block both gaussian_diag statistics kernels fold into — the fused E-step and the
// tiled statistics kernel: a thread owns 2 components × 4 dims of Σ r·(x − s) and Σ r·(x − s)²,
// and per row reads one r pair and one x vector (nvcc or the simulator).
// Per entry the operations are the generic kernel's and the CPU's, in row order: t = x − s,
// rt = r·t, Σ rt, Σ rt·t, summed in T within kSubBlockRows rows and in float64 across them; a
// component whose r is 0 is skipped (so a NaN row, whose r are all 0, folds nothing).
#pragma once

#include <cuda_runtime.h>

namespace mixle::kernels::cuda {

constexpr int kDiagBlockComps = 2;
constexpr int kDiagBlockDims = 4;

/// v = p[0, 2) (8- or 16-byte aligned shared memory).
template <class T>
__device__ __forceinline__ void load_pair(const T* p, T (&v)[kDiagBlockComps]) {
  if constexpr (sizeof(T) == 4) {
    const float2 w = *reinterpret_cast<const float2*>(p);
    v[0] = w.x, v[1] = w.y;
  } else {
    const double2 w = *reinterpret_cast<const double2*>(p);
    v[0] = w.x, v[1] = w.y;
  }
}

/// v = p[0, 4) (16-byte aligned shared memory).
template <class T>
__device__ __forceinline__ void load_quad(const T* p, T (&v)[kDiagBlockDims]) {
  if constexpr (sizeof(T) == 4) {
    const float4 w = *reinterpret_cast<const float4*>(p);
    v[0] = w.x, v[1] = w.y, v[2] = w.z, v[3] = w.w;
  } else {
    const double2 w0 = reinterpret_cast<const double2*>(p)[0], w1 = reinterpret_cast<const double2*>(p)[1];
    v[0] = w0.x, v[1] = w0.y, v[2] = w1.x, v[3] = w1.y;
  }
}

template <class T>
struct DiagMomentBlock {
  T shift[kDiagBlockComps][kDiagBlockDims];
  T acc1[kDiagBlockComps][kDiagBlockDims], acc2[kDiagBlockComps][kDiagBlockDims];
  double tot1[kDiagBlockComps][kDiagBlockDims], tot2[kDiagBlockComps][kDiagBlockDims];

  /// shift_of(a, b): the shift of entry (component a, dim b) of the block (0 past the edge).
  template <class ShiftOf>
  __device__ explicit DiagMomentBlock(ShiftOf shift_of) {
#pragma unroll
    for (int a = 0; a < kDiagBlockComps; ++a)
#pragma unroll
      for (int b = 0; b < kDiagBlockDims; ++b) shift[a][b] = shift_of(a, b), tot1[a][b] = 0.0, tot2[a][b] = 0.0;
  }

  __device__ void begin_sub_block() {
#pragma unroll
    for (int a = 0; a < kDiagBlockComps; ++a)
#pragma unroll
      for (int b = 0; b < kDiagBlockDims; ++b) acc1[a][b] = T(0), acc2[a][b] = T(0);
  }

  /// Entry (a, b) of one row: rt = r·t, Σ rt, Σ rt·t.
  __device__ __forceinline__ void add(int a, int b, T r, T t) {
    const T rt = r * t;
    acc1[a][b] += rt;
    acc2[a][b] += rt * t;
  }

  /// Centred: t = x − s.
  __device__ void fold_row(const T (&r)[kDiagBlockComps], const T (&x)[kDiagBlockDims]) {
#pragma unroll
    for (int a = 0; a < kDiagBlockComps; ++a)
      if (r[a] != T(0))
#pragma unroll
        for (int b = 0; b < kDiagBlockDims; ++b) add(a, b, r[a], x[b] - shift[a][b]);
  }

  /// Centred, without the test of r: for a row some component of the warp takes part in (the
  /// caller skips the others warp by warp). A zero r then adds r·t = ±0 and (r·t)·t = ±0, which
  /// leaves every sum's bits as skipping would (a sum that starts at +0 never becomes −0), since
  /// t = x − s is finite: x of a row that folds anything is finite, and so is the shift.
  __device__ void fold_row_every(const T (&r)[kDiagBlockComps], const T (&x)[kDiagBlockDims]) {
#pragma unroll
    for (int a = 0; a < kDiagBlockComps; ++a)
#pragma unroll
      for (int b = 0; b < kDiagBlockDims; ++b) add(a, b, r[a], x[b] - shift[a][b]);
  }

  /// Entry (a, b) of one row expanded about the part's centre: Σ r·y and Σ r·y², two FMAs, y = x − c
  /// and y² staged once per row for every component (the centred form takes four operations).
  __device__ __forceinline__ void add_expanded(int a, int b, T r, T y, T y2) {
    acc1[a][b] += r * y;
    acc2[a][b] += r * y2;
  }

  /// The TF32 pass's folds under the statistics guard (docs/numerics.md §4): a component admitted
  /// to the expanded form sums about the centre, and the caller folds its sums to the shift at the
  /// slot's end. fold_row_expanded: both components of the block admitted, and no test of r — the
  /// caller zeroes y and y² in rows that fold nothing (whose r are all 0 and whose x may not be
  /// finite), so a zero r adds 0 as skipping it would; a valid row's x is finite.
  /// fold_row_guarded: the components with expanded[a], the other centred, a zero r skipped.
  __device__ void fold_row_expanded(const T (&r)[kDiagBlockComps], const T (&y)[kDiagBlockDims],
                                    const T (&y2)[kDiagBlockDims]) {
#pragma unroll
    for (int a = 0; a < kDiagBlockComps; ++a)
#pragma unroll
      for (int b = 0; b < kDiagBlockDims; ++b) add_expanded(a, b, r[a], y[b], y2[b]);
  }
  __device__ void fold_row_guarded(const T (&r)[kDiagBlockComps], const T (&x)[kDiagBlockDims],
                                   const T (&y)[kDiagBlockDims], const T (&y2)[kDiagBlockDims],
                                   const bool (&expanded)[kDiagBlockComps]) {
#pragma unroll
    for (int a = 0; a < kDiagBlockComps; ++a) {
      if (r[a] == T(0)) continue;
#pragma unroll
      for (int b = 0; b < kDiagBlockDims; ++b)
        if (expanded[a])
          add_expanded(a, b, r[a], y[b], y2[b]);
        else
          add(a, b, r[a], x[b] - shift[a][b]);
    }
  }

  __device__ void end_sub_block() {
#pragma unroll
    for (int a = 0; a < kDiagBlockComps; ++a)
#pragma unroll
      for (int b = 0; b < kDiagBlockDims; ++b)
        tot1[a][b] += static_cast<double>(acc1[a][b]), tot2[a][b] += static_cast<double>(acc2[a][b]);
  }

  /// write(a, b, Σ r·t, Σ r·t²) for every entry of the block; the caller skips those past the edge.
  template <class Write>
  __device__ void write(Write write_entry) const {
#pragma unroll
    for (int a = 0; a < kDiagBlockComps; ++a)
#pragma unroll
      for (int b = 0; b < kDiagBlockDims; ++b) write_entry(a, b, tot1[a][b], tot2[a][b]);
  }
};

}  // namespace mixle::kernels::cuda
