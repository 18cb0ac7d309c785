// The cuBLAS calls mixle makes, simulated: handles, streams, math modes, and GEMM (cublasGemmEx,
// cublasSgemm, cublasDgemm) computed on the CPU, queued on the handle's stream like a kernel.
//
// Numerics. FP32 GEMMs accumulate each C entry in float, one fused multiply-add per term in
// index order. Under CUBLAS_COMPUTE_32F_FAST_TF32 (or CUBLAS_TF32_TENSOR_OP_MATH) the A and B
// operands are first rounded to TF32 — 10 explicit mantissa bits, round to nearest with ties
// away from zero, as the cvt.rna.tf32.f32 instruction does — so the operand error the tensor
// cores introduce (≈ 2⁻¹¹ relative per operand) is present in the simulator too; products of two
// TF32 values are exact in float. What cuBLAS really does beyond that (its summation order, split
// accumulators, which kernel it picks for which shape) is not modelled, so results agree with a
// GPU within the TF32 error bound, not bit for bit.
#pragma once

#include "mixle/cudasim/runtime.hpp"
#include "mixle/cudasim/tf32.hpp"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <unordered_map>

typedef enum {
  CUBLAS_STATUS_SUCCESS = 0,
  CUBLAS_STATUS_NOT_INITIALIZED = 1,
  CUBLAS_STATUS_ALLOC_FAILED = 3,
  CUBLAS_STATUS_INVALID_VALUE = 7,
  CUBLAS_STATUS_ARCH_MISMATCH = 8,
  CUBLAS_STATUS_MAPPING_ERROR = 11,
  CUBLAS_STATUS_EXECUTION_FAILED = 13,
  CUBLAS_STATUS_INTERNAL_ERROR = 14,
  CUBLAS_STATUS_NOT_SUPPORTED = 15,
} cublasStatus_t;

typedef enum { CUBLAS_OP_N = 0, CUBLAS_OP_T = 1, CUBLAS_OP_C = 2 } cublasOperation_t;

typedef enum {
  CUBLAS_DEFAULT_MATH = 0,
  CUBLAS_PEDANTIC_MATH = 2,
  CUBLAS_TF32_TENSOR_OP_MATH = 3,
} cublasMath_t;

typedef enum {
  CUBLAS_COMPUTE_32F = 68,
  CUBLAS_COMPUTE_32F_PEDANTIC = 69,
  CUBLAS_COMPUTE_32F_FAST_TF32 = 77,
  CUBLAS_COMPUTE_64F = 70,
  CUBLAS_COMPUTE_64F_PEDANTIC = 71,
} cublasComputeType_t;

typedef enum { CUBLAS_GEMM_DEFAULT = -1 } cublasGemmAlgo_t;

typedef enum { CUDA_R_32F = 0, CUDA_R_64F = 1 } cudaDataType_t;
typedef cudaDataType_t cudaDataType;

struct cublasContext {
  int device = 0;
  cudaStream_t stream = nullptr;
  cublasMath_t math = CUBLAS_DEFAULT_MATH;
};
typedef struct cublasContext* cublasHandle_t;

