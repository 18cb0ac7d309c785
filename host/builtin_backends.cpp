// The built-in encoded-data backends and the public registry calls (host/builtin_backends.hpp).
// The registry itself is the engine's; the calls live here because two built-ins — the
// process group and the in-process shards — are host code.
#include "host/builtin_backends.hpp"

#include "engine/component_parallel.hpp"
#include "engine/encoded_data.hpp"
#include "engine/local_handle.hpp"
#include "host/component_sharded_fit.hpp"
#include "host/distributed_backend.hpp"

#include <mixle/encoded_data.hpp>
#include <mixle/error.hpp>

#include <mutex>

namespace mixle::host {

void register_builtin_backends() {
  static std::once_flag once;
  std::call_once(once, [] {
    using engine::BackendKind;
    engine::register_backend({"local", &engine::LocalEncodedData::create, BackendKind::local, nullptr},
                             {"in_process", "single"}, false);
    engine::register_backend({"distributed", &distributed_encoded_data, BackendKind::processes, &fit_rank_rows},
                             {"torchrun", "mpi"}, false);
    engine::register_backend(
        {"component_parallel", &engine::ComponentParallelEncodedData::create, BackendKind::component_threads, nullptr},
        {"model_parallel", "mp_model"}, false);
    engine::register_backend({"component_sharded", &component_sharded_encoded_data, BackendKind::component_sharded,
                              &fit_component_sharded_rows},
                             {}, false);
  });
}

engine::BackendEntry backend_named(const std::string& name) {
  register_builtin_backends();
  if (auto entry = engine::find_backend(name)) return *entry;
  throw InvalidInput("unknown encoded-data backend \"" + name + "\"; registered: " + engine::registered_names_text());
}

}  // namespace mixle::host

namespace mixle {

void register_encoded_data_backend(const std::string& name, EncodedDataFactory factory,
                                   const std::vector<std::string>& aliases, bool override) {
  // The built-ins first: otherwise a name registered before the first encode could take a
  // built-in name, and the built-ins' own registration would then fail on every encode.
  host::register_builtin_backends();
  engine::register_backend({name, factory, engine::BackendKind::application, nullptr}, aliases, override);
}

std::vector<std::string> encoded_data_backends() {
  host::register_builtin_backends();
  return engine::backend_names();
}

std::shared_ptr<EncodedData> encoded_data(const DataSource& source, const EncodedDataOptions& options) {
  if (is_encoded_data_handle(source)) {
    if (const std::string set = engine::controls_set(options); !set.empty())
      throw EncodedDataControlConflict(
          "encoded_data: the data is already an encoded handle (backend \"" +
          std::get<std::shared_ptr<EncodedData>>(source)->backend() + "\"); the encoding controls given (" + set +
          ") cannot re-encode, re-place or move it — pass the raw data with the controls, or the handle without them");
    return std::get<std::shared_ptr<EncodedData>>(source);
  }
  return std::shared_ptr<EncodedData>(host::backend_named(options.backend).factory(std::get<Dataset>(source), options));
}

}  // namespace mixle
