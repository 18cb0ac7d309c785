// `mixle fit`, `mixle score` and `mixle bench` with --device cuda, end to end as users run them
// (real processes), against the same commands on the CPU; and a launched job whose ranks each
// see one GPU — on a GPU, or on the simulator.
#include "common/require.hpp"
#include "common/kernel_compare.hpp"
#include "engine/tf32_expansion.hpp"
#include "host/fit_driver.hpp"
#include "host/fit_process_util.hpp"

#include <mixle/data.hpp>

#include <nlohmann/json.hpp>

#if MIXLE_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

namespace mixle::test {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;

const std::string kCli = MIXLE_CLI_PATH;
const std::string kLayout = "gaussian_diag:0-3,categorical:3-4:3,poisson:4-5";
const std::string kTruth = R"({"format":"mixle-model","version":1,"weights":[0.5,0.3,0.2],"parts":[
    {"family":"gaussian_diag","columns":[0,3],"mean":[[0,0,0],[3,3,0],[0,4,-3]],"var":[[1,1,1],[0.5,2,1],[1,0.3,2]]},
    {"family":"categorical","columns":[3,4],"categories":3,"prob":[[0.8,0.1,0.1],[0.1,0.8,0.1],[0.1,0.1,0.8]]},
    {"family":"poisson","columns":[4,5],"rate":[[1],[6],[15]]}]})";

// Both backends run the same EM from the same initial model (the generating one). In fp64 they
// differ by summation order only (~1e-15 per pass), carried over 8 iterations: far inside 1e-9.
constexpr double kFp64Rtol = 1e-9;
// In fp32 the statistics differ by float rounding (~1e-6 relative); 8 EM iterations carry that
// into parameters as small as a 0.1 probability: 1e-3 relative leaves a wide margin.
constexpr double kFp32Rtol = 1e-3;

std::vector<std::string> fit_args(const fs::path& data, const fs::path& init, const fs::path& out,
                                  const std::string& device, const std::string& precision) {
  return {kCli,      "fit",         "--data",     data.string(), "--layout", kLayout, "--components", "3",
          "--init",  init.string(), "--max-iter", "8",           "--tol",    "0",     "--threads",    "1",
          "--quiet", "--device",    device,       "--precision", precision,  "--out", out.string()};
}

TEST(CudaCli, FitOnTheDeviceMatchesTheCpuFit) {
  MIXLE_CUDA_OR_SKIP(gate);
  TempDir dir;
  const fs::path data = generate_data(dir, kTruth, 3000);
  const fs::path init = dir.path / "truth.json";
  for (const auto& [precision, rtol] : {std::pair<std::string, double>{"fp64", kFp64Rtol}, {"fp32", kFp32Rtol}}) {
    const fs::path cpu = dir.path / ("cpu-" + precision + ".json"), gpu = dir.path / ("cuda-" + precision + ".json");
    Process a = run_process(fit_args(data, init, cpu, "cpu", precision), {}, dir.path / "cpu.log", 120s);
    ASSERT_EQ(a.exit_code(), 0) << a.output();
    Process b = run_process(fit_args(data, init, gpu, "cuda", precision), {}, dir.path / "cuda.log", 300s);
    ASSERT_EQ(b.exit_code(), 0) << b.output();
    EXPECT_LT(max_relative_difference(cpu, gpu), rtol) << precision;
  }
}

// A TF32 fit says what its expansion cost: the warning names how far the fitted components lie
// from the centre the log-densities were expanded about, and the bound that gives — computed
// from the model it wrote (engine/tf32_expansion.hpp). An fp32 fit carries no such warning.
TEST(CudaCli, Tf32FitReportsWhatTheExpansionCost) {
  MIXLE_CUDA_OR_SKIP(gate);
  TempDir dir;
  const fs::path data = generate_data(dir, kTruth, 3000);
  const fs::path init = dir.path / "truth.json";
  for (const std::string precision : {"tf32", "fp32"}) {
    const fs::path out = dir.path / (precision + ".json");
    Process p = run_process(fit_args(data, init, out, "cuda", precision), {}, dir.path / (precision + ".log"), 300s);
    ASSERT_EQ(p.exit_code(), 0) << p.output();
    const engine::Tf32Expansion cost = engine::tf32_expansion(load_model(out.string()));
    ASSERT_TRUE(cost.applies);
    EXPECT_GT(cost.r, 1.0);  // the generating means are several σ apart
    const std::string note = "mixle: warning: " + host::tf32_note(cost);
    EXPECT_EQ(p.output().find(note) != std::string::npos, precision == "tf32") << note << "\n" << p.output();
    EXPECT_EQ(p.output().find("precision tf32:") != std::string::npos, precision == "tf32") << p.output();
  }
}

std::vector<double> read_npy(const fs::path& p) {
  const Dataset d = read_data(p.string(), ReadOptions{});
  std::vector<double> v(d.rows() * d.cols());
  for (std::size_t r = 0; r < d.rows(); ++r)
    for (std::size_t c = 0; c < d.cols(); ++c) v[r * d.cols() + c] = d.at(r, c);
  return v;
}

