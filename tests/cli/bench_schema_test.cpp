// `mixle bench` as a tool (not a speed test): a tiny CPU run whose JSON is checked against the
// schema documented in bench/README.md, and the exit-code contract for bad options and for
// CUDA in a CPU-only build.
#include <mixle/family.hpp>

#include "common/run_cli.hpp"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <unistd.h>
#include <string>

namespace {

using mixle::test::cli_exit_code;
using nlohmann::json;
namespace fs = std::filesystem;

fs::path temp_path(const std::string& name) {
  return fs::temp_directory_path() / ("mixle_bench_test_" + std::to_string(::getpid()) + "_" + name);
}

// Runs a tiny benchmark and returns its JSON document.
json tiny_run(const std::string& extra) {
  const fs::path out = temp_path("out.json");
  const int code = cli_exit_code("bench --rows 2000 --dims 4 --components 3 --iters 2 --warmup 1 --threads 1 --json " +
                                 out.string() + " " + extra);
  EXPECT_EQ(code, 0);
  std::ifstream in(out);
  std::stringstream text;
  text << in.rdbuf();
  fs::remove(out);
  return json::parse(text.str());
}

void expect_number(const json& j, const char* key, bool positive = false) {
  ASSERT_TRUE(j.contains(key)) << key << " missing in " << j.dump();
  ASSERT_TRUE(j[key].is_number()) << key << " is not a number: " << j[key].dump();
  if (positive) EXPECT_GT(j[key].get<double>(), 0.0) << key;
}
void expect_string(const json& j, const char* key) {
  ASSERT_TRUE(j.contains(key)) << key << " missing";
  EXPECT_TRUE(j[key].is_string()) << key;
}
void expect_integer(const json& j, const char* key) {
  ASSERT_TRUE(j.contains(key)) << key << " missing";
  EXPECT_TRUE(j[key].is_number_integer()) << key;
}

// The first "model name" of /proc/cpuinfo, read here independently of the bench ("unknown" without one).
std::string proc_cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);) {
    if (line.compare(0, 10, "model name") != 0) continue;
    std::string value = line.substr(line.find(':') + 1);
    return value.substr(value.find_first_not_of(" \t"));
  }
  return "unknown";
}

// MemTotal of /proc/meminfo in bytes, read here independently of the bench (0 without one).
long long proc_mem_total() {
  std::ifstream in("/proc/meminfo");
  for (std::string line; std::getline(in, line);)
    if (line.compare(0, 9, "MemTotal:") == 0) return std::stoll(line.substr(9)) * 1024;
  return 0;
}

void check_phase(const json& p, int iters) {
  for (const char* k : {"min_s", "median_s", "mean_s", "max_s"}) expect_number(p, k, true);
  ASSERT_TRUE(p["samples_s"].is_array());
  EXPECT_EQ(p["samples_s"].size(), static_cast<std::size_t>(iters));
  for (const json& sample : p["samples_s"]) {
    ASSERT_TRUE(sample.is_number());
    EXPECT_GT(sample.get<double>(), 0.0);
  }
  EXPECT_LE(p["min_s"].get<double>(), p["median_s"].get<double>());
  EXPECT_LE(p["median_s"].get<double>(), p["max_s"].get<double>());
}

void check_metrics(const json& m) {
  for (const char* k : {"flops", "bytes", "rows_per_s", "nkd_per_s", "gflop_per_s", "gb_per_s", "peak_fraction"})
    expect_number(m, k, true);
}

