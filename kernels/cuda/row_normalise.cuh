// The row-wise log-sum-exp normalisation as a warp-level device function, shared by the
// normalisation kernel (normalise.cu) and the fused gaussian_diag pass (nvcc only).
#pragma once

#include "kernels/common/math.hpp"
#include "kernels/cuda/pass.hpp"

#include <cuda_runtime.h>

namespace mixle::kernels::cuda {

template <class T>
__device__ T warp_max(T v) {
  for (int o = 16; o > 0; o >>= 1) {
    const T u = __shfl_xor_sync(0xffffffffu, v, o);
    v = u > v ? u : v;
  }
  return __shfl_sync(0xffffffffu, v, 0);
}

template <class T>
__device__ T warp_sum(T v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return __shfl_sync(0xffffffffu, v, 0);
}

__device__ inline void note_bad_row(DeviceReport* report, bool impossible) {
  atomicAdd(impossible ? &report->impossible_rows : &report->nan_rows, 1ull);
  atomicAdd(&report->chunk_bad, 1ull);
}

/// One row's normalisation by one full warp: l (K values, global or shared memory) holds the
/// row's log-densities and receives its responsibilities; *loglik and *status are written by
/// lane 0. The rules are those stated at the top of normalise.cu (the CPU kernels').
template <class T>
__device__ void normalise_row_warp(T* l, int K, int lane, double* loglik, int* status, DeviceReport* report) {
  constexpr T kInf = static_cast<T>(INFINITY);
  T m = -kInf;
  bool nan_seen = false;  // the max skips NaN; a NaN log-density makes the row a NaN row
  // gpu-model: row-max ld=1 per (row, component)
  for (int k = lane; k < K; k += 32) {
    m = l[k] > m ? l[k] : m;
    nan_seen = nan_seen || l[k] != l[k];
  }
  m = warp_max(m);
  if (__any_sync(0xffffffffu, nan_seen)) {
    for (int k = lane; k < K; k += 32) l[k] = T(0);
    if (lane == 0) {
      *loglik = static_cast<double>(NAN);
      *status = kRowNan;
      note_bad_row(report, false);
    }
    return;
  }
  if (m == kInf) {
    int ties = 0;
    for (int k = lane; k < K; k += 32) ties += l[k] == kInf;
    ties = warp_sum(ties);
    for (int k = lane; k < K; k += 32) l[k] = l[k] == kInf ? T(1) / static_cast<T>(ties) : T(0);
    if (lane == 0) *loglik = static_cast<double>(INFINITY), *status = kRowTie;
    return;
  }
  T sum = T(0);
  // gpu-model: row-exp ld=1 per (row, component)
  for (int k = lane; k < K; k += 32) {
    const T e = exp_nonpositive(l[k] - m);
    l[k] = e;
    sum += e;
  }
  sum = warp_sum(sum);
  if (isfinite(m) && isfinite(sum)) {
    const T inv = T(1) / sum;
    // gpu-model: row-scale fp=1 per (row, component)
    for (int k = lane; k < K; k += 32) l[k] *= inv;
    if (lane == 0) *loglik = static_cast<double>(m) + log(static_cast<double>(sum)), *status = kRowOk;
    return;
  }
  for (int k = lane; k < K; k += 32) l[k] = T(0);
  if (lane == 0) {
    const bool impossible = m == -kInf;
    // As on the CPU: −inf for an impossible row, NaN for a NaN row (sums go by *status).
    *loglik = impossible ? -static_cast<double>(INFINITY) : static_cast<double>(NAN);
    *status = impossible ? kRowImpossible : kRowNan;
    note_bad_row(report, impossible);
  }
}

}  // namespace mixle::kernels::cuda
