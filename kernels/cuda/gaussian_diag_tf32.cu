// gaussian_diag log-densities with a TF32 tensor-op GEMM — only on the explicit `--precision
// tf32` opt-in, for the passes the fused kernel does not take (score, the component-sharded and
// weighted passes, models it is not eligible for). The expansion about the part's centre
// (tf32_expansion.cuh) makes the part's term one GEMM:
//     L (rows × K) += [y∘y, y] (rows × 2D) · [h; −2hν]ᵀ (2D × K)  +  c_k,  y = x − c,  ν = m − c
// c_k = Σ_d h ν² is added in fp32 afterwards (rounding it to TF32 would cost 2⁻¹¹·|c_k|). The
// GEMM's operands are rounded to TF32 (10-bit mantissa), so each term carries a relative error
// ≈ 2⁻¹⁰ and the expansion cancels when |ν| ≫ σ: the log-density error grows like
// 2⁻¹⁰ · Σ_d |h|(y² + 2|ν y| + ν²) (docs/numerics.md, bound (E)). Statistics stay on the
// shifted fp32 SIMT path; TF32 never touches second moments.
#include "kernels/cuda/tf32_expansion.cuh"

namespace mixle::kernels::cuda {
namespace {

/// One thread per dimension: the part's centre.
__global__ void tf32_centre_kernel(PartView<float> part, int K, float* __restrict__ centre) {
  const int d = static_cast<int>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (d < part.dims) centre[d] = tf32_centre(part, K, d);
}

/// One thread per component: W[k] = [h (D), −2hν (D)] (row-major K × 2D) and c_k.
__global__ void tf32_weights_kernel(PartView<float> part, int K, const float* __restrict__ centre,
                                    float* __restrict__ w, float* __restrict__ c) {
  const int k = static_cast<int>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (k >= K) return;
  const int D = part.dims;
  float* wk = w + static_cast<std::int64_t>(k) * 2 * D;
  double ck = 0.0;
  for (int d = 0; d < D; ++d) {
    const Tf32Weights t = tf32_weights(part, k, d, centre[d]);
    wk[d] = t.sq;
    wk[D + d] = t.lin;
    ck += t.constant;
  }
  c[k] = static_cast<float>(ck);
}

/// A[n] = [y∘y, y], y = x − c (row-major rows × 2D). An infinite y enters as [+inf, 0], so the
/// product gives h·inf = −inf where the expansion would give −inf + inf = NaN: the centred form's
/// (and the CPU's) −inf, an impossible row, unless another x of the row is NaN.
__global__ void tf32_features_kernel(PartView<float> part, const float* __restrict__ x, int ld, std::int64_t rows,
                                     const float* __restrict__ centre, float* __restrict__ a) {
  const std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const int D = part.dims;
  if (i >= rows * D) return;
  const std::int64_t n = i / D;
  const int d = static_cast<int>(i % D);
  const float y = x[n * ld + part.col_begin + d] - centre[d];
  a[n * 2 * D + d] = y * y;
  a[n * 2 * D + D + d] = isinf(y) ? 0.0f : y;
}

__global__ void add_constant_kernel(const float* __restrict__ c, float* __restrict__ logp, int K, std::int64_t rows) {
  const int k = static_cast<int>(blockIdx.y) * kTileComponents + threadIdx.x;
  const std::int64_t n = static_cast<std::int64_t>(blockIdx.x) * kTileRows + threadIdx.y;
  if (k >= K || n >= rows) return;
  logp[n * K + k] += c[k];
}

}  // namespace

namespace {

/// The centre, features, weights and GEMM: L += [y∘y, y]·Wᵀ, c_k into `constant`. The scratch
/// is stream-ordered, O(rows·D + K·D), freed in stream order after the GEMM.
void tf32_product(cublasHandle_t handle, const PartView<float>& part, const ChunkArgs<float>& c, float* constant,
                  cudaStream_t s) {
  const int D = part.dims, K = c.components;
  const std::size_t a_count = static_cast<std::size_t>(c.rows) * 2 * D;
  const std::size_t w_count = static_cast<std::size_t>(K) * 2 * D;
  void* a_raw = nullptr;
  void* w_raw = nullptr;
  MIXLE_CUDA_TRY(cudaMallocAsync(&a_raw, a_count * sizeof(float), s));
  MIXLE_CUDA_TRY(cudaMallocAsync(&w_raw, (w_count + D) * sizeof(float), s));
  float* a = static_cast<float*>(a_raw);
  float* w = static_cast<float*>(w_raw);
  float* centre = w + w_count;
  launch_kernel<tf32_centre_kernel>(ceil_div(D, 128), 128, 0, s, part, K, centre);
  MIXLE_CUDA_CHECK_LAUNCH();
  launch_kernel<tf32_weights_kernel>(ceil_div(K, 128), 128, 0, s, part, K, centre, w, constant);
  MIXLE_CUDA_CHECK_LAUNCH();
  launch_kernel<tf32_features_kernel>(ceil_div(c.rows * D, 256), 256, 0, s, part, c.x, c.ld, c.rows, centre, a);
  MIXLE_CUDA_CHECK_LAUNCH();
  // Column-major view: Lᵀ (K × rows, ld K) += Wᵀᵀ · Aᵀ where the row-major buffers W (K × 2D)
  // and A (rows × 2D) are column-major 2D × K and 2D × rows.
  const float one = 1.0f;
  MIXLE_CUBLAS_TRY(cublasSetStream(handle, s));
  MIXLE_CUBLAS_TRY(cublasGemmEx(handle, CUBLAS_OP_T, CUBLAS_OP_N, K, static_cast<int>(c.rows), 2 * D, &one, w,
                                CUDA_R_32F, 2 * D, a, CUDA_R_32F, 2 * D, &one, c.resp, CUDA_R_32F, K,
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
  tf32_product(handle, part, c, ck, s);  // onto log_const and the other parts' terms
  launch_kernel<add_constant_kernel>(log_density_grid(c.rows, K), log_density_block(), 0, s, ck, c.resp, K, c.rows);
  MIXLE_CUDA_CHECK_LAUNCH();
  MIXLE_CUDA_TRY(cudaFreeAsync(ck_raw, s));
}

}  // namespace mixle::kernels::cuda
