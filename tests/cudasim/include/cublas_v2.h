// cuBLAS in a -DMIXLE_CUDA=SIM build: the calls mixle makes, computed on the CPU.
#pragma once
#include "mixle/cudasim/cublas.hpp"
