// Where an in-process component-sharded fit puts its shards: the automatic shard count and each
// shard's device, as functions of the device option and the host's CUDA device count (so a
// machine without GPUs tests the multi-GPU rule too).
#include "host/component_sharded_fit.hpp"

#include <gtest/gtest.h>

namespace mixle::host {
namespace {

TEST(ShardPlacement, OneShardPerGpuWhenTheDeviceSpreadsOverThem) {
  for (const char* device : {"cuda", "auto"}) {
    SCOPED_TRACE(device);
    EXPECT_EQ(default_shards(device, 0), 2);
    EXPECT_EQ(default_shards(device, 1), 2);
    EXPECT_EQ(default_shards(device, 2), 2);
    EXPECT_EQ(default_shards(device, 3), 3);
    EXPECT_EQ(default_shards(device, 8), 8);
  }
  for (const char* device : {"cpu", "cuda:1"}) {
    SCOPED_TRACE(device);
    EXPECT_EQ(default_shards(device, 0), 2);
    EXPECT_EQ(default_shards(device, 4), 2);
  }
}

TEST(ShardPlacement, ShardsGoRoundTheGpusOrStayOnTheNamedDevice) {
  EXPECT_EQ(shard_device("cuda", 0, 3), "cuda:0");
  EXPECT_EQ(shard_device("cuda", 4, 3), "cuda:1");
  EXPECT_EQ(shard_device("cuda", 3, 1), "cuda:0");
  EXPECT_EQ(shard_device("auto", 5, 2), "cuda:1");
  EXPECT_EQ(shard_device("auto", 1, 0), "auto");
  EXPECT_EQ(shard_device("cuda", 1, 0), "cuda");  // refused later, by the compute, without a GPU
  EXPECT_EQ(shard_device("cpu", 3, 4), "cpu");
  EXPECT_EQ(shard_device("cuda:1", 3, 4), "cuda:1");
}

// The shards share the CPU threads asked for, or every core for 0; none gets fewer than one.
TEST(ShardPlacement, ShardsShareTheThreads) {
  EXPECT_EQ(shard_threads(0, 8, 2), 4);
  EXPECT_EQ(shard_threads(0, 8, 3), 2);
  EXPECT_EQ(shard_threads(6, 64, 2), 3);
  EXPECT_EQ(shard_threads(1, 64, 2), 1);
  EXPECT_EQ(shard_threads(0, 1, 4), 1);
}

}  // namespace
}  // namespace mixle::host
