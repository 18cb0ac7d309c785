// MIXLE_HD marks math shared by the CPU and CUDA kernels: written once, compiled by g++ and
// nvcc, so the CPU tests cover it (docs/design.md §11).
#pragma once

#if defined(__CUDACC__)
#define MIXLE_HD __host__ __device__ __forceinline__
#else
#define MIXLE_HD inline
#endif
