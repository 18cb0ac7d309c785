// Device peaks for "% of peak": the CPU's is measured in the same run by an FMA
// micro-benchmark (what this core, ISA and thread count can actually issue), a GPU's comes from
// the vendor datasheet by device name. Either way the result says which.
#include "host/bench/bench.hpp"

#include "host/resources_discovery.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <numeric>
#include <thread>
#include <vector>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define MIXLE_BENCH_X86 1
#else
#define MIXLE_BENCH_X86 0
#endif

namespace mixle::host::bench {
namespace {

using Clock = std::chrono::steady_clock;
constexpr int kChains = kFmaChains;
constexpr long kChunk = 1 << 16;  // loop trips between clock reads

// Each kernel is an FmaKernel (bench.hpp): its sum depends on every chain, so the compiler keeps
// them all. a ← a·b + c converges to its fixed point c/(1 − b) = 1; nothing overflows. Chains
// start at 2, 3, …: one started at 1 would stay there, and a chain left out would go unseen.
#if MIXLE_BENCH_X86
#define MIXLE_FMA_KERNEL(NAME, TARGET, VEC, SET1, FMA, STORE_T, LANES, SCALAR)              \
  __attribute__((target(TARGET))) double NAME(long trips) {                                 \
    VEC a[kChains];                                                                         \
    for (int j = 0; j < kChains; ++j) a[j] = SET1(static_cast<SCALAR>(2 + j));              \
    const VEC b = SET1(static_cast<SCALAR>(0.999999)), c = SET1(static_cast<SCALAR>(1e-6)); \
    for (long i = 0; i < trips; ++i) {                                                      \
      /* fully unrolled, so the chains live in registers, not in memory */                  \
      _Pragma("GCC unroll 16") for (int j = 0; j < kChains; ++j) a[j] = FMA(a[j], b, c);    \
    }                                                                                       \
    alignas(64) SCALAR out[LANES];                                                          \
    double sum = 0.0;                                                                       \
    for (int j = 0; j < kChains; ++j) {                                                     \
      STORE_T(out, a[j]);                                                                   \
      for (int l = 0; l < LANES; ++l) sum += out[l];                                        \
    }                                                                                       \
    return sum;                                                                             \
  }
MIXLE_FMA_KERNEL(fma_avx512_f32, "avx512f", __m512, _mm512_set1_ps, _mm512_fmadd_ps, _mm512_store_ps, 16, float)
MIXLE_FMA_KERNEL(fma_avx512_f64, "avx512f", __m512d, _mm512_set1_pd, _mm512_fmadd_pd, _mm512_store_pd, 8, double)
MIXLE_FMA_KERNEL(fma_avx2_f32, "avx2,fma", __m256, _mm256_set1_ps, _mm256_fmadd_ps, _mm256_store_ps, 8, float)
MIXLE_FMA_KERNEL(fma_avx2_f64, "avx2,fma", __m256d, _mm256_set1_pd, _mm256_fmadd_pd, _mm256_store_pd, 4, double)
#undef MIXLE_FMA_KERNEL
#endif

double fma_scalar(long trips) {
  std::array<double, kChains> a{};
  for (int j = 0; j < kChains; ++j) a[j] = 2 + j;
  for (long i = 0; i < trips; ++i) {
#pragma GCC unroll 16
    for (int j = 0; j < kChains; ++j) a[j] = std::fma(a[j], 0.999999, 1e-6);
  }
  return std::accumulate(a.begin(), a.end(), 0.0);
}

}  // namespace

VectorIsa this_cpu_isa() {
  VectorIsa isa;
#if MIXLE_BENCH_X86
  __builtin_cpu_init();
  isa.avx512f = __builtin_cpu_supports("avx512f");
  isa.avx2 = __builtin_cpu_supports("avx2");
  isa.fma = __builtin_cpu_supports("fma");
#endif
  return isa;
}

std::vector<FmaKernel> fma_kernels(engine::Precision precision, [[maybe_unused]] const VectorIsa& isa) {
  const bool fp64 = precision == engine::Precision::fp64;
  std::vector<FmaKernel> kernels;
#if MIXLE_BENCH_X86
  if (isa.avx512f)
    kernels.push_back(fp64 ? FmaKernel{fma_avx512_f64, 8, true, "avx512f"}
                           : FmaKernel{fma_avx512_f32, 16, false, "avx512f"});
  if (isa.avx2 && isa.fma)
    kernels.push_back(fp64 ? FmaKernel{fma_avx2_f64, 4, true, "avx2+fma"}
                           : FmaKernel{fma_avx2_f32, 8, false, "avx2+fma"});
#else
  (void)fp64;
#endif
  kernels.push_back(FmaKernel{fma_scalar, 1, true, "scalar"});
  return kernels;
}

std::vector<FmaKernel> fma_kernels(engine::Precision precision) { return fma_kernels(precision, this_cpu_isa()); }

double fma_flops(const FmaKernel& k, long trips) noexcept {
  return 2.0 * kFmaChains * k.lanes * static_cast<double>(trips);
}

double trial_rate(const std::vector<double>& flops, const std::vector<double>& spans) {
  double span = 0.0;
  for (const double s : spans) span = std::max(span, s);
  return span > 0.0 ? std::accumulate(flops.begin(), flops.end(), 0.0) / span : 0.0;
}

namespace {

std::atomic<double> g_sink{0.0};  // keeps the kernels' results alive

// One trial: all threads start together and run until `seconds` have passed; flop/s of the
// slowest thread's span, so a descheduled thread lowers the figure instead of hiding.
double trial(const FmaKernel& k, int threads, double seconds) {
  std::atomic<int> ready{0};
  std::atomic<bool> go{false};
  std::vector<double> flops(static_cast<std::size_t>(threads), 0.0), spans(flops.size(), 0.0);
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      ++ready;
      while (!go.load()) std::this_thread::yield();
      const auto t0 = Clock::now();
      long trips = 0;
      double span = 0.0, sink = 0.0;
      do {
        sink += k.run(kChunk);
        trips += kChunk;
        span = std::chrono::duration<double>(Clock::now() - t0).count();
      } while (span < seconds);
      flops[static_cast<std::size_t>(t)] = fma_flops(k, trips);
      spans[static_cast<std::size_t>(t)] = span;
      g_sink.store(sink);
    });
  }
  while (ready.load() < threads) std::this_thread::yield();
  go = true;
  for (auto& th : pool) th.join();
  return trial_rate(flops, spans);
}

}  // namespace

