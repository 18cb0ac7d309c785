// The built-in encoded-data backends, registered once before any backend is looked up, and the
// public registry calls (<mixle/encoded_data.hpp>) that look them up. The fit entry points take
// a backend's path from its registry entry (engine/backend_registry.hpp), not from its name.
#pragma once

#include "engine/backend_registry.hpp"

#include <string>

namespace mixle::host {

/// Registers local, distributed, component_parallel and component_sharded (with their aliases)
/// once per process.
void register_builtin_backends();

/// The registered backend `name` names (built-ins registered first). Throws InvalidInput naming
/// it and listing every registered name when none is.
engine::BackendEntry backend_named(const std::string& name);

}  // namespace mixle::host
