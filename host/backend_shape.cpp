// The fit drivers' rule for backend names (host/backend_shape.hpp): the registry entry's kind.
#include "host/backend_shape.hpp"

#include "host/builtin_backends.hpp"

#include <string>

namespace mixle::host {

BackendShape backend_shape(std::string_view name) {
  register_builtin_backends();
  const auto entry = engine::find_backend(std::string(name));
  if (!entry) return BackendShape::registered;
  switch (entry->kind) {
    case engine::BackendKind::local:
    case engine::BackendKind::processes: return BackendShape::data_parallel;
    case engine::BackendKind::component_threads: return BackendShape::component_threads;
    case engine::BackendKind::component_sharded: return BackendShape::component_sharded;
    case engine::BackendKind::application: break;
  }
  return BackendShape::registered;
}

}  // namespace mixle::host