namespace mixle::cudasim {

inline std::unordered_map<const void*, std::unique_ptr<cublasContext>>& cublas_handles() {
  static auto* handles = new std::unordered_map<const void*, std::unique_ptr<cublasContext>>();
  return *handles;
}

template <class T>
struct GemmArgs {
  cublasOperation_t ta, tb;
  int m, n, k;
  T alpha, beta;
  const T* a;
  int lda;
  const T* b;
  int ldb;
  T* c;
  int ldc;
  bool tf32;
};

template <class T>
void gemm_on_host(const GemmArgs<T>& g) {
  for (int j = 0; j < g.n; ++j)
    for (int i = 0; i < g.m; ++i) {
      T acc = T(0);
      for (int p = 0; p < g.k; ++p) {
        T x = g.ta == CUBLAS_OP_N ? g.a[i + static_cast<std::int64_t>(p) * g.lda]
                                  : g.a[p + static_cast<std::int64_t>(i) * g.lda];
        T y = g.tb == CUBLAS_OP_N ? g.b[p + static_cast<std::int64_t>(j) * g.ldb]
                                  : g.b[j + static_cast<std::int64_t>(p) * g.ldb];
        if constexpr (std::is_same_v<T, float>)
          if (g.tf32) x = round_to_tf32(x), y = round_to_tf32(y);
        acc = std::fma(x, y, acc);
      }
      T& out = g.c[i + static_cast<std::int64_t>(j) * g.ldc];
      out = g.beta == T(0) ? g.alpha * acc : g.alpha * acc + g.beta * out;
    }
}

/// Validates and queues a GEMM on the handle's stream.
template <class T>
cublasStatus_t queue_gemm(const char* call, cublasHandle_t handle, const GemmArgs<T>& g) {
  auto lock = lock_sim();
  Simulator& s = sim();
  auto& handles = cublas_handles();
  if (!handle || !handles.count(handle)) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (g.m < 0 || g.n < 0 || g.k < 0) return CUBLAS_STATUS_INVALID_VALUE;
  if ((g.ta != CUBLAS_OP_N && g.ta != CUBLAS_OP_T) || (g.tb != CUBLAS_OP_N && g.tb != CUBLAS_OP_T))
    return CUBLAS_STATUS_INVALID_VALUE;
  const int a_rows = g.ta == CUBLAS_OP_N ? g.m : g.k, a_cols = g.ta == CUBLAS_OP_N ? g.k : g.m;
  const int b_rows = g.tb == CUBLAS_OP_N ? g.k : g.n, b_cols = g.tb == CUBLAS_OP_N ? g.n : g.k;
  if (g.lda < std::max(1, a_rows) || g.ldb < std::max(1, b_rows) || g.ldc < std::max(1, g.m))
    return CUBLAS_STATUS_INVALID_VALUE;
  if (g.m == 0 || g.n == 0) return CUBLAS_STATUS_SUCCESS;
  auto st = s.stream(handle->stream, handle->device);
  if (!st) return CUBLAS_STATUS_INVALID_VALUE;
  if (s.devices[static_cast<std::size_t>(st->device)].sticky != cudaSuccess) return CUBLAS_STATUS_EXECUTION_FAILED;
  auto extent = [](int rows, int cols, int ld) {
    return rows == 0 || cols == 0
               ? std::size_t{0}
               : (static_cast<std::size_t>(cols - 1) * static_cast<std::size_t>(ld) + static_cast<std::size_t>(rows)) *
                     sizeof(T);
  };
  const struct {
    const char* name;
    const void* p;
    std::size_t bytes;
  } operands[] = {{"A", g.a, extent(a_rows, a_cols, g.lda)},
                  {"B", g.b, extent(b_rows, b_cols, g.ldb)},
                  {"C", g.c, extent(g.m, g.n, g.ldc)}};
  for (const auto& o : operands) {
    if (o.bytes == 0) continue;
    const Allocation* a = s.find(o.p, o.bytes);
    if (!a || a->device != st->device) {
      s.fault(st->device, cudaErrorIllegalAddress,
              std::string(call) + ": operand " + o.name + " (" + std::to_string(o.bytes) + " bytes) is " +
                  s.describe(o.p) + (s.find(o.p) ? " and the matrix runs past its end" : ""));
      return CUBLAS_STATUS_EXECUTION_FAILED;
    }
  }
  Op op;
  op.what = call;
  op.run = [g] {
    gemm_on_host(g);
    ++sim().counters.gemms;
    return OpStatus::done;
  };
  s.enqueue(st, std::move(op));
  return CUBLAS_STATUS_SUCCESS;
}

}  // namespace mixle::cudasim

inline const char* cublasGetStatusName(cublasStatus_t s) {
  switch (s) {
    case CUBLAS_STATUS_SUCCESS: return "CUBLAS_STATUS_SUCCESS";
    case CUBLAS_STATUS_NOT_INITIALIZED: return "CUBLAS_STATUS_NOT_INITIALIZED";
    case CUBLAS_STATUS_ALLOC_FAILED: return "CUBLAS_STATUS_ALLOC_FAILED";
    case CUBLAS_STATUS_INVALID_VALUE: return "CUBLAS_STATUS_INVALID_VALUE";
    case CUBLAS_STATUS_ARCH_MISMATCH: return "CUBLAS_STATUS_ARCH_MISMATCH";
    case CUBLAS_STATUS_MAPPING_ERROR: return "CUBLAS_STATUS_MAPPING_ERROR";
    case CUBLAS_STATUS_EXECUTION_FAILED: return "CUBLAS_STATUS_EXECUTION_FAILED";
    case CUBLAS_STATUS_INTERNAL_ERROR: return "CUBLAS_STATUS_INTERNAL_ERROR";
    case CUBLAS_STATUS_NOT_SUPPORTED: return "CUBLAS_STATUS_NOT_SUPPORTED";
  }
  return "CUBLAS_STATUS_UNKNOWN";
}

inline const char* cublasGetStatusString(cublasStatus_t s) {
  switch (s) {
    case CUBLAS_STATUS_SUCCESS: return "success";
    case CUBLAS_STATUS_NOT_INITIALIZED: return "the library was not initialized";
    case CUBLAS_STATUS_ALLOC_FAILED: return "the resource allocation failed";
    case CUBLAS_STATUS_INVALID_VALUE: return "an invalid numeric value was used as an argument";
    case CUBLAS_STATUS_ARCH_MISMATCH: return "an absent device architectural feature is required";
    case CUBLAS_STATUS_MAPPING_ERROR: return "an access to GPU memory space failed";
    case CUBLAS_STATUS_EXECUTION_FAILED: return "the GPU program failed to execute";
    case CUBLAS_STATUS_INTERNAL_ERROR: return "an internal operation failed";
    case CUBLAS_STATUS_NOT_SUPPORTED: return "the functionality requested is not supported";
  }
  return "unknown error";
}

