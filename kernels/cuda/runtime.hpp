// RAII owners of CUDA objects (host code; any C++ compiler with the CUDA toolkit's headers).
// All are move-only; destructors never throw (errors there are printed, see check.hpp).
// Work is always issued on an explicit Stream, never on the legacy default stream.
#pragma once

#include "kernels/cuda/check.hpp"

#include <cstddef>
#include <utility>

namespace mixle::kernels::cuda {

/// Number of CUDA devices; 0 when there is no device or no (sufficient) driver — a normal
/// state, not an error. Other runtime failures throw DeviceError.
int device_count();

/// Makes `device` current for the scope and restores the previous one on exit.
class DeviceGuard {
 public:
  explicit DeviceGuard(int device);
  ~DeviceGuard();
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int previous_ = -1;
};

/// `count` elements of T in device memory (uninitialised). reserve() grows, never shrinks.
template <class T>
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(std::size_t count) { reserve(count); }
  ~DeviceBuffer() { release(); }
  DeviceBuffer(DeviceBuffer&& other) noexcept
      : data_(std::exchange(other.data_, nullptr)), count_(std::exchange(other.count_, 0)) {}
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept {
    if (this != &other) {
      release();
      data_ = std::exchange(other.data_, nullptr);
      count_ = std::exchange(other.count_, 0);
    }
    return *this;
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  /// Ensures room for `count` elements; contents are lost when it reallocates.
  void reserve(std::size_t count) {
    if (count <= count_) return;
    release();
    void* p = nullptr;
    MIXLE_CUDA_TRY(cudaMalloc(&p, count * sizeof(T)));
    data_ = static_cast<T*>(p);
    count_ = count;
  }
  T* data() noexcept { return data_; }
  const T* data() const noexcept { return data_; }
  std::size_t size() const noexcept { return count_; }

 private:
  void release() noexcept {
    if (data_) MIXLE_CUDA_TRY_NO_THROW(cudaFree(data_));
    data_ = nullptr;
    count_ = 0;
  }
  T* data_ = nullptr;
  std::size_t count_ = 0;
};

/// `count` elements of T in page-locked host memory (so copies run asynchronously, overlapping
/// kernels). reserve() grows, never shrinks.
template <class T>
class PinnedBuffer {
 public:
  PinnedBuffer() = default;
  ~PinnedBuffer() { release(); }
  PinnedBuffer(PinnedBuffer&& other) noexcept
      : data_(std::exchange(other.data_, nullptr)), count_(std::exchange(other.count_, 0)) {}
  PinnedBuffer& operator=(PinnedBuffer&& other) noexcept {
    if (this != &other) {
      release();
      data_ = std::exchange(other.data_, nullptr);
      count_ = std::exchange(other.count_, 0);
    }
    return *this;
  }
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;

  void reserve(std::size_t count) {
    if (count <= count_) return;
    release();
    void* p = nullptr;
    MIXLE_CUDA_TRY(cudaMallocHost(&p, count * sizeof(T)));
    data_ = static_cast<T*>(p);
    count_ = count;
  }
  T* data() noexcept { return data_; }
  std::size_t size() const noexcept { return count_; }

 private:
  void release() noexcept {
    if (data_) MIXLE_CUDA_TRY_NO_THROW(cudaFreeHost(data_));
    data_ = nullptr;
    count_ = 0;
  }
  T* data_ = nullptr;
  std::size_t count_ = 0;
};

/// A non-blocking stream (does not synchronise with the legacy default stream).
class Stream {
 public:
  Stream();
  ~Stream();
  Stream(Stream&& other) noexcept : stream_(std::exchange(other.stream_, nullptr)) {}
  Stream& operator=(Stream&& other) noexcept;
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  cudaStream_t get() const noexcept { return stream_; }
  void synchronize() const;

 private:
  cudaStream_t stream_ = nullptr;
};

/// An event; timing is disabled unless asked for (cheaper to record and wait on).
class Event {
 public:
  explicit Event(bool timing = false);
  ~Event();
  Event(Event&& other) noexcept : event_(std::exchange(other.event_, nullptr)) {}
  Event& operator=(Event&& other) noexcept;
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  cudaEvent_t get() const noexcept { return event_; }
  void record(cudaStream_t stream) const;
  void synchronize() const;

 private:
  cudaEvent_t event_ = nullptr;
};

/// A cuBLAS handle bound to the current device.
class CublasHandle {
 public:
  CublasHandle();
  ~CublasHandle();
  CublasHandle(CublasHandle&& other) noexcept : handle_(std::exchange(other.handle_, nullptr)) {}
  CublasHandle& operator=(CublasHandle&& other) noexcept;
  CublasHandle(const CublasHandle&) = delete;
  CublasHandle& operator=(const CublasHandle&) = delete;
  cublasHandle_t get() const noexcept { return handle_; }

 private:
  cublasHandle_t handle_ = nullptr;
};

}  // namespace mixle::kernels::cuda
