// The encoded-data backend registry (the reference layer's "register, don't branch"): every
// backend a fit can name — built-in or registered by a host application — is one entry, and the
// fit drivers choose their path from the entry's kind (host/backend_shape.hpp), never from a
// list of names. The public calls (<mixle/encoded_data.hpp>) register the built-ins first
// (host/builtin_backends.cpp) and then use this registry.
#pragma once

#include <mixle/data.hpp>
#include <mixle/encoded_data.hpp>
#include <mixle/fit.hpp>

#include <optional>
#include <string>
#include <vector>

namespace mixle::engine {

/// How a registered backend runs a fit.
enum class BackendKind {
  local,              ///< one process over its rows (local, in_process, single)
  processes,          ///< one rank of a process group per process (distributed, torchrun, mpi)
  component_threads,  ///< components threaded inside the process (component_parallel)
  component_sharded,  ///< components sharded over threads of one process (component_sharded)
  application,        ///< registered by a host application
};

/// A built-in backend's own fit of a Dataset, end to end (missing values included), for the
/// backends whose fit is more than the EM loop over one handle: a process group to join, shards
/// to start. Null: `fit` encodes a handle with the factory and runs the EM loop over it.
using FitDriver = FitResult (*)(const Dataset& data, const FitOptions& options);

struct BackendEntry {
  std::string name;  ///< canonical, lower case
  EncodedDataFactory factory = nullptr;
  BackendKind kind = BackendKind::application;
  FitDriver driver = nullptr;
};

/// Registers `entry` under its name and `aliases` (both lower-cased). A name or alias bound to a
/// different factory is refused (InvalidInput) unless `override`, and then nothing is written;
/// the identical registration again is a no-op.
void register_backend(BackendEntry entry, const std::vector<std::string>& aliases, bool override);
/// The backend registered under `name` or one of its aliases, in any case; nullopt when none is.
std::optional<BackendEntry> find_backend(const std::string& name);
/// Canonical names, sorted.
std::vector<std::string> backend_names();
/// Every registered name and alias, sorted and comma-separated (for messages).
std::string registered_names_text();

}  // namespace mixle::engine
