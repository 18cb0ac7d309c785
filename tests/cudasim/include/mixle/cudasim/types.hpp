// The CUDA simulator's view of the CUDA runtime's types: execution-space keywords, dim3, the error
// and flag enums, cudaDeviceProp and the opaque handles — what host and kernel sources include
// through <cuda_runtime_api.h> / <cuda_runtime.h> in a -DMIXLE_CUDA=SIM build. Only the part of
// the API mixle uses (and a little around it) exists; anything else fails to compile, which is
// the point: a new call must be simulated before it can be tested.
//
// The numeric values of the enumerators are CUDA's, so an error printed by number means the same
// thing on a GPU and in the simulator.
#pragma once

#include <cstddef>
#include <cstdint>

// ---- execution-space keywords --------------------------------------------------------------
// Kernels and device functions are ordinary host functions. Block-shared variables have static
// storage: the simulator runs one block at a time (under its global lock), so static storage is
// per block in effect. They are placed in one section of the binary, which the simulator
// overwrites with a garbage pattern (0xff bytes: NaN, −1) before every block, so a read of shared
// memory that no thread of the block wrote — a missing __syncthreads — sees garbage, as on a GPU.
// GCC ignores a section attribute inside a function template (GCC bug 70435), so a template
// kernel's shared variables are ordinary statics that keep the previous block's values (there a
// missing barrier shows through the schedules, and AddressSanitizer guards the arrays' ends).
// (__noinline__ is left alone: libstdc++ uses it as an attribute name.)
#define __host__
#define __device__
#define __global__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __align__(n) __attribute__((aligned(n)))
#define __shared__ static __attribute__((section("mixle_sim_shared"), aligned(16)))
#define __constant__
#define __managed__

// ---- vector types --------------------------------------------------------------------------
struct uint3 {
  unsigned int x, y, z;
};
struct dim3 {
  unsigned int x, y, z;
  constexpr dim3(unsigned int vx = 1, unsigned int vy = 1, unsigned int vz = 1) : x(vx), y(vy), z(vz) {}
  constexpr dim3(uint3 v) : x(v.x), y(v.y), z(v.z) {}
  constexpr operator uint3() const { return uint3{x, y, z}; }
};
struct __align__(8) int2 {
  int x, y;
};
struct __align__(16) int4 {
  int x, y, z, w;
};
struct __align__(8) uint2 {
  unsigned int x, y;
};
struct __align__(16) uint4 {
  unsigned int x, y, z, w;
};
struct __align__(8) float2 {
  float x, y;
};
struct __align__(16) float4 {
  float x, y, z, w;
};
struct __align__(16) double2 {
  double x, y;
};
inline int2 make_int2(int x, int y) { return {x, y}; }
inline int4 make_int4(int x, int y, int z, int w) { return {x, y, z, w}; }
inline uint2 make_uint2(unsigned x, unsigned y) { return {x, y}; }
inline uint3 make_uint3(unsigned x, unsigned y, unsigned z) { return {x, y, z}; }
inline uint4 make_uint4(unsigned x, unsigned y, unsigned z, unsigned w) { return {x, y, z, w}; }
inline float2 make_float2(float x, float y) { return {x, y}; }
inline float4 make_float4(float x, float y, float z, float w) { return {x, y, z, w}; }
inline double2 make_double2(double x, double y) { return {x, y}; }

// ---- errors and flags ----------------------------------------------------------------------
enum cudaError {
  cudaSuccess = 0,
  cudaErrorInvalidValue = 1,
  cudaErrorMemoryAllocation = 2,
  cudaErrorInitializationError = 3,
  cudaErrorInvalidConfiguration = 9,
  cudaErrorInvalidDevicePointer = 17,
  cudaErrorInvalidMemcpyDirection = 21,
  cudaErrorInsufficientDriver = 35,
  cudaErrorNoDevice = 100,
  cudaErrorInvalidDevice = 101,
  cudaErrorInvalidResourceHandle = 400,
  cudaErrorNotReady = 600,
  cudaErrorIllegalAddress = 700,
  cudaErrorLaunchOutOfResources = 701,
  cudaErrorAssert = 710,
  cudaErrorHostMemoryAlreadyRegistered = 712,
  cudaErrorHostMemoryNotRegistered = 713,
  cudaErrorLaunchFailure = 719,
  cudaErrorNotSupported = 801,
  cudaErrorUnknown = 999,
};
typedef enum cudaError cudaError_t;

enum cudaMemcpyKind {
  cudaMemcpyHostToHost = 0,
  cudaMemcpyHostToDevice = 1,
  cudaMemcpyDeviceToHost = 2,
  cudaMemcpyDeviceToDevice = 3,
  cudaMemcpyDefault = 4,
};

constexpr unsigned int cudaStreamDefault = 0x0;
constexpr unsigned int cudaStreamNonBlocking = 0x1;
constexpr unsigned int cudaEventDefault = 0x0;
constexpr unsigned int cudaEventBlockingSync = 0x1;
constexpr unsigned int cudaEventDisableTiming = 0x2;
constexpr unsigned int cudaHostAllocDefault = 0x0;
constexpr unsigned int cudaHostRegisterDefault = 0x0;

// ---- handles -------------------------------------------------------------------------------
struct CUstream_st;
struct CUevent_st;
typedef struct CUstream_st* cudaStream_t;
typedef struct CUevent_st* cudaEvent_t;
typedef void (*cudaHostFn_t)(void* user_data);
/// The legacy default stream (also `0`) and the per-thread default stream, as in CUDA.
#define cudaStreamLegacy ((cudaStream_t)0x1)
#define cudaStreamPerThread ((cudaStream_t)0x2)

/// The fields of cudaDeviceProp that mixle reads (and a few that describe the simulated device).
struct cudaDeviceProp {
  char name[256];
  std::size_t totalGlobalMem;
  std::size_t sharedMemPerBlock;
  int regsPerBlock;
  int warpSize;
  int maxThreadsPerBlock;
  int maxThreadsDim[3];
  int maxGridSize[3];
  int major;
  int minor;
  int multiProcessorCount;
  int pciBusID;
  int pciDeviceID;
  int pciDomainID;
  int unifiedAddressing;
};
