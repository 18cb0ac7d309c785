// `mixle info`: version, build features and devices.
#include "host/cli/command.hpp"
#include "comms/comm_type.hpp"
#include "host/resources_discovery.hpp"

#include <mixle/version.hpp>

#include <cstdio>
#include <iostream>

namespace mixle::host {
namespace {

std::function<int()> setup_info(CLI::App& app) {
  return [] {
    std::cout << "mixle " << MIXLE_VERSION_STRING << "\n"
              << "features: cpu" << (MIXLE_HAVE_CUDA ? (MIXLE_CUDA_SIM ? " cuda (simulated)" : " cuda") : "");
    // The communicators this build has, from the registry (single is always there).
    for (const comms::CommType* b : comms::comm_types())
      if (b->built && !b->single_process)
        std::cout << " " << b->name << (b->device_buffers && MIXLE_CUDA_SIM ? " (simulated)" : "");
    std::cout << "\n";
    for (const comms::CommType* b : comms::comm_types())
      std::printf("comm %s: %s\n", b->name.c_str(), b->summary.c_str());
    const auto memory = usable_memory_bytes();
    std::printf("cpu: %zu usable core(s), %.1f GiB memory\n", affinity_cpu_count(),
                memory ? static_cast<double>(*memory) / (1024.0 * 1024.0 * 1024.0) : 0.0);
    const auto gpus = cuda_devices();
    if (gpus.empty()) std::printf("cuda: no device%s\n", MIXLE_HAVE_CUDA ? "" : " (built without CUDA)");
    if (MIXLE_CUDA_SIM && !gpus.empty())
      std::printf("cuda: simulated on the CPU (a test build: no timing here is a GPU's)\n");
    for (std::size_t i = 0; i < gpus.size(); ++i)
      std::printf("cuda:%zu: %s, %.1f GiB, %lld SMs\n", i, gpus[i].product.c_str(),
                  static_cast<double>(gpus[i].memory_bytes) / (1024.0 * 1024.0 * 1024.0),
                  static_cast<long long>(gpus[i].multiprocessors));
    return 0;
  };
}

}  // namespace
MIXLE_REGISTER_COMMAND("info", "Print the version, build features and devices", setup_info, 90);
}  // namespace mixle::host
