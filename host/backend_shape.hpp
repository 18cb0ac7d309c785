// How a fit runs for the encoded-data backend it names: the one rule the fit drivers share
// (`fit`, `fit_distributed` and `mixle fit` choose their path by it). Names are case-insensitive
// and the registry's aliases count: local is also in_process and single, component_parallel is
// also model_parallel and mp_model.
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
  /// Any other name: a backend registered by an application (or none; its registry says so).
  registered,
};

BackendShape backend_shape(std::string_view name);

}  // namespace mixle::host
