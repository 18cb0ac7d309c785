// Registers the encoded-data backends this build provides (once, on first use).
#include "engine/component_parallel.hpp"
#include "engine/local_handle.hpp"

#include <mutex>

namespace mixle::engine {

void register_builtin_encoded_data_backends() {
  static std::once_flag once;
  std::call_once(once, [] {
    register_encoded_data_backend("local", &LocalEncodedData::create, {"in_process", "single"});
    register_encoded_data_backend("component_parallel", &ComponentParallelEncodedData::create,
                                  {"model_parallel", "mp_model"});
  });
}

}  // namespace mixle::engine
