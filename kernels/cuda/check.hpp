// Check macros for the CUDA runtime and cuBLAS (host code; any C++ compiler with the CUDA
// toolkit's headers). One generator, MIXLE_DEVICE_TRY_IMPL, makes every variant, so all device
// errors read alike: the call text, the library's error name and description, the current
// device and file:line, thrown as mixle::DeviceError (STYLE.md "One check-macro generator").
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

namespace mixle::kernels::cuda {

/// Throws DeviceError describing `status` returned by `call` at file:line.
[[noreturn]] void throw_cuda_error(cudaError_t status, const char* call, const char* file, int line);
[[noreturn]] void throw_cublas_error(cublasStatus_t status, const char* call, const char* file, int line);
/// Destructor variants: print the same description to stderr and continue (never throw).
void report_cuda_error(cudaError_t status, const char* call, const char* file, int line) noexcept;
void report_cublas_error(cublasStatus_t status, const char* call, const char* file, int line) noexcept;

}  // namespace mixle::kernels::cuda

#define MIXLE_DEVICE_TRY_IMPL(status_type, ok, handler, call)                           \
  do {                                                                                  \
    const status_type mixle_device_status_ = (call);                                    \
    if (mixle_device_status_ != (ok))                                                   \
      ::mixle::kernels::cuda::handler(mixle_device_status_, #call, __FILE__, __LINE__); \
  } while (0)

#define MIXLE_CUDA_TRY(call) MIXLE_DEVICE_TRY_IMPL(cudaError_t, cudaSuccess, throw_cuda_error, call)
#define MIXLE_CUDA_TRY_NO_THROW(call) MIXLE_DEVICE_TRY_IMPL(cudaError_t, cudaSuccess, report_cuda_error, call)
#define MIXLE_CUBLAS_TRY(call) MIXLE_DEVICE_TRY_IMPL(cublasStatus_t, CUBLAS_STATUS_SUCCESS, throw_cublas_error, call)
#define MIXLE_CUBLAS_TRY_NO_THROW(call) \
  MIXLE_DEVICE_TRY_IMPL(cublasStatus_t, CUBLAS_STATUS_SUCCESS, report_cublas_error, call)

/// After every <<<>>>: catches launch-configuration errors at once. With MIXLE_CUDA_SYNC_CHECK
/// (cmake -DMIXLE_CUDA_SYNC_CHECK=ON) it also synchronises, so an asynchronous fault is
/// reported at the launch that caused it instead of at a later call.
#if defined(MIXLE_CUDA_SYNC_CHECK) && MIXLE_CUDA_SYNC_CHECK
#define MIXLE_CUDA_CHECK_LAUNCH()            \
  do {                                       \
    MIXLE_CUDA_TRY(cudaPeekAtLastError());   \
    MIXLE_CUDA_TRY(cudaDeviceSynchronize()); \
  } while (0)
#else
#define MIXLE_CUDA_CHECK_LAUNCH() MIXLE_CUDA_TRY(cudaPeekAtLastError())
#endif
