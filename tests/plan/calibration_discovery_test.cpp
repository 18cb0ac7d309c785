// Calibration records and catalog (docs/planning.md, "Calibration records") and the discovery parsers.
#include <mixle/error.hpp>
#include <mixle/plan.hpp>

#include "common/one_cpu.hpp"
#include "host/resources_discovery.hpp"
#include "plan/test_util.hpp"

#include <nlohmann/json.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <sched.h>

#include <unistd.h>

using namespace mixle::plan;
using mixle::InvalidInput;
using mixle::plan::testing::expect_mentions;
using mixle::plan::testing::message_of;

namespace {

DeviceCalibration ok(std::string name, double throughput) {
  return {std::move(name), true, {0.5, 0.25, 0.75}, throughput, std::nullopt};
}

CalibrationRecord record(double timestamp, const Resources& res, std::vector<DeviceCalibration> results,
                         std::string workload = "estep") {
  CalibrationRecord r;
  r.model_type = "gmm";
  r.workload = std::move(workload);
  r.resources = res;
  r.sample_size = 512;
  r.repeats = 3;
  r.precision = "float32";
  r.estimator_type = "em";
  r.timestamp = timestamp;
  r.device_results = std::move(results);
  return r;
}

}  // namespace

TEST(PlanCalibration, DeviceResultRules) {
  EXPECT_NO_THROW(ok("cpu:0", 10).validate());
  DeviceCalibration no_timing = ok("cpu:0", 10);
  no_timing.elapsed_seconds.clear();
  expect_mentions(message_of<InvalidInput>([&] { no_timing.validate(); }), {"no timings"});
  DeviceCalibration bad_time = ok("cpu:0", 10);
  bad_time.elapsed_seconds[1] = -1;
  expect_mentions(message_of<InvalidInput>([&] { bad_time.validate(); }), {"cpu:0", "-1", "> 0"});
  bad_time.elapsed_seconds[1] = 0.0;  // a timing of zero is no measurement either
  expect_mentions(message_of<InvalidInput>([&] { bad_time.validate(); }),
                  {"cpu:0", "elapsed_seconds contains 0", "> 0"});
  DeviceCalibration failed{"cpu:0", false, {}, std::nullopt, std::nullopt};
  expect_mentions(message_of<InvalidInput>([&] { failed.validate(); }), {"without an error"});
  failed.error = "out of memory";
  EXPECT_NO_THROW(failed.validate());
  DeviceCalibration inf = ok("cpu:0", INFINITY);
  expect_mentions(message_of<InvalidInput>([&] { inf.validate(); }), {"throughput=inf"});
  DeviceCalibration zero = ok("cpu:0", 0.0);
  expect_mentions(message_of<InvalidInput>([&] { zero.validate(); }), {"throughput=0", "> 0"});
}

TEST(PlanCalibration, ThroughputIsRowsOverMedian) {
  EXPECT_DOUBLE_EQ(throughput_from_timings(512, {0.5, 0.25, 0.75}), 1024.0);
  EXPECT_DOUBLE_EQ(throughput_from_timings(100, {1.0, 3.0}), 50.0);
  EXPECT_DOUBLE_EQ(throughput_from_timings(100, {5.0, 1.0, 4.0, 2.0, 3.0}), 100.0 / 3.0);  // the median of five
  EXPECT_DOUBLE_EQ(throughput_from_timings(1, {0.0 + 1e-300}), 1e12);                      // floored at 1e-12 s
  EXPECT_EQ(workload_name("Accumulate"), "estep");
  expect_mentions(message_of<InvalidInput>([] { workload_name("train"); }), {"'train'", "score"});
}

