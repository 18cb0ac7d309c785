// Without the CUDA kernels (CPU-only build, or MIXLE_HAVE_CUDA_KERNELS unset): the CUDA entry points exist, report zero
// devices and refuse with NotCompiled.
#include "engine/compute.hpp"

#include <mixle/error.hpp>

#if !MIXLE_HAVE_CUDA_KERNELS
namespace mixle::engine {

std::unique_ptr<Compute> make_cuda_compute(int) { throw NotCompiled("cuda"); }
int cuda_device_count() noexcept { return 0; }

}  // namespace mixle::engine
#endif