Peak measure_cpu_peak(engine::Precision precision, int threads, double seconds) {
  if (threads <= 0) threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const bool fp64 = precision == engine::Precision::fp64;
  const FmaKernel k = fma_kernels(precision).front();
  constexpr int kTrials = 3;
  std::vector<double> trials;  // FLOP/s of each; the detail counts those that ran
  for (int i = 0; i < kTrials; ++i) trials.push_back(trial(k, threads, seconds / kTrials));
  Peak p;
  p.gflop_per_s = giga(*std::max_element(trials.begin(), trials.end()));
  p.source = "measured";
  p.detail = std::string(fp64 ? "fp64" : "fp32") + " FMA micro-benchmark, " + k.isa + ", " + std::to_string(threads) +
             " thread" + (threads == 1 ? "" : "s") + ", best of " + std::to_string(trials.size());
  return p;
}

Peak datasheet_peak(const std::string& gpu_name, engine::Precision precision) {
  // Dense (no sparsity) vendor figures, TFLOP/s: SIMT fp32, SIMT fp64, TF32 tensor.
  struct Entry {
    const char* key;
    const char* label;
    double fp32, fp64, tf32;
  };
  static const Entry table[] = {
      {"H200", "H200 SXM", 67.0, 34.0, 494.7}, {"H100 PCIE", "H100 PCIe", 51.2, 25.6, 378.0},
      {"H100", "H100 SXM", 67.0, 34.0, 494.7}, {"A100", "A100", 19.5, 9.7, 156.0},
      {"L40S", "L40S", 91.6, 1.4, 183.0},
  };
  std::string upper = gpu_name;
  std::transform(upper.begin(), upper.end(), upper.begin(), [](unsigned char ch) { return std::toupper(ch); });
  Peak p;
  for (const Entry& e : table) {
    if (upper.find(e.key) == std::string::npos) continue;
    const double tf = precision == engine::Precision::fp64   ? e.fp64
                      : precision == engine::Precision::tf32 ? e.tf32
                                                             : e.fp32;
    const char* what = precision == engine::Precision::fp64   ? "FP64 (non-tensor)"
                       : precision == engine::Precision::tf32 ? "TF32 tensor, dense"
                                                              : "FP32 (non-tensor)";
    p.gflop_per_s = tf * 1e3;
    p.source = "datasheet";
    char buf[160];
    std::snprintf(buf, sizeof buf, "NVIDIA datasheet, %s %s: %.1f TFLOP/s", e.label, what, tf);
    p.detail = buf;
    return p;
  }
  p.source = "unknown";
  p.detail = "no datasheet entry for \"" + gpu_name + "\"";
  return p;
}

std::string cuda_device_name(int index) {
  // Resource discovery's runtime query (empty in a CPU-only build or without a device).
  const std::vector<CudaDeviceInfo> devices = cuda_devices();
  if (index < 0 || static_cast<std::size_t>(index) >= devices.size()) return "unknown";
  return devices[static_cast<std::size_t>(index)].product;
}

std::string cpu_model_name() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) != 0) continue;
    const auto colon = line.find(':');
    if (colon == std::string::npos) break;
    std::string v = line.substr(colon + 1);
    v.erase(0, v.find_first_not_of(" \t"));
    return v;
  }
  return "unknown";
}

}  // namespace mixle::host::bench