TEST(PlanCalibration, ApplyCalibrationReplacesThroughput) {
  Resources res = Resources::local(2);
  DeviceCalibration failed{"cpu:1", false, {}, std::nullopt, "boom"};
  Resources out = apply_calibration(res, {ok("cpu:0", 1234.5), failed}, "fp64");
  EXPECT_EQ(out.devices()[0].throughput, 1234.5);
  EXPECT_EQ(out.devices()[0].precision, "float64");
  EXPECT_EQ(out.devices()[1].throughput, 1.0);  // failure keeps the original spec
  expect_mentions(message_of<InvalidInput>([&] { apply_calibration(res, {ok("cuda:9", 1)}); }),
                  {"cuda:9", "matches no device"});
  // Each result is validated before it is applied: a success without a throughput is refused,
  // and so is a failure's bad timing, though a failure changes nothing.
  const DeviceCalibration no_rate{"cpu:0", true, {0.5}, std::nullopt, std::nullopt};
  expect_mentions(message_of<InvalidInput>([&] { apply_calibration(res, {no_rate}); }),
                  {"calibration of 'cpu:0'", "success=true with throughput=none"});
  // The bad timing is written to every digit that tells it apart, and no further.
  const DeviceCalibration bad_timing{"cpu:1", false, {-0.1}, std::nullopt, "boom"};
  expect_mentions(message_of<InvalidInput>([&] { apply_calibration(res, {bad_timing}); }),
                  {"calibration of 'cpu:1'", "elapsed_seconds contains -0.10000000000000001;"});
}

// A record is fully successful when every device has its own successful result, in any order.
TEST(PlanCalibration, FullySuccessfulNeedsEachDevicesOwnResult) {
  const Resources one = Resources::local(1), two = Resources::local(2);
  const DeviceCalibration failed{"cpu:1", false, {}, std::nullopt, "boom"};
  EXPECT_TRUE(record(1, one, {ok("cpu:0", 5)}).fully_successful());
  EXPECT_TRUE(record(1, two, {ok("cpu:1", 5), ok("cpu:0", 5)}).fully_successful());
  EXPECT_FALSE(record(1, two, {ok("cpu:0", 5), failed}).fully_successful());
  EXPECT_FALSE(record(1, two, {ok("cpu:0", 5), ok("cpu:2", 5)}).fully_successful()) << "cpu:1 has no result";
  EXPECT_FALSE(record(1, one, {ok("cpu:1", 5)}).fully_successful()) << "cpu:0 has no result";
}

TEST(PlanCalibration, CatalogLatestAndResourcesForAndRoundTrip) {
  Resources two = Resources::local(2);
  CalibrationCatalog catalog;
  Resources calibrated = apply_calibration(two, {ok("cpu:0", 100.0 / 3.0), ok("cpu:1", 77)});
  catalog.append(record(10, calibrated, {ok("cpu:0", 100.0 / 3.0), ok("cpu:1", 77)}));
  catalog.append(record(20, two, {ok("cpu:0", 5)}));  // newer, but cpu:1 missing
  catalog.append(record(30, two, {ok("cpu:0", 5), ok("cpu:1", 5)}, "score"));
  const CalibrationRecord* latest = catalog.latest("gmm", "accumulate", "fp32");
  ASSERT_NE(latest, nullptr);
  EXPECT_EQ(latest->timestamp, 20);
  EXPECT_FALSE(latest->fully_successful());
  EXPECT_FALSE(catalog.resources_for("gmm", "estep", "float32").has_value());
  EXPECT_EQ(catalog.latest("gmm", "estep"), nullptr);  // no precision ≠ float32
  {  // on a tie of timestamps the record appended later is the newer one
    CalibrationCatalog tied = catalog;
    tied.append(record(20, two, {ok("cpu:0", 7), ok("cpu:1", 7)}));
    const CalibrationRecord* newest = tied.latest("gmm", "accumulate", "fp32");
    ASSERT_NE(newest, nullptr);
    EXPECT_EQ(newest, &tied.records().back());
    EXPECT_TRUE(newest->fully_successful());
  }
  EXPECT_EQ(catalog.resources_for("gmm", "score", "float32"), two);
  namespace fs = std::filesystem;
  const std::string path =
      (fs::temp_directory_path() / ("mixle_calib_" + std::to_string(::getpid()) + ".json")).string();
  catalog.save(path);
  CalibrationCatalog back = CalibrationCatalog::load(path);
  {  // the file people read and diff: indented by two spaces, one newline at the end
    std::ifstream in(path);
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    EXPECT_EQ(text, catalog.to_json(2) + "\n");
    EXPECT_EQ(text.compare(0, 4, "{\n  "), 0) << text.substr(0, 40);
  }
  fs::remove(path);
  EXPECT_EQ(back, catalog);
  EXPECT_EQ(back.records()[0].resources.devices()[0].throughput, 100.0 / 3.0);  // bit-exact
  expect_mentions(message_of<InvalidInput>([] { CalibrationCatalog::from_json(R"({"format": "x"})"); }),
                  {"format='x'", "mixle-calibration"});
}

