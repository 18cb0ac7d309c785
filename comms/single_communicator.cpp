// The `single` communicator: world size 1. Reductions and broadcasts leave the buffer as it is;
// all-gather copies. Always built, so a one-process run takes the same code path as a group.
#include "comms/builtin.hpp"

#include <mixle/error.hpp>

#include <cstring>

#if MIXLE_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

namespace mixle::comms::detail {
namespace {

class SingleCommunicator final : public Communicator {
 public:
  explicit SingleCommunicator(std::chrono::milliseconds timeout) : Communicator(0, 1, timeout) {}
  std::string_view type() const noexcept override { return "single"; }
  MemorySpace memory_space() const noexcept override { return MemorySpace::host; }
  bool accepts(MemorySpace) const noexcept override { return true; }  // size 1: nothing moves

 protected:
  // Every color forms a group of one: this rank.
  std::unique_ptr<Communicator> split_impl(const SplitGroup&) override {
    return std::make_unique<SingleCommunicator>(timeout());
  }
  void all_reduce_impl(void*, std::size_t, DataType, ReduceOp, MemorySpace) override {}
  void broadcast_impl(void*, std::size_t, int, MemorySpace) override {}
  void all_gather_impl(const void* send, std::size_t bytes, void* recv, MemorySpace space) override {
    if (send == recv) return;
    if (space == MemorySpace::host) {
      std::memmove(recv, send, bytes);
      return;
    }
#if MIXLE_HAVE_CUDA
    if (cudaMemcpy(recv, send, bytes, cudaMemcpyDeviceToDevice) != cudaSuccess)
      throw DeviceError("single communicator: cudaMemcpy of " + std::to_string(bytes) +
                        " bytes (device all_gather) failed");
#else
    throw NotCompiled("cuda");
#endif
  }
  void barrier_impl() override {}
};

}  // namespace

CommType single_comm_type() {
  return {.name = "single",
          .summary = "one process: every collective is a copy (always built)",
          .built = true,
          .single_process = true,
          .make = [](CommOptions o) -> std::unique_ptr<Communicator> {
            return std::make_unique<SingleCommunicator>(o.timeout);
          }};
}

}  // namespace mixle::comms::detail
