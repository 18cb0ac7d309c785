// The fit drivers' rule for backend names (host/backend_shape.hpp).
#include "host/backend_shape.hpp"

#include <cctype>
#include <string>

namespace mixle::host {

BackendShape backend_shape(std::string_view name) {
  std::string lower(name);
  for (auto& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (const char* plain : {"local", "in_process", "single", "distributed", "torchrun", "mpi"})
    if (lower == plain) return BackendShape::data_parallel;
  for (const char* threads : {"component_parallel", "model_parallel", "mp_model"})
    if (lower == threads) return BackendShape::component_threads;
  if (lower == "component_sharded") return BackendShape::component_sharded;
  return BackendShape::registered;
}

}  // namespace mixle::host
