// NCCL in a -DMIXLE_CUDA=SIM build: collectives between simulated devices of one machine.
#pragma once
#include "cuda_runtime.h"
#include "mixle/cudasim/nccl.hpp"
