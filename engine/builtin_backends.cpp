// Registers the encoded-data backends this build provides (once, on first use).
#include "engine/local_handle.hpp"

#include <mutex>

namespace mixle::engine {

void register_builtin_encoded_data_backends() {
  static std::once_flag once;
  std::call_once(once, [] {
    register_encoded_data_backend("local", &LocalEncodedData::create, {"in_process", "single"});
  });
}

}  // namespace mixle::engine
