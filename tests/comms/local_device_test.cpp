// The one rule for which CUDA device a launched process uses (comms/local_device.hpp).
#include "comms/local_device.hpp"

#include <mixle/error.hpp>

#include <gtest/gtest.h>

#include <string>

namespace mixle::comms {
namespace {

TEST(LocalDevice, OneVisibleDeviceServesEveryLocalRank) {
  // SLURM --gpus-per-task=1 or torchrun with CUDA_VISIBLE_DEVICES per rank: each process sees
  // one GPU, whatever its LOCAL_RANK.
  for (int local_rank : {0, 1, 3, 7}) EXPECT_EQ(device_for_local_rank(local_rank, 1), 0);
}

TEST(LocalDevice, SharedDevicesArePickedByLocalRank) {
  for (int local_rank = 0; local_rank < 4; ++local_rank) EXPECT_EQ(device_for_local_rank(local_rank, 4), local_rank);
}

TEST(LocalDevice, MoreRanksThanDevicesIsAnErrorNamingBoth) {
  try {
    device_for_local_rank(2, 2);
    FAIL() << "local rank 2 of 2 devices must be refused";
  } catch (const InvalidInput& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("local rank 2"), std::string::npos) << what;
    EXPECT_NE(what.find("2 CUDA devices"), std::string::npos) << what;
  }
  EXPECT_THROW(device_for_local_rank(-1, 2), InvalidInput);
  EXPECT_THROW(device_for_local_rank(0, 0), DeviceError);
}

}  // namespace
}  // namespace mixle::comms
