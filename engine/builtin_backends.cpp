// Registers the encoded-data backends this build provides (once, on first use).
#include "engine/component_parallel.hpp"
#include "engine/local_handle.hpp"

#include <mutex>

namespace mixle::engine {

void register_encoded_data_backend_impl(const std::string& name, EncodedDataFactory factory,
                                        const std::vector<std::string>& aliases, bool override);

// Registers through the _impl entry point: the public one calls this function first, and
// re-entering the call_once below from inside it would deadlock.
void register_builtin_encoded_data_backends() {
  static std::once_flag once;
  std::call_once(once, [] {
    register_encoded_data_backend_impl("local", &LocalEncodedData::create, {"in_process", "single"}, false);
    register_encoded_data_backend_impl("component_parallel", &ComponentParallelEncodedData::create,
                                       {"model_parallel", "mp_model"}, false);
  });
}

}  // namespace mixle::engine
