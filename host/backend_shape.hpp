// How a fit runs for the encoded-data backend it names: the one rule the fit drivers share
// (`fit_distributed` and `mixle fit` choose their path by it), read from the backend's registry
// entry (host/builtin_backends.hpp) — names are case-insensitive and aliases count.
#pragma once

#include <string_view>

namespace mixle::host {

enum class BackendShape {
  /// One Compute per process over its rows: local, and the names of the data-parallel driver
  /// (distributed, torchrun, mpi) — one process is a world of size 1.
  data_parallel,
  /// component_parallel: the components threaded inside each process.
  component_threads,
  /// component_sharded: the components sharded over threads of one process.
  component_sharded,
  /// A backend registered by an application, or a name nothing is registered under.
  registered,
};

BackendShape backend_shape(std::string_view name);

}  // namespace mixle::host
