// Model files: model_from_json validates every field; a model it accepts must write back and
// read again to the same JSON text.
#include <mixle/error.hpp>
#include <mixle/model.hpp>

#include <cstdint>
#include <cstdlib>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  mixle::Model model;
  try {
    model = mixle::model_from_json(text, "fuzz.json");
  } catch (const mixle::Error&) {
    return 0;
  }
  const std::string once = mixle::model_to_json(model);
  const std::string twice = mixle::model_to_json(mixle::model_from_json(once, "again.json"));
  if (once != twice) std::abort();  // a model that does not survive its own round trip
  (void)model.free_parameters();
  return 0;
}
