// The bench table and JSON document. Field names and meanings are defined in bench/README.md;
// change both together and bump kSchemaVersion when a field changes meaning.
#include "host/bench/report.hpp"

#include <mixle/family.hpp>
#include <mixle/version.hpp>

#include <nlohmann/json.hpp>

#include <sys/utsname.h>

#include <cmath>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <thread>

namespace mixle::host::bench {
namespace {

using nlohmann::json;

std::string utc_now() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[sizeof "2026-12-04T12:00:00Z"];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::vector<std::string> build_features() {
  std::vector<std::string> f{"cpu"};
  // A simulator build's CUDA timings are CPU timings of the simulator: the feature says so.
  if (MIXLE_HAVE_CUDA) f.push_back(MIXLE_CUDA_SIM ? "cuda-simulated" : "cuda");
  if (MIXLE_HAVE_NCCL) f.push_back("nccl");
  if (MIXLE_HAVE_GLOO) f.push_back("gloo");
  if (MIXLE_HAVE_MPI) f.push_back("mpi");
  return f;
}

json phase_json(const PhaseTimings& t) {
  return {{"min_s", t.min}, {"median_s", t.median}, {"mean_s", t.mean}, {"max_s", t.max}, {"samples_s", t.samples}};
}

json metrics_json(const PhaseMetrics& m) {
  return {{"flops", m.flops},
          {"bytes", m.bytes},
          {"rows_per_s", m.rows_per_s},
          {"nkd_per_s", m.nkd_per_s},
          {"gflop_per_s", m.gflop_per_s},
          {"gb_per_s", m.gb_per_s},
          {"peak_fraction", m.peak_fraction}};
}

json result_json(const BenchResult& r) {
  return {
      {"device", r.device},
      {"device_name", r.device_name},
      {"precision", engine::precision_name(r.precision)},
      {"threads", r.threads},
      {"phases",
       {{"e_step", phase_json(r.e_step)}, {"m_step", phase_json(r.m_step)}, {"iteration", phase_json(r.iteration)}}},
      {"metrics", {{"e_step", metrics_json(r.e_step_metrics)}, {"iteration", metrics_json(r.iteration_metrics)}}},
      {"peak", {{"gflop_per_s", r.peak.gflop_per_s}, {"source", r.peak.source}, {"detail", r.peak.detail}}},
      {"check",
       {{"rows", r.check.rows},
        {"max_rel_error", std::isfinite(r.check.max_rel_error) ? json(r.check.max_rel_error) : json(nullptr)},
        {"bound", r.check.bound},
        {"passed", r.check.passed},
        {"message", r.check.message}}},
      {"pairs",
       {{"evaluated", r.evaluated_pairs},
        {"total", r.pairs},
        {"evaluated_share", r.pairs > 0 ? json(static_cast<double>(r.evaluated_pairs) / r.pairs) : json(nullptr)},
        {"zero_responsibility_share", r.zero_responsibility_share}}}};
}

}  // namespace

MachineInfo machine_info() {
  MachineInfo m;
  m.cpu_model = cpu_model_name();
  m.logical_cpus = static_cast<int>(std::thread::hardware_concurrency());
  std::ifstream meminfo("/proc/meminfo");
  std::string key;
  long long kb = 0;
  while (meminfo >> key >> kb) {
    if (key == "MemTotal:") {
      m.memory_bytes = kb * 1024;
      break;
    }
    meminfo.ignore(256, '\n');
  }
  utsname u{};
  if (uname(&u) == 0) m.os = std::string(u.sysname) + " " + u.release + " " + u.machine;
  return m;
}

std::string format_json(const PreparedCase& p, const std::vector<BenchResult>& results) {
  const BenchCase& c = p.spec;
  const WorkModel w = work_model(c, p.evaluated);
  const MachineInfo m = machine_info();
  json doc;
  doc["format"] = "mixle-bench";
  doc["schema_version"] = kSchemaVersion;
  doc["date"] = utc_now();
  doc["machine"] = {
      {"cpu_model", m.cpu_model}, {"logical_cpus", m.logical_cpus}, {"memory_bytes", m.memory_bytes}, {"os", m.os}};
#ifdef MIXLE_BUILD_TYPE
  const char* build_type = MIXLE_BUILD_TYPE;
#else
  const char* build_type = "unknown";
#endif
  doc["build"] = {{"version", MIXLE_VERSION_STRING},
                  {"features", build_features()},
                  {"compiler", std::string("gcc-compatible ") + __VERSION__},
                  {"build_type", build_type}};
  doc["case"] = {{"family", family_name(c.family)},
                 {"rows", c.rows},
                 {"dims", c.dims},
                 {"components", c.components},
                 {"categories", family_descriptor(c.family).categories ? c.categories : 0},
                 {"precision", engine::precision_name(c.precision)},
                 {"data_dtype", "f32"},
                 {"threads_requested", c.threads},
                 {"iters", c.iters},
                 {"warmup", c.warmup},
                 {"seed", c.seed},
                 {"centre_scale", c.centre_scale},
                 {"prune", c.prune == engine::Prune::automatic ? "auto" : "off"},
                 {"statistics", w.statistics},
                 {"flop_formula", flop_formula(family_descriptor(c.family).flops)},
                 {"flops_per_iteration", w.flops},
                 {"bytes_per_iteration", w.bytes},
                 {"clock", "steady_clock around synchronous calls"},
                 {"prepare_s", p.prepare_seconds}};
  json rs = json::array();
  for (const BenchResult& r : results) rs.push_back(result_json(r));
  doc["results"] = rs;
  return doc.dump(1) + "\n";
}

std::string format_table(const PreparedCase& p, const std::vector<BenchResult>& results) {
  const BenchCase& c = p.spec;
  const WorkModel w = work_model(c, p.evaluated);
  std::string out;
  char line[512];
  auto add = [&](const char* fmt, auto... args) {
    std::snprintf(line, sizeof line, fmt, args...);
    out += line;
  };
  add("# mixle bench: %s  N=%zu D=%zu K=%zu%s  precision %s  data f32\n", family_name(c.family), c.rows, c.dims,
      c.components, family_descriptor(c.family).categories ? (" V=" + std::to_string(c.categories)).c_str() : "",
      engine::precision_name(c.precision));
  add("# %d timed repetitions per phase after %d warm-up iterations; steady_clock, synchronous calls\n", c.iters,
      c.warmup);
  add("# means %g·N(0,1) per dimension (Gaussian families); exact pruning %s\n", c.centre_scale,
      c.prune == engine::Prune::automatic ? "auto" : "off");
  add("# model per iteration: %.4g flop (%s), %.4g bytes (data once + %lld float64 statistics)\n", w.flops,
      flop_formula(family_descriptor(c.family).flops).c_str(), w.bytes, static_cast<long long>(w.statistics));
  add("#\n# %-8s %-10s %10s %10s %10s %11s %11s %9s %8s %7s\n", "device", "phase", "min ms", "median ms", "mean ms",
      "rows/s", "NKD/s", "GFLOP/s", "GB/s", "%peak");
  for (const BenchResult& r : results) {
    auto row = [&](const char* phase, const PhaseTimings& t, const PhaseMetrics* m) {
      add("  %-8s %-10s %10.4g %10.4g %10.4g", r.device.c_str(), phase, 1e3 * t.min, 1e3 * t.median, 1e3 * t.mean);
      if (m) {
        add(" %11.4g %11.4g %9.2f %8.2f", m->rows_per_s, m->nkd_per_s, m->gflop_per_s, m->gb_per_s);
        if (r.peak.gflop_per_s > 0)
          add(" %6.1f%%\n", 100.0 * m->peak_fraction);
        else
          add(" %7s\n", "n/a");
      } else {
        add(" %11s %11s %9s %8s %7s\n", "-", "-", "-", "-", "-");
      }
    };
    row("e_step", r.e_step, &r.e_step_metrics);
    row("m_step", r.m_step, nullptr);
    row("iteration", r.iteration, &r.iteration_metrics);
  }
  out += "#\n";
  for (const BenchResult& r : results) {
    add("# %s: %s; peak %.1f GFLOP/s (%s: %s)\n", r.device.c_str(), r.device_name.c_str(), r.peak.gflop_per_s,
        r.peak.source.c_str(), r.peak.detail.c_str());
    if (r.pairs > 0)
      add("# %s pairs: %.4g%% of the (row, component) pairs evaluated (%.3g a row); %.4g%% of the responsibilities "
          "exactly 0\n",
          r.device.c_str(), 100.0 * static_cast<double>(r.evaluated_pairs) / static_cast<double>(r.pairs),
          static_cast<double>(r.evaluated_pairs) / static_cast<double>(c.rows), 100.0 * r.zero_responsibility_share);
    add("# %s check: statistics of %zu rows of the overlapping case (means %g·N(0,1)) vs the CPU fp64 oracle: max "
        "rel error %.3g, bound %.3g: %s%s%s\n",
        r.device.c_str(), r.check.rows, kOverlappingCentreScale, r.check.max_rel_error, r.check.bound,
        r.check.passed ? "passed" : "FAILED", r.check.message.empty() ? "" : " — ", r.check.message.c_str());
  }
  return out;
}

std::string failed_checks_line(const std::vector<BenchResult>& results) {
  int failed = 0;
  for (const BenchResult& r : results) failed += r.check.passed ? 0 : 1;
  if (!failed) return "";
  return std::to_string(failed) + " device check" + (failed == 1 ? "" : "s") + " FAILED (see the table)";
}

int report_failed_checks(const std::vector<BenchResult>& results, std::FILE* err) {
  const std::string failed = failed_checks_line(results);
  if (failed.empty()) return 0;
  std::fprintf(err, "mixle: bench: %s\n", failed.c_str());
  return 1;
}

}  // namespace mixle::host::bench
