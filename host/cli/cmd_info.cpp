// `mixle info`: version, build features and devices.
#include "host/cli/command.hpp"

#include <mixle/version.hpp>

#include <iostream>

namespace mixle::host {
namespace {

std::function<int()> setup_info(CLI::App& app) {
  return [] {
    std::cout << "mixle " << MIXLE_VERSION_STRING << "\n"
              << "features: cpu"
              << (MIXLE_HAVE_CUDA ? " cuda" : "") << (MIXLE_HAVE_NCCL ? " nccl" : "")
              << (MIXLE_HAVE_GLOO ? " gloo" : "") << (MIXLE_HAVE_MPI ? " mpi" : "") << "\n";
    return 0;
  };
}

}  // namespace
MIXLE_REGISTER_COMMAND("info", "Print the version, build features and devices", setup_info, 90);
}  // namespace mixle::host
