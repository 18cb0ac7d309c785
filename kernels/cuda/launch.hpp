// Launchers of the CUDA kernels (internal to kernels/cuda; host declarations, any compiler with
// the CUDA toolkit's headers). Each family's .cu defines its two launchers for T = float, double.
#pragma once

#include "kernels/cuda/pass.hpp"

namespace mixle::kernels::cuda {

/// Device pointers of one chunk.
template <class T>
struct ChunkArgs {
  const T* x = nullptr;  // rows × ld
  int ld = 0;
  std::int64_t rows = 0;
  int components = 0;               // K
  T* resp = nullptr;                // rows × K
  T* row_offset = nullptr;          // rows
  double* loglik = nullptr;         // rows
  int* status = nullptr;            // rows
  const double* weights = nullptr;  // rows sample weights (device), or null: every row weighs 1
};

/// How the chunk's rows are split into statistics slots.
struct SlotPlan {
  std::int64_t slots = 1;
  std::int64_t rows_per_slot = 0;  // a multiple of kSubBlockRows
  std::int64_t stat_size = 0;
  double* partials = nullptr;  // slots × stat_size, device
};

// normalise.cu
template <class T>
void launch_init_log_density(const ModelView<T>& model, const ChunkArgs<T>& c, cudaStream_t s);
template <class T>
void launch_normalise(const ChunkArgs<T>& c, DeviceReport* report, cudaStream_t s);
template <class T>
void launch_list_bad_rows(const ChunkArgs<T>& c, std::int64_t first_row, DeviceReport* report, cudaStream_t s);

// normalise_external.cu
/// PassMode::normalised: c.resp's log-densities become r = exp_nonpositive(min(L − (T)N, 0))
/// with N = log_norm[n] (device, c.rows float64 values); rows with a non-finite N, and NaN
/// differences, get r = 0. No counting, no listing.
template <class T>
void launch_normalise_external(const ChunkArgs<T>& c, const double* log_norm, cudaStream_t s);

// weigh_rows.cu
/// Sample weights: each row's responsibilities c.resp[n, ·] times (T)c.weights[n].
template <class T>
void launch_weigh_rows(const ChunkArgs<T>& c, cudaStream_t s);

// reduce.cu
template <class T>
void launch_header_partials(PassMode mode, const ChunkArgs<T>& c, const SlotPlan& plan, cudaStream_t s);
void launch_reduce_slots(const SlotPlan& plan, double* stats, cudaStream_t s);

// one per family
template <class T>
void launch_gaussian_diag_log_density(const PartView<T>& part, const ChunkArgs<T>& c, cudaStream_t s);
template <class T>
void launch_gaussian_diag_accumulate(const PartView<T>& part, const ChunkArgs<T>& c, const SlotPlan& plan,
                                     cudaStream_t s);
/// TF32 tensor-op variant (float only): L += [y∘y, y]·W + c_k with y = x − c, the expansion about
/// the part's centre c (tf32_expansion.cuh); W and c_k from the part's coefficients.
void launch_gaussian_diag_log_density_tf32(cublasHandle_t handle, const PartView<float>& part,
                                           const ChunkArgs<float>& c, cudaStream_t s);
/// The fused single-kernel E-step (gaussian_diag_fused.cu): eligible models are one
/// gaussian_diag part in float32 with K ≤ 256, D ≤ 64, ⌈K/2⌉·⌈D/4⌉ ≤ 256 whose block layout fits
/// 48 KiB of shared memory (unless MIXLE_CUDA_FUSED=0). Writes rows' log-likelihood and status,
/// the report, and every slot's partials and header. Under `tf32` the log-densities are formed on
/// the tensor cores inside the kernel (the expanded form); the rest is the same kernel.
bool gaussian_diag_fused_eligible(const ModelView<float>& model, bool tf32);
void launch_gaussian_diag_fused(const ModelView<float>& model, const ChunkArgs<float>& c, const SlotPlan& plan,
                                DeviceReport* report, bool tf32, cudaStream_t s);
template <class T>
void launch_gaussian_full_log_density(const PartView<T>& part, const ChunkArgs<T>& c, cudaStream_t s);
template <class T>
void launch_gaussian_full_accumulate(const PartView<T>& part, const ChunkArgs<T>& c, const SlotPlan& plan,
                                     cudaStream_t s);
template <class T>
void launch_categorical_log_density(const PartView<T>& part, const ChunkArgs<T>& c, cudaStream_t s);
template <class T>
void launch_categorical_accumulate(const PartView<T>& part, const ChunkArgs<T>& c, const SlotPlan& plan,
                                   cudaStream_t s);
/// poisson, exponential, bernoulli (terms linear in a per-(component, dim) coefficient).
template <class T>
void launch_rate_log_density(const PartView<T>& part, const ChunkArgs<T>& c, cudaStream_t s);
template <class T>
void launch_rate_accumulate(const PartView<T>& part, const ChunkArgs<T>& c, const SlotPlan& plan, cudaStream_t s);
template <class T>
void launch_poisson_row_offset(const PartView<T>& part, const ChunkArgs<T>& c, cudaStream_t s);
/// gamma and lognormal (positive_families.cu: terms of log x).
template <class T>
void launch_gamma_log_density(const PartView<T>& part, const ChunkArgs<T>& c, cudaStream_t s);
template <class T>
void launch_gamma_accumulate(const PartView<T>& part, const ChunkArgs<T>& c, const SlotPlan& plan, cudaStream_t s);
template <class T>
void launch_lognormal_log_density(const PartView<T>& part, const ChunkArgs<T>& c, cudaStream_t s);
template <class T>
void launch_lognormal_accumulate(const PartView<T>& part, const ChunkArgs<T>& c, const SlotPlan& plan, cudaStream_t s);
template <class T>
void launch_lognormal_row_offset(const PartView<T>& part, const ChunkArgs<T>& c, cudaStream_t s);

}  // namespace mixle::kernels::cuda
