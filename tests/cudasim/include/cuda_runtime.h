// <cuda_runtime.h> in a -DMIXLE_CUDA=SIM build: the runtime API plus what device code uses
// (threadIdx, __syncthreads, warp collectives, atomics, intrinsics) and the simulator's launch.
#pragma once
#include "cuda_runtime_api.h"
#include "mixle/cudasim/device.hpp"
#include "mixle/cudasim/launch.hpp"
