// Which CUDA device a launched process uses (host code, no CUDA headers): one rule shared by the
// nccl communicator and the fit's choice of compute device.
#pragma once

namespace mixle::comms {

/// The device ordinal for a rank whose node-local rank is `local_rank` (LOCAL_RANK) on a process
/// that sees `visible_devices` CUDA devices. A launcher that binds one GPU to each process — SLURM
/// `--gpus-per-task=1`, torchrun with CUDA_VISIBLE_DEVICES set per rank — leaves exactly one
/// visible device whatever LOCAL_RANK is: that device (ordinal 0). Otherwise the processes of a
/// node share the devices and LOCAL_RANK picks one, which must exist.
/// Throws DeviceError when no device is visible, InvalidInput when local_rank is negative or
/// not below the number of visible devices (more ranks on the node than GPUs).
int device_for_local_rank(int local_rank, int visible_devices);

}  // namespace mixle::comms
