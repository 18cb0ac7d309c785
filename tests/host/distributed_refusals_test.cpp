// fit_distributed's refusals, in one process (a world of one): a Resources file that does not
// give one device per rank, a resume folder without a checkpoint or with one of other data, a
// negative shard count, and the options an in-memory fit cannot honour. Each is refused before
// any EM step, naming the option, the file or the value.
#include "comms/process_util.hpp"
#include "host/backend_shape.hpp"
#include "host/checkpoint.hpp"

#include <mixle/data.hpp>
#include <mixle/distributed.hpp>
#include <mixle/error.hpp>
#include <mixle/fit.hpp>
#include <mixle/model.hpp>

#include <gtest/gtest.h>

#include <fstream>
#include <functional>

namespace mixle::test {
namespace {

Dataset rows_of_two_clusters(std::size_t n) {
  const Model truth = model_from_json(R"({"format":"mixle-model","version":1,"weights":[0.5,0.5],
    "parts":[{"family":"gaussian_diag","columns":[0,2],"mean":[[0,0],[5,5]],"var":[[1,1],[1,1]]}]})");
  return sample(truth, n, 3);
}

std::string write_rows(const TempDir& dir, const std::string& name, std::size_t n) {
  const Dataset d = rows_of_two_clusters(n);
  const std::string path = (dir.path / name).string();
  write_matrix(path, d.as<double>(), d.rows(), d.cols());
  return path;
}

FitOptions two_components() {
  FitOptions o;
  o.components = 2;
  o.layout = "gaussian_diag";
  o.max_iter = 3;
  o.threads = 1;
  return o;
}

template <class E>
void expect_refused(const std::function<void()>& fn, const std::vector<std::string>& fragments) {
  try {
    fn();
    ADD_FAILURE() << "not refused";
  } catch (const E& e) {
    for (const auto& f : fragments) EXPECT_NE(std::string(e.what()).find(f), std::string::npos) << e.what();
  }
}

TEST(DistributedRefusals, AResourcesFileGivesOneDevicePerRank) {
  TempDir dir;
  const std::string data = write_rows(dir, "rows.npy", 200);
  const std::string resources = (dir.path / "two.json").string();
  std::ofstream(resources) << R"({"devices": [{"name": "cpu:0", "kind": "cpu", "engine": "cpu"},
                                              {"name": "cpu:1", "kind": "cpu", "engine": "cpu"}]})";
  DistributedOptions dist;
  dist.resources_file = resources;
  expect_refused<InvalidInput>([&] { fit_distributed(data, {}, two_components(), dist); },
                               {resources, "has 2 devices but the job has 1 ranks", "one device per rank"});
}

TEST(DistributedRefusals, AResumeFolderNeedsACheckpointOfTheseRows) {
  TempDir dir;
  const std::string data = write_rows(dir, "rows.npy", 200);
  DistributedOptions dist;
  dist.resume_dir = (dir.path / "nothing-here").string();
  expect_refused<InvalidInput>([&] { fit_distributed(data, {}, two_components(), dist); },
                               {"--resume " + dist.resume_dir, "no checkpoint.json there"});
  // A checkpoint of another file's 300 rows is not resumed on these 200.
  DistributedOptions writing;
  writing.checkpoint_dir = (dir.path / "other").string();
  fit_distributed(write_rows(dir, "other.npy", 300), {}, two_components(), writing);
  dist.resume_dir = writing.checkpoint_dir;
  expect_refused<InvalidInput>(
      [&] { fit_distributed(data, {}, two_components(), dist); },
      {host::checkpoint_path(dist.resume_dir), "written for 300 data rows", data + " has 200"});
}

// torchrun's failure summary reads each rank's error from TORCHELASTIC_ERROR_FILE: a refusal
// before the process group forms (a device the backend cannot use) is written there as well as
// one after it (a resume folder without a checkpoint).
TEST(DistributedRefusals, EveryRefusalReachesTheErrorFile) {
  TempDir dir;
  const std::string data = write_rows(dir, "rows.npy", 200);
  const std::filesystem::path error_file = dir.path / "error.json";
  DistributedOptions dist;
  dist.launch_environment = {{"TORCHELASTIC_ERROR_FILE", error_file.string()}};
  auto written = [&] {
    const std::string text = read_file(error_file);
    std::filesystem::remove(error_file);
    return text;
  };
  FitOptions threaded = two_components();
  threaded.backend = "component_parallel";
  threaded.device = "cuda";
  expect_refused<InvalidInput>([&] { fit_distributed(data, {}, threaded, dist); }, {"device \"cuda\""});
  const std::string before = written();
  EXPECT_NE(before.find("MixleError: "), std::string::npos) << before;
  EXPECT_NE(before.find("device \\\"cuda\\\" is not supported"), std::string::npos) << before;

  dist.resume_dir = (dir.path / "nothing-here").string();
  expect_refused<InvalidInput>([&] { fit_distributed(data, {}, two_components(), dist); }, {"no checkpoint.json"});
  const std::string after = written();
  EXPECT_NE(after.find("no checkpoint.json there"), std::string::npos) << after;
}

