// Device count, error messages and the RAII owners' out-of-line members.
#include "kernels/cuda/runtime.hpp"

#include <mixle/error.hpp>

#include <cstdio>
#include <string>

namespace mixle::kernels::cuda {
namespace {

std::string describe(const char* library, const char* name, const char* text, const char* call, const char* file,
                     int line) {
  int device = -1;
  // Asking for the device must not clobber the error being reported, and may itself fail.
  if (cudaGetDevice(&device) != cudaSuccess) device = -1;
  std::string message = std::string(library) + " error " + name + " (" + text + ") in `" + call + "` on device " +
                        (device >= 0 ? std::to_string(device) : std::string("?")) + " at " + file + ":" +
                        std::to_string(line);
  return message;
}

std::string cuda_message(cudaError_t status, const char* call, const char* file, int line) {
  return describe("CUDA", cudaGetErrorName(status), cudaGetErrorString(status), call, file, line);
}

std::string cublas_message(cublasStatus_t status, const char* call, const char* file, int line) {
  return describe("cuBLAS", cublasGetStatusName(status), cublasGetStatusString(status), call, file, line);
}

}  // namespace

void throw_cuda_error(cudaError_t status, const char* call, const char* file, int line) {
  // A failed call also leaves the runtime's last error set; reset it (a sticky error stays) so
  // that a caller who catches this — a failed allocation, say — does not see it again at the
  // next launch check.
  (void)cudaGetLastError();
  if (status == cudaErrorMemoryAllocation) throw MemoryError(cuda_message(status, call, file, line));
  throw DeviceError(cuda_message(status, call, file, line));
}

void throw_cublas_error(cublasStatus_t status, const char* call, const char* file, int line) {
  throw DeviceError(cublas_message(status, call, file, line));
}

void report_cuda_error(cudaError_t status, const char* call, const char* file, int line) noexcept {
  try {
    std::fprintf(stderr, "mixle: %s (ignored in a destructor)\n", cuda_message(status, call, file, line).c_str());
  } catch (...) {}
}

void report_cublas_error(cublasStatus_t status, const char* call, const char* file, int line) noexcept {
  try {
    std::fprintf(stderr, "mixle: %s (ignored in a destructor)\n", cublas_message(status, call, file, line).c_str());
  } catch (...) {}
}

int device_count() {
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status == cudaErrorNoDevice || status == cudaErrorInsufficientDriver) {
    (void)cudaGetLastError();  // clear the sticky-free error so later calls start clean
    return 0;
  }
  MIXLE_CUDA_TRY(status);
  return count;
}

DeviceGuard::DeviceGuard(int device) {
  MIXLE_CUDA_TRY(cudaGetDevice(&previous_));
  MIXLE_CUDA_TRY(cudaSetDevice(device));
}

DeviceGuard::~DeviceGuard() {
  if (previous_ >= 0) MIXLE_CUDA_TRY_NO_THROW(cudaSetDevice(previous_));
}

Stream::Stream() { MIXLE_CUDA_TRY(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking)); }
Stream::~Stream() {
  if (stream_) MIXLE_CUDA_TRY_NO_THROW(cudaStreamDestroy(stream_));
}
Stream& Stream::operator=(Stream&& other) noexcept {
  if (this != &other) {
    if (stream_) MIXLE_CUDA_TRY_NO_THROW(cudaStreamDestroy(stream_));
    stream_ = std::exchange(other.stream_, nullptr);
  }
  return *this;
}
void Stream::synchronize() const { MIXLE_CUDA_TRY(cudaStreamSynchronize(stream_)); }

Event::Event(bool timing) {
  MIXLE_CUDA_TRY(cudaEventCreateWithFlags(&event_, timing ? cudaEventDefault : cudaEventDisableTiming));
}
Event::~Event() {
  if (event_) MIXLE_CUDA_TRY_NO_THROW(cudaEventDestroy(event_));
}
Event& Event::operator=(Event&& other) noexcept {
  if (this != &other) {
    if (event_) MIXLE_CUDA_TRY_NO_THROW(cudaEventDestroy(event_));
    event_ = std::exchange(other.event_, nullptr);
  }
  return *this;
}
void Event::record(cudaStream_t stream) const { MIXLE_CUDA_TRY(cudaEventRecord(event_, stream)); }
void Event::synchronize() const { MIXLE_CUDA_TRY(cudaEventSynchronize(event_)); }

CublasHandle::CublasHandle() { MIXLE_CUBLAS_TRY(cublasCreate(&handle_)); }
CublasHandle::~CublasHandle() {
  if (handle_) MIXLE_CUBLAS_TRY_NO_THROW(cublasDestroy(handle_));
}
CublasHandle& CublasHandle::operator=(CublasHandle&& other) noexcept {
  if (this != &other) {
    if (handle_) MIXLE_CUBLAS_TRY_NO_THROW(cublasDestroy(handle_));
    handle_ = std::exchange(other.handle_, nullptr);
  }
  return *this;
}

}  // namespace mixle::kernels::cuda
