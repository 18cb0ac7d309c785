// mixle — finite mixture models by EM on CPUs and GPUs. The one header a host program needs.
// Compiles with any C++20 compiler: no CUDA, no nlohmann, no other third-party headers.
#pragma once

#include <mixle/calibrate.hpp>
#include <mixle/data.hpp>
#include <mixle/distributed.hpp>
#include <mixle/encoded_data.hpp>
#include <mixle/error.hpp>
#include <mixle/estimator.hpp>
#include <mixle/family.hpp>
#include <mixle/fit.hpp>
#include <mixle/model.hpp>
#include <mixle/parallel.hpp>
#include <mixle/partial_fit.hpp>
#include <mixle/plan.hpp>
#include <mixle/version.hpp>