// A record written without its optional fields (an older writer, or one that does not know
// them) reads with their defaults: no precision, estimator "none", counts and timestamp 0.
TEST(PlanCalibration, OptionalRecordFieldsDefault) {
  CalibrationCatalog catalog;
  CalibrationRecord full = record(10, Resources::local(1), {ok("cpu:0", 5)});
  full.row_count = 7, full.model_bytes = 8, full.statistic_bytes = 9;
  catalog.append(full);
  nlohmann::json doc = nlohmann::json::parse(catalog.to_json(0));
  for (const char* field : {"precision", "estimator_type", "row_count", "model_bytes", "statistic_bytes", "timestamp"})
    ASSERT_EQ(doc["records"][0].erase(field), 1u) << field;
  const CalibrationRecord back = CalibrationCatalog::from_json(doc.dump()).records().at(0);
  EXPECT_FALSE(back.precision.has_value());
  EXPECT_EQ(back.estimator_type, "none");
  EXPECT_EQ(back.row_count, 0u);
  EXPECT_EQ(back.model_bytes, 0u);
  EXPECT_EQ(back.statistic_bytes, 0u);
  EXPECT_EQ(back.timestamp, 0.0);
  EXPECT_EQ(back.sample_size, 512u);  // the required fields as written
  // Every version but 1 gets the same refusal, 0 and negatives included.
  for (const int version : {0, -1, 2}) {
    doc["version"] = version;
    expect_mentions(message_of<InvalidInput>([&] { CalibrationCatalog::from_json(doc.dump()); }),
                    {"calibration catalog version=" + std::to_string(version) + " is not supported", "accepted: 1"});
  }
}

TEST(PlanDiscovery, ParsesMeminfoAndCgroupLimits) {
  using namespace mixle::host;
  EXPECT_EQ(parse_meminfo_total("MemFree:  10 kB\nMemTotal:       16384 kB\n"), 16384u * 1024);
  EXPECT_EQ(parse_meminfo_total("MemFree: 1 kB\n"), std::nullopt);
  EXPECT_EQ(parse_cgroup_memory_limit("max\n"), std::nullopt);
  EXPECT_EQ(parse_cgroup_memory_limit("8589934592\n"), 8589934592u);
  EXPECT_EQ(parse_cgroup_memory_limit("9223372036854771712\n"), std::nullopt);  // v1 unlimited
  // From 2^60 bytes (an exbibyte) up, a limit is read as v1's "unlimited"; below it, as a limit.
  EXPECT_EQ(parse_cgroup_memory_limit("1152921504606846976"), std::nullopt);
  EXPECT_EQ(parse_cgroup_memory_limit("1152921504606846975"), 1152921504606846975u);
  EXPECT_EQ(parse_cgroup_v2_path("12:cpu:/x\n0::/user.slice/job-1\n"), "/user.slice/job-1");
  EXPECT_EQ(parse_cgroup_v2_path("4:memory:/x\n"), std::nullopt);
  EXPECT_EQ(parse_cgroup_v1_memory_path("12:cpu:/x\n4:cpuset,memory:/slurm/job_1 \n0::/\n"), "/slurm/job_1");
  EXPECT_EQ(parse_cgroup_v1_memory_path("4:memory:/a\n"), "/a");
  EXPECT_EQ(parse_cgroup_v1_memory_path("4:memoryx,cpu:/a\n0::/b\n"), std::nullopt);
  EXPECT_EQ(parse_cgroup_v1_memory_path("0::/b"), std::nullopt);
  // A v2 path may hold ',' and ':': its line's controller list is still the empty one.
  EXPECT_EQ(parse_cgroup_v1_memory_path("0::/x,memory:/y\n"), std::nullopt);
}