TEST(DistributedRefusals, ShardCountsAndInMemoryRows) {
  TempDir dir;
  const std::string data = write_rows(dir, "rows.npy", 200);
  DistributedOptions negative;
  negative.shard_components = -1;
  expect_refused<UsageError>([&] { fit_distributed(data, {}, two_components(), negative); },
                             {"--shard-components -1", "0 (automatic), 1 (data parallel) or G ≥ 2"});
  // A checkpoint folder with no interval would write no checkpoint at all: refused (0 and below;
  // the CLI refuses them as parsed, library callers here). Without a folder the interval is unused.
  for (int every : {0, -3}) {
    DistributedOptions never;
    never.checkpoint_dir = (dir.path / "ck").string();
    never.checkpoint_every = every;
    expect_refused<UsageError>([&] { fit_distributed(data, {}, two_components(), never); },
                               {"--checkpoint-every " + std::to_string(every) + " with --checkpoint-dir",
                                "accepted: the iterations between checkpoints, ≥ 1"});
    EXPECT_FALSE(std::filesystem::exists(dir.path / "ck"));
  }
  const Dataset rows = rows_of_two_clusters(200);
  for (int shards : {-1, 2}) {
    DistributedOptions sharded;
    sharded.shard_components = shards;
    expect_refused<InvalidInput>([&] { fit_distributed(rows, two_components(), sharded); },
                                 {"shard_components = " + std::to_string(shards), "runs data parallel (0 or 1)"});
  }
  DistributedOptions planned;
  planned.resources_file = "resources.json";
  expect_refused<InvalidInput>([&] { fit_distributed(rows, two_components(), planned); },
                               {"resources_file", "no row split to plan"});
  // What is accepted runs: data parallel in a world of one.
  DistributedOptions plain;
  plain.shard_components = 1;
  EXPECT_EQ(fit_distributed(rows, two_components(), plain).fit.rows, 200u);
}

// One rule for backend names, case and aliases included, shared by fit, fit_distributed and
// `mixle fit`.
TEST(BackendShape, NamesAliasesAndCase) {
  using host::BackendShape;
  for (const char* name : {"local", "IN_PROCESS", "single", "Distributed", "torchrun", "mpi"})
    EXPECT_EQ(host::backend_shape(name), BackendShape::data_parallel) << name;
  for (const char* name : {"component_parallel", "Model_Parallel", "mp_model"})
    EXPECT_EQ(host::backend_shape(name), BackendShape::component_threads) << name;
  EXPECT_EQ(host::backend_shape("COMPONENT_SHARDED"), BackendShape::component_sharded);
  for (const char* name : {"mine", "", "local2", "gloo"})
    EXPECT_EQ(host::backend_shape(name), BackendShape::registered) << name;
}

// In a process group, the local backend's aliases run as local does, a precision the engine
// names two ways ("float32" is fp32) meets the communicator's capabilities as fp32, and the
// shapes that cannot run across processes are refused naming the backend.
TEST(DistributedRefusals, BackendAliasesAndPrecisionNamesAsTheEngineReadsThem) {
  const Dataset rows = rows_of_two_clusters(200);
  FitOptions reference = two_components();
  reference.precision = "fp32";
  const Model expected = fit_distributed(rows, reference, {}).fit.model;
  for (const char* backend : {"SINGLE", "in_process"}) {
    for (const char* precision : {"fp32", "float32"}) {
      FitOptions o = reference;
      o.backend = backend;
      o.precision = precision;
      const Model got = fit_distributed(rows, o, {}).fit.model;
      EXPECT_EQ(got.weights, expected.weights) << backend << " " << precision;
      EXPECT_EQ(got.parts[0].mean, expected.parts[0].mean) << backend << " " << precision;
    }
  }
  // The distributed backend and its aliases through mixle::fit: a world of one, the same model.
  for (const char* backend : {"distributed", "TORCHRUN", "mpi"}) {
    FitOptions o = reference;
    o.backend = backend;
    const Model got = fit(rows, o).model;
    EXPECT_EQ(got.weights, expected.weights) << backend;
    EXPECT_EQ(got.parts[0].mean, expected.parts[0].mean) << backend;
  }
  FitOptions sharded = reference;
  sharded.backend = "Component_Sharded";
  expect_refused<UsageError>([&] { fit_distributed(rows, sharded, {}); },
                             {"component_sharded runs its shards as threads of one process", "--shard-components G"});
  FitOptions other = reference;
  other.backend = "mine";
  expect_refused<InvalidInput>([&] { fit_distributed(rows, other, {}); },
                               {"backend 'mine' cannot run inside a process group", "component_parallel"});
}

}  // namespace
}  // namespace mixle::test
