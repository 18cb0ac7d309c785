// The planning layer's JSON documents: Resources, Placement, ModelShard, StepReceipt,
// ParallelPlan, ParameterLayout, DistributedUpdate and CalibrationCatalog. The first byte picks
// the document type, the rest is its text. Bad text must throw mixle::Error.
#include <mixle/error.hpp>
#include <mixle/plan.hpp>

#include <cstdint>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::string_view text(reinterpret_cast<const char*>(data) + 1, size - 1);
  namespace plan = mixle::plan;
  try {
    switch (data[0] % 8) {
      case 0: (void)plan::Resources::from_json(text); break;
      case 1: (void)plan::Placement::from_json(text); break;
      case 2: (void)plan::ModelShard::from_json(text); break;
      case 3: (void)plan::StepReceipt::from_json(text); break;
      case 4: (void)plan::ParallelPlan::from_json(text); break;
      case 5: (void)plan::ParameterLayout::from_json(text); break;
      case 6: (void)plan::DistributedUpdate::from_json(text); break;
      default: (void)plan::CalibrationCatalog::from_json(text); break;
    }
  } catch (const mixle::Error&) {}
  return 0;
}