// A number is read from its own characters only: the parsers take views into a larger text (a
// line of /proc/meminfo), so digits right after the view must not join the number.
TEST(PlanDiscovery, ANumberEndsWhereItsViewEnds) {
  using namespace mixle::host;
  const std::string text = "85899345921234";
  EXPECT_EQ(parse_cgroup_memory_limit(std::string_view(text).substr(0, 10)), 8589934592u);
  EXPECT_EQ(parse_cgroup_memory_limit(std::string_view(text).substr(0, 0)), std::nullopt);
  EXPECT_EQ(parse_cgroup_memory_limit("12x"), std::nullopt);
  EXPECT_EQ(parse_cgroup_memory_limit("0"), std::nullopt);  // a limit of 0 is not a limit
  EXPECT_EQ(parse_meminfo_total("MemTotal: 2048"), 2048u);  // no unit: bytes
}

// The memory limit, read from a made-up machine: the least of MemTotal and every limit on the
// way from the process's cgroup up to the mount's root, cgroup v1 and v2.
TEST(PlanDiscovery, UsableMemoryIsTheTightestLimitAboveTheProcess) {
  namespace fs = std::filesystem;
  using mixle::host::usable_memory_bytes;
  const fs::path root = fs::temp_directory_path() / ("mixle_machine_" + std::to_string(::getpid()));
  fs::remove_all(root);
  const mixle::host::MachineFiles files{.proc = (root / "proc").string(), .cgroup = (root / "cgroup").string()};
  auto write = [&](const fs::path& rel, const std::string& text) {
    fs::create_directories((root / rel).parent_path());
    std::ofstream(root / rel) << text;
  };
  constexpr std::uint64_t GiB = 1ull << 30;

  EXPECT_EQ(usable_memory_bytes(files), std::nullopt) << "nothing readable";
  write("proc/meminfo", "MemTotal:       16777216 kB\nMemFree: 1 kB\n");
  EXPECT_EQ(usable_memory_bytes(files), 16 * GiB) << "MemTotal alone";
  // cgroup v1, as a Slurm node without cgroup namespaces has it: the job's limit binds its steps.
  write("cgroup/memory/memory.limit_in_bytes", "4294967296\n");
  EXPECT_EQ(usable_memory_bytes(files), 4 * GiB) << "v1 at the root";
  write("proc/self/cgroup", "5:cpu,memory:/slurm/job_7\n0::/\n");
  write("cgroup/memory/slurm/job_7/memory.limit_in_bytes", "3221225472\n");
  EXPECT_EQ(usable_memory_bytes(files), 3 * GiB) << "v1: the process's own cgroup";
  write("proc/self/cgroup", "5:cpu,memory:/slurm/job_7/step_0\n0::/\n");
  write("cgroup/memory/slurm/job_7/step_0/memory.limit_in_bytes", "8589934592\n");
  EXPECT_EQ(usable_memory_bytes(files), 3 * GiB) << "v1: a parent's tighter limit";
  // cgroup v2.
  fs::remove_all(root / "cgroup/memory");
  write("proc/self/cgroup", "0::/job.slice/run-7\n");
  write("cgroup/memory.max", "2147483648\n");
  EXPECT_EQ(usable_memory_bytes(files), 2 * GiB) << "v2 at the root";
  write("cgroup/job.slice/run-7/memory.max", "1073741824\n");
  EXPECT_EQ(usable_memory_bytes(files), 1 * GiB) << "v2: the process's own cgroup";
  write("cgroup/job.slice/run-7/memory.max", "max\n");
  EXPECT_EQ(usable_memory_bytes(files), 2 * GiB) << "v2: an unlimited cgroup below a limited one";
  write("cgroup/job.slice/memory.max", "1610612736\n");
  EXPECT_EQ(usable_memory_bytes(files), 3 * GiB / 2) << "v2: the parent's limit";
  fs::remove(root / "cgroup/job.slice/memory.max");
  write("cgroup/memory.max", "68719476736\n");
  EXPECT_EQ(usable_memory_bytes(files), 16 * GiB) << "a limit above the machine's memory";
  fs::remove(root / "proc/meminfo");
  EXPECT_EQ(usable_memory_bytes(files), 64 * GiB) << "the limit alone";
  write("proc/self/cgroup", "0::job.slice\n");  // not a path the kernel writes: the root still counts
  EXPECT_EQ(usable_memory_bytes(files), 64 * GiB) << "a relative cgroup path";
  fs::remove_all(root);
}

