// A host program that asks mixle how a model would run on its devices before it fits anything:
// auto_parallel_estimator over a Resources list (data parallel when the model fits every device,
// component-sharded when it does not, UnrealizedModelPlacement with the planner's shards when
// neither runs), then the component-threaded E-step of one process against the serial one.
// Exits non-zero when a choice or a fold is not what the documentation promises.
#include <mixle/mixle.hpp>

#include <cstdio>
#include <random>
#include <vector>

namespace {

mixle::plan::Resources cpus(int count, std::uint64_t memory_bytes) {
  std::vector<mixle::plan::DeviceSpec> devices;
  for (int r = 0; r < count; ++r)
    devices.push_back({.name = "cpu:" + std::to_string(r), .kind = "cpu", .memory_bytes = memory_bytes});
  return mixle::plan::Resources(devices);
}

bool fails(const char* what) {
  std::fprintf(stderr, "placement: %s\n", what);
  return true;
}

}  // namespace

int main() {
  bool failed = false;
  try {
    // gaussian_diag, K = 100 000 components of 16 columns: about 26 MB of parameters and as much
    // of statistics — more than a 40 MB device holds with the planner's safety factor.
    const mixle::plan::ModelSummary model{100000, {{"gaussian_diag", 16, 0}}};
    mixle::EstimatorOptions fp32;
    const mixle::ParallelChoice roomy = mixle::auto_parallel_estimator(fp32, model, cpus(4, 1ull << 30), 100000);
    std::printf("4 devices of 1 GiB: %s (%s)\n", roomy.kind.c_str(), roomy.reason.c_str());
    if (roomy.sharded()) failed = fails("a model that fits every device was sharded");

    const mixle::ParallelChoice tight = mixle::auto_parallel_estimator(fp32, model, cpus(4, 40000000), 100000);
    std::printf("4 devices of 40 MB: %s, %d component shards\n", tight.kind.c_str(), tight.shard_components);
    for (const auto& s : tight.shards)
      std::printf("  %s holds components [%zu, %zu)\n", s.device.name.c_str(), s.component_start, s.component_stop);
    if (!tight.sharded() || tight.shards.size() != static_cast<std::size_t>(tight.shard_components))
      failed = fails("a model too large for one device was not sharded");

    try {  // three ranks cannot form groups of four shards
      mixle::auto_parallel_estimator(fp32, model, cpus(4, 40000000), 100000, 1, 3);
      failed = fails("a world of 3 ranks was given 4 component shards");
    } catch (const mixle::UnrealizedModelPlacement& e) {
      std::printf("a world of 3 ranks: refused; the planner chose %s\n", e.plan().substr(0, 60).c_str());
      if (e.plan().empty() || e.plan().front() != '[') failed = fails("the refusal carries no plan");
    }

    // The component-threaded E-step is the serial one, bit for bit.
    std::mt19937_64 rng(3);
    std::normal_distribution<double> normal;
    std::vector<double> rows(2000 * 4);
    for (double& v : rows) v = normal(rng);
    const mixle::Dataset data = mixle::Dataset::view(rows.data(), 2000, 4);
    mixle::FitOptions options;
    options.components = 8;
    options.max_iter = 1;
    const mixle::Model fitted = mixle::fit(data, options).model;
    const mixle::Statistics serial = mixle::component_parallel_fold(fitted, data, {fp32, 1});
    const mixle::Statistics threaded = mixle::model_parallel_fold(fitted, data, {fp32, 3});
    std::printf("component_parallel_fold: %zu statistics, %s with 3 workers as with 1\n", serial.values.size(),
                serial.values == threaded.values ? "identical" : "DIFFERENT");
    if (serial.values != threaded.values || serial.rows() != 2000.0) failed = fails("the threaded fold differs");
  } catch (const mixle::Error& e) {
    std::fprintf(stderr, "placement: %s\n", e.what());
    return 1;
  }
  return failed ? 1 : 0;
}