TEST(CudaCli, ScoreOnTheDeviceMatchesTheCpu) {
  MIXLE_CUDA_OR_SKIP(gate);
  TempDir dir;
  const fs::path data = generate_data(dir, kTruth, 2000);
  const fs::path model = dir.path / "truth.json";
  for (const std::string what : {"loglik", "resp", "labels"}) {
    std::vector<std::vector<double>> out;
    for (const std::string device : {"cpu", "cuda"}) {
      const fs::path file = dir.path / (what + "-" + device + ".npy");
      Process p = run_process({kCli, "score", "--data", data.string(), "--model", model.string(), "--what", what,
                               "--device", device, "--precision", "fp64", "--out", file.string()},
                              {}, dir.path / "score.log", 120s);
      ASSERT_EQ(p.exit_code(), 0) << p.output();
      out.push_back(read_npy(file));
    }
    ASSERT_EQ(out[0].size(), out[1].size()) << what;
    // fp64 on both: the same operations up to FMA contraction and summation order.
    for (std::size_t i = 0; i < out[0].size(); ++i)
      ASSERT_NEAR(out[1][i], out[0][i], 1e-12 * (1.0 + std::abs(out[0][i]))) << what << " element " << i;
  }
}

TEST(CudaCli, BenchOnTheDeviceChecksItselfAgainstTheCpu) {
  MIXLE_CUDA_OR_SKIP(gate);
  TempDir dir;
  for (const std::string precision : {"fp32", "tf32"}) {
    const fs::path json = dir.path / ("bench-" + precision + ".json");
    Process p =
        run_process({kCli,        "bench", "--device",     "cuda",       "--precision", precision, "--rows",   "2000",
                     "--dims",    "8",     "--components", "5",          "--iters",     "1",       "--warmup", "1",
                     "--threads", "1",     "--json",       json.string()},
                    {}, dir.path / "bench.log", 300s);
    ASSERT_EQ(p.exit_code(), 0) << p.output();
    const auto doc = nlohmann::json::parse(read_file(json));
    ASSERT_EQ(doc.at("results").size(), 1u);
    const auto& r = doc["results"][0];
    EXPECT_EQ(r.at("device"), "cuda:0");
#if MIXLE_HAVE_CUDA
    cudaDeviceProp props{};
    ASSERT_EQ(cudaGetDeviceProperties(&props, 0), cudaSuccess);
    EXPECT_EQ(r.at("device_name"), std::string(props.name));  // the device benchmarked, by name
#endif
    EXPECT_EQ(r.at("precision"), precision);
    EXPECT_EQ(r.at("check").at("passed"), true) << r["check"].dump();
    const auto features = doc.at("build").at("features").dump();
    EXPECT_NE(features.find(MIXLE_CUDA_SIM ? "cuda-simulated" : "\"cuda\""), std::string::npos) << features;
  }
}

TEST(CudaCli, InfoNamesTheCudaBackend) {
  TempDir dir;
  Process p = run_process({kCli, "info"}, {}, dir.path / "info.log", 60s);
  ASSERT_EQ(p.exit_code(), 0) << p.output();
  if (MIXLE_CUDA_SIM) {
    EXPECT_NE(p.output().find("cuda (simulated)"), std::string::npos) << p.output();
    EXPECT_NE(p.output().find("simulated on the CPU"), std::string::npos) << p.output();
  } else if (MIXLE_HAVE_CUDA) {
    EXPECT_NE(p.output().find(" cuda"), std::string::npos) << p.output();
    EXPECT_EQ(p.output().find("simulated"), std::string::npos) << p.output();
  }
}

// Under SLURM --gpus-per-task=1, or torchrun with CUDA_VISIBLE_DEVICES set per rank, every
// process sees exactly one GPU while LOCAL_RANK runs 0, 1, …: each rank must use its one GPU.
TEST(CudaCli, LaunchedRanksThatEachSeeOneGpuUseIt) {
  MIXLE_SKIP_UNLESS_BUILT_WITH(MIXLE_HAVE_GLOO, "gloo");
  MIXLE_CUDA_OR_SKIP(gate);
  TempDir dir;
  const fs::path data = generate_data(dir, kTruth, 3000);
  const fs::path init = dir.path / "truth.json";
  Process one = run_process(fit_args(data, init, dir.path / "cpu.json", "cpu", "fp64"), {}, dir.path / "cpu.log", 120s);
  ASSERT_EQ(one.exit_code(), 0) << one.output();
  std::vector<std::string> argv{kCli, "launch", "--nproc", "2", "--"};
  for (const std::string& a : fit_args(data, init, dir.path / "cuda.json", "cuda", "fp64")) argv.push_back(a);
  argv.insert(argv.end(), {"--comm", "gloo"});
  Process p = run_process(argv, {{"CUDA_VISIBLE_DEVICES", "0"}}, dir.path / "launch.log", 300s);
  ASSERT_EQ(p.exit_code(), 0) << p.output();
  EXPECT_NE(p.output().find("on 2 rank(s) (gloo, cuda:0"), std::string::npos) << p.output();
  EXPECT_LT(max_relative_difference(dir.path / "cpu.json", dir.path / "cuda.json"), kFp64Rtol);
}

