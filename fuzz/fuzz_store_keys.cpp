// The rendezvous store's key-list message (a wait or multi-get request's payload): decode_keys
// must accept exactly what encode_keys writes and refuse the rest without reading past the end.
#include "comms/store_protocol.hpp"

#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  // A copy of exactly `size` bytes, so AddressSanitizer sees any read past the message.
  const std::vector<char> bytes(reinterpret_cast<const char*>(data), reinterpret_cast<const char*>(data) + size);
  std::vector<std::string> keys;
  if (!mixle::comms::wire::decode_keys(std::string_view(bytes.data(), bytes.size()), keys)) return 0;
  const std::vector<char> again = mixle::comms::wire::encode_keys(keys);
  if (again != bytes) std::abort();  // decode accepted bytes that encode would not write
  return 0;
}
