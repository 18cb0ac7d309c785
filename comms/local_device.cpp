#include "comms/local_device.hpp"

#include <mixle/error.hpp>

#include <string>

namespace mixle::comms {

int device_for_local_rank(int local_rank, int visible_devices) {
  if (visible_devices <= 0)
    throw DeviceError("no CUDA device is visible to this process (local rank " + std::to_string(local_rank) +
                      "); check CUDA_VISIBLE_DEVICES and the launcher's GPU binding");
  if (visible_devices == 1) return 0;
  if (local_rank < 0 || local_rank >= visible_devices)
    throw InvalidInput("local rank " + std::to_string(local_rank) + " has no GPU: this process sees " +
                       std::to_string(visible_devices) +
                       " CUDA devices (cuda:0…cuda:" + std::to_string(visible_devices - 1) +
                       "); start at most one rank per GPU on a node, or bind one GPU per process");
  return local_rank;
}

}  // namespace mixle::comms