/// The number of devices the processes of a test will see: the simulator's are configured per
/// process (2 here), a machine's are what they are.
int devices_for_two_ranks(Env& env) {
  if (MIXLE_CUDA_SIM) {
    env["MIXLE_SIM_DEVICES"] = "2";
    return 2;
  }
  return engine::cuda_device_count();
}

// Data parallel over NCCL: two ranks, one GPU each (NCCL refuses two ranks on one GPU), the
// statistics all-reduced on the devices. The same model as one CPU process, to fp64 rounding.
TEST(CudaCli, LaunchedFitOverNcclMatchesTheCpuFit) {
#if !MIXLE_HAVE_NCCL
  GTEST_SKIP() << "built without NCCL";
#endif
  MIXLE_CUDA_OR_SKIP(gate);
  Env env;
  if (devices_for_two_ranks(env) < 2) GTEST_SKIP() << "NCCL needs one GPU per rank: two ranks need two GPUs";
  TempDir dir;
  const fs::path data = generate_data(dir, kTruth, 3000);
  const fs::path init = dir.path / "truth.json";
  Process one = run_process(fit_args(data, init, dir.path / "cpu.json", "cpu", "fp64"), {}, dir.path / "cpu.log", 120s);
  ASSERT_EQ(one.exit_code(), 0) << one.output();
  for (const std::string shards : {"1", "2"}) {
    std::vector<std::string> argv{kCli, "launch", "--nproc", "2", "--"};
    for (const std::string& a : fit_args(data, init, dir.path / ("nccl" + shards + ".json"), "cuda", "fp64"))
      argv.push_back(a);
    argv.insert(argv.end(), {"--comm", "nccl", "--timeout", "60", "--shard-components", shards});
    Process p = run_process(argv, env, dir.path / "launch.log", 300s);
    ASSERT_EQ(p.exit_code(), 0) << p.output();
    EXPECT_NE(p.output().find("on 2 rank(s) (nccl, cuda:0"), std::string::npos) << p.output();
    EXPECT_LT(max_relative_difference(dir.path / "cpu.json", dir.path / ("nccl" + shards + ".json")), kFp64Rtol)
        << "component shards per group: " << shards;
  }
}

#if MIXLE_CUDA_SIM
// Two simulated GPUs shared by the ranks of a node: LOCAL_RANK picks one; a third rank has none
// and the job fails naming it.
TEST(CudaCli, MoreRanksThanSharedGpusFailsNamingTheLocalRank) {
  MIXLE_SKIP_UNLESS_BUILT_WITH(MIXLE_HAVE_GLOO, "gloo");
  TempDir dir;
  const fs::path data = generate_data(dir, kTruth, 1000);
  std::vector<std::string> argv{kCli, "launch", "--nproc", "3", "--"};
  for (const std::string& a : fit_args(data, dir.path / "truth.json", dir.path / "m.json", "cuda", "fp64"))
    argv.push_back(a);
  argv.insert(argv.end(), {"--comm", "gloo", "--timeout", "20"});
  Process p = run_process(argv, {{"MIXLE_SIM_DEVICES", "2"}}, dir.path / "launch.log", 120s);
  EXPECT_NE(p.exit_code(), 0) << p.output();
  EXPECT_NE(p.output().find("local rank 2 has no GPU"), std::string::npos) << p.output();
}

// An nccl run on a process that sees no GPU (the simulator's cudaGetDeviceCount then fails with
// cudaErrorNoDevice, as CUDA's does) stops with the launcher-binding advice, not a CUDA error.
TEST(CudaCli, NcclWithoutAVisibleGpuSaysSo) {
#if !MIXLE_HAVE_NCCL
  GTEST_SKIP() << "built without NCCL";
#endif
  TempDir dir;
  const fs::path data = generate_data(dir, kTruth, 1000);
  std::vector<std::string> argv{kCli, "launch", "--nproc", "1", "--"};
  for (const std::string& a : fit_args(data, dir.path / "truth.json", dir.path / "m.json", "cpu", "fp64"))
    argv.push_back(a);
  argv.insert(argv.end(), {"--comm", "nccl", "--timeout", "20"});
  Process p = run_process(argv, {{"MIXLE_SIM_DEVICES", "0"}}, dir.path / "launch.log", 120s);
  EXPECT_NE(p.exit_code(), 0) << p.output();
  EXPECT_NE(p.output().find("no CUDA device is visible to this process (local rank 0)"), std::string::npos)
      << p.output();
}
#endif

}  // namespace
}  // namespace mixle::test
