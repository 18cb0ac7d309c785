// The CUDA runtime API (host side) in a -DMIXLE_CUDA=SIM build: the mixle CUDA simulator.
#pragma once
#include "mixle/cudasim/runtime.hpp"
