// gaussian_diag log-densities with a TF32 tensor-op GEMM — only on the explicit `--precision
// tf32` opt-in. Expanding h (x − m)² = h x² − 2hm x + h m² makes the part's term one GEMM:
//     L (rows × K) += [x∘x, x] (rows × 2D) · [h; −2hm]ᵀ (2D × K)  +  c_k,  c_k = Σ_d h m²
// c_k is added exactly in fp32 afterwards (it can be large; rounding it to TF32 would cost
// 2⁻¹¹·|c_k|). The operands of the GEMM are rounded to TF32 (10-bit mantissa), so each term
// carries a relative error ≈ 2⁻¹⁰ and the expansion cancels when |m| ≫ σ: the log-density error
// grows like 2⁻¹⁰ · Σ_d |h|(x² + 2|m x|) (docs/design.md §6). Statistics stay on the
// shifted fp32 SIMT path; TF32 never touches second moments.
#include "kernels/cuda/device.cuh"

namespace mixle::kernels::cuda {
namespace {

/// One thread per component: W[k] = [h (D), −2 h m (D)] (row-major K × 2D) and c_k.
__global__ void tf32_weights_kernel(PartView<float> part, int K, float* __restrict__ w, float* __restrict__ c) {
  const int k = static_cast<int>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (k >= K) return;
  const int D = part.dims;
  const float* mean = part.coef + static_cast<std::int64_t>(k) * part.coef_stride;
  const float* h = mean + D;
  float* wk = w + static_cast<std::int64_t>(k) * 2 * D;
  float ck = 0.0f;
  for (int d = 0; d < D; ++d) {
    wk[d] = h[d];
    wk[D + d] = -2.0f * h[d] * mean[d];
    ck += h[d] * mean[d] * mean[d];
  }
  c[k] = ck;
}

/// A[n] = [x∘x, x] (row-major rows × 2D).
__global__ void tf32_features_kernel(PartView<float> part, const float* __restrict__ x, int ld, std::int64_t rows,
                                     float* __restrict__ a) {
  const std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const int D = part.dims;
  if (i >= rows * D) return;
  const std::int64_t n = i / D;
  const int d = static_cast<int>(i % D);
  const float v = x[n * ld + part.col_begin + d];
  a[n * 2 * D + d] = v * v;
  a[n * 2 * D + D + d] = v;
}

__global__ void add_constant_kernel(const float* __restrict__ c, float* __restrict__ logp, int K, std::int64_t rows) {
  const int k = static_cast<int>(blockIdx.y) * kTileComponents + threadIdx.x;
  const std::int64_t n = static_cast<std::int64_t>(blockIdx.x) * kTileRows + threadIdx.y;
  if (k >= K || n >= rows) return;
  logp[n * K + k] += c[k];
}

}  // namespace

namespace {

/// The features, weights and GEMM: L = [x∘x, x]·Wᵀ + β·L, c_k into `constant`. The scratch is
/// stream-ordered, O(rows·D + K·D), freed in stream order after the GEMM.
void tf32_product(cublasHandle_t handle, const PartView<float>& part, const ChunkArgs<float>& c, float beta,
                  float* constant, cudaStream_t s) {
  const int D = part.dims, K = c.components;
  const std::size_t a_count = static_cast<std::size_t>(c.rows) * 2 * D;
  const std::size_t w_count = static_cast<std::size_t>(K) * 2 * D;
  void* a_raw = nullptr;
  void* w_raw = nullptr;
  MIXLE_CUDA_TRY(cudaMallocAsync(&a_raw, a_count * sizeof(float), s));
  MIXLE_CUDA_TRY(cudaMallocAsync(&w_raw, w_count * sizeof(float), s));
  float* a = static_cast<float*>(a_raw);
  float* w = static_cast<float*>(w_raw);
  launch_kernel<tf32_weights_kernel>(ceil_div(K, 128), 128, 0, s, part, K, w, constant);
  MIXLE_CUDA_CHECK_LAUNCH();
  launch_kernel<tf32_features_kernel>(ceil_div(c.rows * D, 256), 256, 0, s, part, c.x, c.ld, c.rows, a);
  MIXLE_CUDA_CHECK_LAUNCH();
  // Column-major view: Lᵀ (K × rows, ld K) = Wᵀᵀ · Aᵀ + β·Lᵀ where the row-major buffers W (K × 2D)
  // and A (rows × 2D) are column-major 2D × K and 2D × rows.
  const float one = 1.0f;
  MIXLE_CUBLAS_TRY(cublasSetStream(handle, s));
  MIXLE_CUBLAS_TRY(cublasGemmEx(handle, CUBLAS_OP_T, CUBLAS_OP_N, K, static_cast<int>(c.rows), 2 * D, &one, w,
                                CUDA_R_32F, 2 * D, a, CUDA_R_32F, 2 * D, &beta, c.resp, CUDA_R_32F, K,
                                CUBLAS_COMPUTE_32F_FAST_TF32, CUBLAS_GEMM_DEFAULT));
  MIXLE_CUDA_TRY(cudaFreeAsync(a_raw, s));
  MIXLE_CUDA_TRY(cudaFreeAsync(w_raw, s));
}

}  // namespace

void launch_gaussian_diag_log_density_tf32(cublasHandle_t handle, const PartView<float>& part,
                                           const ChunkArgs<float>& c, cudaStream_t s) {
  if (c.rows == 0) return;
  const int K = c.components;
  void* ck_raw = nullptr;
  MIXLE_CUDA_TRY(cudaMallocAsync(&ck_raw, static_cast<std::size_t>(K) * sizeof(float), s));
  float* ck = static_cast<float*>(ck_raw);
  tf32_product(handle, part, c, 1.0f, ck, s);  // onto log_const and the other parts' terms
  launch_kernel<add_constant_kernel>(log_density_grid(c.rows, K), log_density_block(), 0, s, ck, c.resp, K, c.rows);
  MIXLE_CUDA_CHECK_LAUNCH();
  MIXLE_CUDA_TRY(cudaFreeAsync(ck_raw, s));
}

void launch_gaussian_diag_tf32_product(cublasHandle_t handle, const PartView<float>& part, const ChunkArgs<float>& c,
                                       float* constant, cudaStream_t s) {
  if (c.rows == 0) return;
  tf32_product(handle, part, c, 0.0f, constant, s);
}

}  // namespace mixle::kernels::cuda