// A visible GPU as discovery describes it (the CUDA query itself needs a device; this is what
// is made of its answer).
TEST(PlanDiscovery, AGpuIsDescribedFromItsProperties) {
  const mixle::host::CudaDeviceInfo gpu{
      .product = "NVIDIA H200", .memory_bytes = 150'000'000'000ull, .multiprocessors = 132};
  const DeviceSpec d = mixle::host::gpu_device_spec(3, gpu, "fp32");
  EXPECT_EQ(d.name, "cuda:3");
  EXPECT_EQ(d.kind, "cuda");
  EXPECT_EQ(d.engine, "cuda");
  EXPECT_TRUE(d.is_gpu());
  EXPECT_EQ(d.memory_bytes, 150'000'000'000ull);
  EXPECT_EQ(d.product, "NVIDIA H200");
  EXPECT_EQ(d.compute_units, 132);
  EXPECT_EQ(d.throughput, kDefaultGpuThroughput);
  EXPECT_EQ(d.precision, "float32");
  EXPECT_EQ(mixle::host::gpu_device_spec(0, gpu, std::nullopt).precision, std::nullopt);
}

// With the affinity mask cut to one CPU, discovery counts one, whatever the machine has.
TEST(PlanDiscovery, TheAffinityMaskBoundsTheCpuCount) {
  cpu_set_t saved;
  ASSERT_EQ(sched_getaffinity(0, sizeof saved, &saved), 0);
  EXPECT_EQ(mixle::test::on_one_cpu([] { return mixle::host::affinity_cpu_count(); }), 1u);
  EXPECT_EQ(mixle::host::affinity_cpu_count(), static_cast<std::size_t>(CPU_COUNT(&saved)));
}

TEST(PlanDiscovery, DiscoverFindsThisMachine) {
  Resources r = Resources::discover({.cpu_workers = 2, .include_cuda = false});
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r.devices()[0].name, "cpu:0");
  EXPECT_GE(mixle::host::affinity_cpu_count(), 1u);
  if (auto mem = mixle::host::usable_memory_bytes()) {
    EXPECT_EQ(r.devices()[0].memory_bytes, *mem / 2);
  }
  // The CPUs this process may run on are shared between the slots, and a slot has at least one
  // even when there are more slots than CPUs.
  const std::size_t cpus = mixle::host::affinity_cpu_count();
  EXPECT_EQ(r.devices()[0].compute_units, static_cast<std::int64_t>(std::max<std::size_t>(1, cpus / 2)));
  const Resources crowded = Resources::discover({.cpu_workers = cpus + 1, .include_cuda = false});
  EXPECT_EQ(crowded.devices().back().compute_units, 1);
  // With CUDA asked for, a machine without a GPU still discovers its CPUs.
  Resources with_gpus = Resources::discover();
  EXPECT_EQ(with_gpus.devices()[0].name, "cpu:0");
  for (const DeviceSpec& d : with_gpus.devices()) {
    if (d.is_gpu()) {
      EXPECT_TRUE(d.memory_bytes.has_value());
      EXPECT_EQ(d.throughput, mixle::host::kDefaultGpuThroughput);
    }
  }
}

TEST(PlanDiscovery, ProcessEnvironmentSeesVariables) {
  ::setenv("MIXLE_PLAN_TEST_VAR", "42", 1);
  Environment env = mixle::host::process_environment();
  EXPECT_EQ(env.at("MIXLE_PLAN_TEST_VAR"), "42");
  ::unsetenv("MIXLE_PLAN_TEST_VAR");
}
