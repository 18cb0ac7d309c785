// Stepwise EM states (partial_fit's, saved as JSON): stepwise_state_from_json checks every field;
// a state it accepts must write back and read again to the same state.
#include <mixle/error.hpp>
#include <mixle/partial_fit.hpp>

#include <cstdint>
#include <cstdlib>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  mixle::StepwiseState state;
  try {
    state = mixle::stepwise_state_from_json(text);
  } catch (const mixle::Error&) {
    return 0;
  }
  if (mixle::stepwise_state_from_json(mixle::stepwise_state_to_json(state)) != state)
    std::abort();  // a state that does not survive its own round trip
  return 0;
}
