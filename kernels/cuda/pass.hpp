// The CUDA kernels' pass over one resident chunk of rows (host API; any C++ compiler with the
// CUDA toolkit's headers). The engine (engine/compute_cuda.cpp) owns streaming and residency;
// this layer runs, on one stream, for rows already on the device:
//
//   log-density   L[n,k] = log_const[k] (+ per-row offset) + Σ_parts part term    (one kernel
//                 per part, stacked over all K components; L is rows × K in T)
//   normalise     one warp per row: log-sum-exp → responsibilities in place, per-row
//                 log-likelihood (float64), row status; impossible/NaN rows get zero
//                 responsibility and are counted (integer atomics only) and listed.
//                 PassMode::normalised instead subtracts an external per-row normaliser
//                 (normalise_external.cu): r = exp(min(L − N, 0)), no counting
//   statistics    every (slot of rows, component, statistic) is summed by one thread in a fixed
//                 row order — in T over runs of kSubBlockRows rows, then in float64 — and
//                 written to its own slot; a fixed-order kernel folds the slots one by one, in
//                 row order, into the float64 statistics. No floating-point atomics.
//
// Determinism: slots are rows [i·R, (i+1)·R) of the *pass* (R = slot_rows(stat_size), chunks
// start at multiples of R), and the fold is sequential over slots across chunks, so the
// statistics are bit-identical run to run and for any chunking (resident or streamed).
//
// Layouts are those of kernels/model_view.hpp; the statistics match the CPU kernels' exactly.
#pragma once

#include "kernels/cuda/chunk_plan.hpp"
#include "kernels/cuda/runtime.hpp"
#include "kernels/model_view.hpp"

#include <cstdint>
#include <vector>

namespace mixle::kernels::cuda {

/// accumulate: E-step statistics (log-densities, log-sum-exp, fold); score: per-row
/// log-likelihood and responsibilities only; given: fold responsibilities supplied by the
/// caller; normalised: log-densities, then r = exp(min(L − N, 0)) against a caller-supplied
/// per-row normaliser N (component sharding), then the fold — header [0], [1] left at 0.
enum class PassMode { accumulate, score, given, normalised };

/// Row status written by the normalisation (device int per row).
enum RowStatus : int { kRowOk = 0, kRowImpossible = 1, kRowNan = 2, kRowTie = 3 };

/// Bad-row report accumulated on the device over a whole pass (integer atomics only).
struct DeviceReport {
  unsigned long long impossible_rows;
  unsigned long long nan_rows;
  unsigned long long chunk_bad;  // bad rows of the current chunk (reset per chunk)
  // (row, component) pairs whose second moments the TF32 fused pass summed about the part's
  // centre (the statistics guard admitted the component) rather than about its shift
  unsigned long long expanded_pairs;
  int num_listed;
  long long listed[PassReport::kMaxListed];  // first bad rows of the pass, ascending
};

/// A packed model copied to the device. view() has device pointers for log_const, coef and
/// shift; its `parts` array itself stays in host memory (launchers read it on the host).
template <class T>
class DeviceModel {
 public:
  /// Copies `host` (host pointers, from engine::pack_model<T>) to the device on `stream`;
  /// the host arrays must stay alive until the stream has passed the copy.
  void upload(const ModelView<T>& host, cudaStream_t stream);
  const ModelView<T>& view() const noexcept { return view_; }

 private:
  DeviceBuffer<T> log_const_, coef_, shift_;
  std::vector<PartView<T>> parts_;
  ModelView<T> view_;
};

/// Device working memory for chunks of up to `rows` rows: O(rows·(K + 1)) plus the partials.
template <class T>
struct ChunkWorkspace {
  DeviceBuffer<T> resp;           // rows × K: log-densities, then responsibilities
  DeviceBuffer<T> row_offset;     // rows
  DeviceBuffer<double> loglik;    // rows
  DeviceBuffer<int> status;       // rows (RowStatus)
  DeviceBuffer<double> partials;  // slots × stat_size

  /// Takes workspace_bytes_per_row<T>(components) per row (kernels/cuda/chunk_plan.hpp).
  void reserve(std::int64_t rows, int components, std::int64_t stat_size);
};

/// One chunk on `stream`. x: device, rows × ld in T (ld ≥ model.columns). first_row: index of
/// the chunk's row 0 within the pass, a multiple of slot_rows(model.stat_size). given_resp: device rows × K (given mode
/// only, else null). log_norm: device, rows float64 normalisers (normalised mode only, else
/// null). weights: device, rows float64 sample weights, or null (every row 1; ignored by
/// score): responsibilities are scaled by them after normalisation (given mode: the caller
/// passes them scaled) and the header sums weigh rows by them; a weighted float pass takes the
/// unfused gaussian_diag kernels. stats: device, model.stat_size float64 values, added to
/// (accumulate, given). report: device. After a score pass ws.resp / ws.loglik hold the chunk's results.
/// tf32: null, or a cuBLAS handle bound to `stream` — the explicit TF32 opt-in: float passes
/// then compute gaussian_diag log-densities with a tensor-op GEMM (docs/cuda.md).
template <class T>
void run_chunk(PassMode mode, const ModelView<T>& model, const T* x, std::int64_t rows, int ld, std::int64_t first_row,
               const T* given_resp, const double* log_norm, const double* weights, ChunkWorkspace<T>& ws, double* stats,
               DeviceReport* report, cublasHandle_t tf32, cudaStream_t stream);

}  // namespace mixle::kernels::cuda
