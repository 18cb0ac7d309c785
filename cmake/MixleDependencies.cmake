# Finds what mixle builds against and sets MIXLE_HAVE_<X> for each optional backend.
# Only Debian packages and the CUDA toolkit under /usr/local/cuda are used (DEVELOPERS.md).
find_package(Threads REQUIRED)
find_package(OpenMP REQUIRED COMPONENTS CXX)
find_package(nlohmann_json 3.10 REQUIRED)
find_package(CLI11 2.1 REQUIRED)
# Boost.Math's digamma and trigamma (header-only) for the gamma family's M-step.
find_package(Boost 1.74 REQUIRED)

# ---- CUDA (optional) -------------------------------------------------------------------------
# MIXLE_CUDA_LIBS is what code using the CUDA runtime and cuBLAS links: the toolkit's libraries,
# or in a SIM build the simulator (tests/cudasim: header-only, on Boost.Context fibers), with
# which every .cu file compiles as C++ with the host compiler — no nvcc, no GPU. MIXLE_NCCL_LIBS
# likewise: NCCL, or the simulator's NCCL (collectives between simulated devices of one machine).
set(MIXLE_HAVE_CUDA OFF)
set(MIXLE_HAVE_NCCL OFF)
set(MIXLE_CUDA_SIM OFF)
set(MIXLE_CUDA_LIBS)
set(MIXLE_NCCL_LIBS)
if(MIXLE_CUDA STREQUAL "SIM")
  find_package(Boost 1.74 REQUIRED COMPONENTS context)
  add_library(mixle_cudasim INTERFACE)
  target_include_directories(mixle_cudasim SYSTEM INTERFACE
    $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/tests/cudasim/include>)
  target_link_libraries(mixle_cudasim INTERFACE Boost::context)
  set(MIXLE_HAVE_CUDA ON)
  set(MIXLE_CUDA_SIM ON)
  set(MIXLE_CUDA_LIBS mixle_cudasim)
  set(MIXLE_HAVE_NCCL ON)
  set(MIXLE_NCCL_LIBS mixle_cudasim)
elseif(NOT MIXLE_CUDA STREQUAL "OFF")
  if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
    set(CMAKE_CUDA_ARCHITECTURES 90)   # H100/H200; must be set before enable_language(CUDA)
  endif()
  if(NOT CMAKE_CUDA_COMPILER AND EXISTS /usr/local/cuda/bin/nvcc)
    set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)
  endif()
  include(CheckLanguage)
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    enable_language(CUDA)
    # CMake < 3.26 knows nvcc's dialect flags only up to C++17; nvcc ≥ 12 accepts -std=c++20.
    if(NOT DEFINED CMAKE_CUDA20_STANDARD_COMPILE_OPTION AND
       CMAKE_CUDA_COMPILER_VERSION VERSION_GREATER_EQUAL 12.0)
      set(CMAKE_CUDA20_STANDARD_COMPILE_OPTION "-std=c++20")
      set(CMAKE_CUDA20_EXTENSION_COMPILE_OPTION "-std=c++20")
    endif()
    set(CMAKE_CUDA_STANDARD 20)
    set(CMAKE_CUDA_STANDARD_REQUIRED ON)
    find_package(CUDAToolkit REQUIRED)
    find_package(CCCL CONFIG QUIET HINTS "${CUDAToolkit_LIBRARY_DIR}/cmake")
    set(MIXLE_HAVE_CUDA ON)
    set(MIXLE_CUDA_LIBS CUDA::cudart CUDA::cublas)
    find_package(NCCL QUIET)
    if(NCCL_FOUND)
      set(MIXLE_HAVE_NCCL ON)
      set(MIXLE_NCCL_LIBS NCCL::nccl)
    endif()
  elseif(MIXLE_CUDA STREQUAL "ON")
    message(FATAL_ERROR "MIXLE_CUDA=ON but no CUDA compiler was found (set CMAKE_CUDA_COMPILER or "
                        "put nvcc on PATH), or configure with -DMIXLE_CUDA=OFF")
  endif()
endif()

# ---- CPU collectives (optional) --------------------------------------------------------------
set(MIXLE_HAVE_GLOO OFF)
if(MIXLE_GLOO)
  find_package(Gloo QUIET)
  if(Gloo_FOUND OR TARGET gloo)
    set(MIXLE_HAVE_GLOO ON)
  endif()
endif()
set(MIXLE_HAVE_MPI OFF)
if(MIXLE_MPI)
  find_package(MPI QUIET COMPONENTS CXX)
  if(MPI_CXX_FOUND)
    set(MIXLE_HAVE_MPI ON)
  endif()
endif()

message(STATUS "mixle: CUDA=${MIXLE_HAVE_CUDA} (simulated: ${MIXLE_CUDA_SIM}) NCCL=${MIXLE_HAVE_NCCL} Gloo=${MIXLE_HAVE_GLOO} "
               "MPI=${MIXLE_HAVE_MPI} native-arch=${MIXLE_NATIVE_ARCH}")