inline cublasStatus_t cublasCreate(cublasHandle_t* handle) {
  using namespace mixle::cudasim;
  auto lock = lock_sim();
  *handle = nullptr;
  if (current_device_ok(sim()) != cudaSuccess) return CUBLAS_STATUS_NOT_INITIALIZED;
  auto h = std::make_unique<cublasContext>();
  h->device = t_current_device;
  *handle = h.get();
  cublas_handles()[h.get()] = std::move(h);
  return CUBLAS_STATUS_SUCCESS;
}

inline cublasStatus_t cublasDestroy(cublasHandle_t handle) {
  using namespace mixle::cudasim;
  auto lock = lock_sim();
  return cublas_handles().erase(handle) ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_NOT_INITIALIZED;
}

inline cublasStatus_t cublasSetStream(cublasHandle_t handle, cudaStream_t stream) {
  using namespace mixle::cudasim;
  auto lock = lock_sim();
  if (!handle || !cublas_handles().count(handle)) return CUBLAS_STATUS_NOT_INITIALIZED;
  auto st = sim().stream(stream, handle->device);
  if (!st || st->device != handle->device) return CUBLAS_STATUS_INVALID_VALUE;
  handle->stream = stream;
  return CUBLAS_STATUS_SUCCESS;
}

inline cublasStatus_t cublasGetStream(cublasHandle_t handle, cudaStream_t* stream) {
  using namespace mixle::cudasim;
  auto lock = lock_sim();
  if (!handle || !cublas_handles().count(handle)) return CUBLAS_STATUS_NOT_INITIALIZED;
  *stream = handle->stream;
  return CUBLAS_STATUS_SUCCESS;
}

inline cublasStatus_t cublasSetMathMode(cublasHandle_t handle, cublasMath_t mode) {
  using namespace mixle::cudasim;
  auto lock = lock_sim();
  if (!handle || !cublas_handles().count(handle)) return CUBLAS_STATUS_NOT_INITIALIZED;
  handle->math = mode;
  return CUBLAS_STATUS_SUCCESS;
}

inline cublasStatus_t cublasGemmEx(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m,
                                   int n, int k, const void* alpha, const void* A, cudaDataType_t Atype, int lda,
                                   const void* B, cudaDataType_t Btype, int ldb, const void* beta, void* C,
                                   cudaDataType_t Ctype, int ldc, cublasComputeType_t compute, cublasGemmAlgo_t) {
  using namespace mixle::cudasim;
  if (!alpha || !beta) return CUBLAS_STATUS_INVALID_VALUE;
  {
    auto lock = lock_sim();
    for (const void* scalar : {alpha, beta})
      if (const Allocation* a = sim().find(scalar); a && a->device >= 0) {
        report("cublasGemmEx: alpha and beta must be host pointers (the pointer mode is host)");
        return CUBLAS_STATUS_INVALID_VALUE;
      }
  }
  if (Atype == CUDA_R_32F && Btype == CUDA_R_32F && Ctype == CUDA_R_32F &&
      (compute == CUBLAS_COMPUTE_32F || compute == CUBLAS_COMPUTE_32F_PEDANTIC ||
       compute == CUBLAS_COMPUTE_32F_FAST_TF32)) {
    const bool tf32 = compute == CUBLAS_COMPUTE_32F_FAST_TF32 ||
                      (compute == CUBLAS_COMPUTE_32F && handle && handle->math == CUBLAS_TF32_TENSOR_OP_MATH);
    return queue_gemm<float>(
        "cublasGemmEx", handle,
        {transa, transb, m, n, k, *static_cast<const float*>(alpha), *static_cast<const float*>(beta),
         static_cast<const float*>(A), lda, static_cast<const float*>(B), ldb, static_cast<float*>(C), ldc, tf32});
  }
  if (Atype == CUDA_R_64F && Btype == CUDA_R_64F && Ctype == CUDA_R_64F &&
      (compute == CUBLAS_COMPUTE_64F || compute == CUBLAS_COMPUTE_64F_PEDANTIC))
    return queue_gemm<double>(
        "cublasGemmEx", handle,
        {transa, transb, m, n, k, *static_cast<const double*>(alpha), *static_cast<const double*>(beta),
         static_cast<const double*>(A), lda, static_cast<const double*>(B), ldb, static_cast<double*>(C), ldc, false});
  return CUBLAS_STATUS_NOT_SUPPORTED;
}

inline cublasStatus_t cublasSgemm(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m,
                                  int n, int k, const float* alpha, const float* A, int lda, const float* B, int ldb,
                                  const float* beta, float* C, int ldc) {
  return cublasGemmEx(handle, transa, transb, m, n, k, alpha, A, CUDA_R_32F, lda, B, CUDA_R_32F, ldb, beta, C,
                      CUDA_R_32F, ldc, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
}

inline cublasStatus_t cublasDgemm(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m,
                                  int n, int k, const double* alpha, const double* A, int lda, const double* B, int ldb,
                                  const double* beta, double* C, int ldc) {
  return cublasGemmEx(handle, transa, transb, m, n, k, alpha, A, CUDA_R_64F, lda, B, CUDA_R_64F, ldb, beta, C,
                      CUDA_R_64F, ldc, CUBLAS_COMPUTE_64F, CUBLAS_GEMM_DEFAULT);
}