void check_document(const json& doc, const std::string& family, int iters) {
  EXPECT_EQ(doc.at("format"), "mixle-bench");
  EXPECT_EQ(doc.at("schema_version"), 1);
  expect_string(doc, "date");

  const json& machine = doc.at("machine");
  expect_string(machine, "cpu_model");
  expect_integer(machine, "logical_cpus");
  expect_integer(machine, "memory_bytes");
  EXPECT_EQ(machine["memory_bytes"].get<long long>(), proc_mem_total());
  expect_string(machine, "os");

  const json& build = doc.at("build");
  expect_string(build, "version");
  ASSERT_TRUE(build.at("features").is_array());
  EXPECT_EQ(build["features"][0], "cpu");
  expect_string(build, "compiler");
  expect_string(build, "build_type");

  const json& c = doc.at("case");
  EXPECT_EQ(c.at("family"), family);
  EXPECT_EQ(c.at("rows"), 2000);
  EXPECT_EQ(c.at("dims"), 4);
  EXPECT_EQ(c.at("components"), 3);
  EXPECT_EQ(c.at("iters"), 2);  // as tiny_run asked, not the defaults (10 and 2)
  EXPECT_EQ(c.at("warmup"), 1);
  EXPECT_EQ(c.at("threads_requested"), 1);
  for (const char* k : {"categories", "threads_requested", "iters", "warmup", "seed", "statistics"})
    expect_integer(c, k);
  for (const char* k : {"precision", "data_dtype", "flop_formula", "clock"}) expect_string(c, k);
  for (const char* k : {"flops_per_iteration", "bytes_per_iteration", "prepare_s"}) expect_number(c, k, true);

  ASSERT_TRUE(doc.at("results").is_array());
  ASSERT_EQ(doc["results"].size(), 1u);
  const json& r = doc["results"][0];
  EXPECT_EQ(r.at("device"), "cpu");
  expect_string(r, "device_name");
  // The CPU it ran on is named as /proc/cpuinfo names it, in the result and in the machine block.
  EXPECT_EQ(r["device_name"], proc_cpu_model());
  EXPECT_EQ(machine["cpu_model"], proc_cpu_model());
  EXPECT_EQ(r.at("precision"), c["precision"]);
  EXPECT_EQ(r.at("threads"), 1);
  for (const char* phase : {"e_step", "m_step", "iteration"}) check_phase(r.at("phases").at(phase), iters);
  for (const char* phase : {"e_step", "iteration"}) check_metrics(r.at("metrics").at(phase));
  EXPECT_FALSE(r["metrics"].contains("m_step")) << "the M-step has no work model";

  const json& peak = r.at("peak");
  expect_number(peak, "gflop_per_s", true);
  EXPECT_EQ(peak.at("source"), "measured");
  expect_string(peak, "detail");

  const json& check = r.at("check");
  EXPECT_EQ(check.at("rows"), 2000);
  expect_number(check, "max_rel_error");
  expect_number(check, "bound", true);
  EXPECT_EQ(check.at("passed"), true);
  EXPECT_LE(check["max_rel_error"].get<double>(), check["bound"].get<double>());
  EXPECT_EQ(check.at("message"), "");
}

}  // namespace

TEST(BenchCli, TinyCpuRunMatchesSchema) { check_document(tiny_run(""), "gaussian_diag", 2); }

TEST(BenchCli, Fp64AndOtherFamiliesRun) {
  const json doc = tiny_run("--precision fp64 --family gaussian_full");
  check_document(doc, "gaussian_full", 2);
  EXPECT_EQ(doc["results"][0]["peak"]["detail"].get<std::string>().rfind("fp64", 0), 0u);
  // Every other registered family (its bench recipe comes with the family).
  for (const mixle::FamilyDescriptor* family : mixle::family_descriptors())
    if (family->family != mixle::Family::gaussian_diag && family->family != mixle::Family::gaussian_full)
      check_document(tiny_run(std::string("--family ") + family->name), family->name, 2);
  // The categories asked for are the ones benchmarked (not the default 4).
  EXPECT_EQ(tiny_run("--family categorical --categories 3").at("case").at("categories"), 3);
}

TEST(BenchCli, BadOptionsAreUsageErrors) {
  EXPECT_EQ(cli_exit_code("bench --no-such-flag"), 2);
  EXPECT_EQ(cli_exit_code("bench --rows 0"), 2);
  EXPECT_EQ(cli_exit_code("bench --rows abc"), 2);
  EXPECT_EQ(cli_exit_code("bench --family nonsense"), 2);
  EXPECT_EQ(cli_exit_code("bench --precision fp8"), 2);
  EXPECT_EQ(cli_exit_code("bench --device tpu"), 2);
  EXPECT_EQ(cli_exit_code("bench --iters 0"), 2);
  EXPECT_EQ(cli_exit_code("bench --family categorical --categories 1"), 2);
  EXPECT_EQ(cli_exit_code("bench --precision tf32"), 2);  // a CUDA mode; the default device is the CPU
}

TEST(BenchCli, CudaInCpuOnlyBuildIsNotCompiled) {
  if (MIXLE_HAVE_CUDA) GTEST_SKIP() << "built with CUDA: the NotCompiled path does not exist";
  const fs::path err = temp_path("err.txt");
  const int status = std::system((std::string(MIXLE_CLI_PATH) +
                                  " bench --rows 100 --dims 2 --components 2 "
                                  "--device cuda 2>" +
                                  err.string() + " >/dev/null")
                                     .c_str());
  EXPECT_EQ(WIFEXITED(status) ? WEXITSTATUS(status) : -1, 1);
  std::ifstream in(err);
  std::stringstream text;
  text << in.rdbuf();
  fs::remove(err);
  EXPECT_NE(text.str().find("built without cuda"), std::string::npos) << text.str();
}

TEST(BenchCli, JsonIsNotWrittenForUsageErrors) {
  const fs::path out = temp_path("never.json");
  EXPECT_EQ(cli_exit_code("bench --rows 0 --json " + out.string()), 2);
  EXPECT_FALSE(fs::exists(out));
}
