// The CPU Compute: packs the model and calls kernels/cpu.
#include "engine/compute.hpp"
#include "engine/prune_policy.hpp"
#include "kernels/cpu/cpu_kernels.hpp"

#include <mixle/error.hpp>

#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <chrono>

namespace mixle::engine {
namespace {

constexpr const char* kNoTf32 = "precision tf32 is a CUDA tensor-core mode; the CPU kernels compute fp32 or fp64";

class CpuCompute final : public Compute {
 public:
  CpuCompute(int threads, int component_workers, Prune prune) : prune_(prune) {
    options_.threads = threads;
    options_.component_workers = component_workers;
  }
  std::string name() const override { return "cpu"; }

  kernels::PassReport accumulate(const Model& model, const Dataset& rows, Precision precision,
                                 std::vector<double>& stats) override {
    if (precision == Precision::fp64) return run<double>(model, rows, stats);
    if (precision == Precision::tf32) throw InvalidInput(kNoTf32);
    return run<float>(model, rows, stats);
  }

  kernels::PassReport score(const Model& model, const Dataset& rows, Precision precision, double* loglik,
                            double* resp) override {
    if (precision == Precision::fp64) return score_as<double>(model, rows, loglik, resp);
    if (precision == Precision::tf32) throw InvalidInput(kNoTf32);
    return score_as<float>(model, rows, loglik, resp);
  }

  void accumulate_given(const Model& model, const Dataset& rows, const double* resp,
                        std::vector<double>& stats) override {
    const auto packed = pack_model<double>(model, rows.cols(), /*zero_shift=*/true);
    if (rows.dtype() == DType::f32)
      kernels::cpu::accumulate_given(packed.view, rows.as<float>(), rows.rows(), rows.cols(), resp, stats.data(),
                                     weighted(rows));
    else
      kernels::cpu::accumulate_given(packed.view, rows.as<double>(), rows.rows(), rows.cols(), resp, stats.data(),
                                     weighted(rows));
  }

  void accumulate_labelled(const Model& model, const Dataset& rows, const std::size_t* labels,
                           std::vector<double>& stats) override {
    const auto packed = pack_model<double>(model, rows.cols(), /*zero_shift=*/true);
    if (rows.dtype() == DType::f32)
      kernels::cpu::accumulate_labelled(packed.view, rows.as<float>(), rows.rows(), rows.cols(), labels, stats.data(),
                                        weighted(rows));
    else
      kernels::cpu::accumulate_labelled(packed.view, rows.as<double>(), rows.rows(), rows.cols(), labels, stats.data(),
                                        weighted(rows));
  }

  void accumulate_normalised(const Model& model, const Dataset& rows, Precision precision, const double* log_norm,
                             std::vector<double>& stats) override {
    if (precision == Precision::fp64) return normalised<double>(model, rows, log_norm, stats);
    if (precision == Precision::tf32) throw InvalidInput(kNoTf32);
    normalised<float>(model, rows, log_norm, stats);
  }

  std::size_t kept_bytes_per_row(std::size_t components, Precision precision) const override {
    return components * (precision == Precision::fp64 ? sizeof(double) : sizeof(float));
  }

  kernels::PassReport score_keeping(const Model& model, const Dataset& rows, Precision precision, double* loglik,
                                    std::vector<unsigned char>& kept) override {
    if (precision == Precision::fp64) return keep_as<double>(model, rows, loglik, kept);
    if (precision == Precision::tf32) throw InvalidInput(kNoTf32);
    return keep_as<float>(model, rows, loglik, kept);
  }

  void accumulate_normalised_kept(const Model& model, const Dataset& rows, Precision precision, const double* log_norm,
                                  std::vector<unsigned char>& kept, std::vector<double>& stats) override {
    if (precision == Precision::fp64) return fold_kept<double>(model, rows, log_norm, kept, stats);
    if (precision == Precision::tf32) throw InvalidInput(kNoTf32);
    fold_kept<float>(model, rows, log_norm, kept, stats);
  }

 private:
  template <class T>
  kernels::PassReport run(const Model& model, const Dataset& rows, std::vector<double>& stats) {
    const auto packed = pack_model<T>(model, rows.cols());
    kernels::cpu::Options options = weighted(rows);
    if (prune_ == Prune::automatic) {
      const PrunePolicy::Pass pass = policy_.next(rows);
      options.anchors = pass.anchors;
      options.prune = pass.prune;
    }
    const auto start = std::chrono::steady_clock::now();
    const kernels::PassReport report =
        rows.dtype() == DType::f32
            ? kernels::cpu::accumulate(packed.view, rows.as<float>(), rows.rows(), rows.cols(), stats.data(), options)
            : kernels::cpu::accumulate(packed.view, rows.as<double>(), rows.rows(), rows.cols(), stats.data(), options);
    if (prune_ == Prune::automatic)
      policy_.done(report, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    return report;
  }

  template <class T>
  kernels::PassReport keep_as(const Model& model, const Dataset& rows, double* loglik,
                              std::vector<unsigned char>& kept) {
    const auto packed = pack_model<T>(model, rows.cols());
    // Whole blocks (the kernels' layout): a little more than rows × kept_bytes_per_row.
    kept.resize(kernels::cpu::log_density_cache_size(rows.rows(), packed.view.components) * sizeof(T));
    T* cache = reinterpret_cast<T*>(kept.data());
    if (rows.dtype() == DType::f32)
      return kernels::cpu::score_keeping(packed.view, rows.as<float>(), rows.rows(), rows.cols(), loglik, cache,
                                         options_);
    return kernels::cpu::score_keeping(packed.view, rows.as<double>(), rows.rows(), rows.cols(), loglik, cache,
                                       options_);
  }

  template <class T>
  void fold_kept(const Model& model, const Dataset& rows, const double* log_norm, std::vector<unsigned char>& kept,
                 std::vector<double>& stats) {
    const auto packed = pack_model<T>(model, rows.cols());
    if (kept.size() != kernels::cpu::log_density_cache_size(rows.rows(), packed.view.components) * sizeof(T))
      throw InvalidInput("accumulate_normalised_kept: the kept log-densities are not those of these rows and model");
    T* cache = reinterpret_cast<T*>(kept.data());
    if (rows.dtype() == DType::f32)
      kernels::cpu::accumulate_normalised_kept(packed.view, rows.as<float>(), rows.rows(), rows.cols(), cache, log_norm,
                                               stats.data(), weighted(rows));
    else
      kernels::cpu::accumulate_normalised_kept(packed.view, rows.as<double>(), rows.rows(), rows.cols(), cache,
                                               log_norm, stats.data(), weighted(rows));
  }

  template <class T>
  void normalised(const Model& model, const Dataset& rows, const double* log_norm, std::vector<double>& stats) {
    const auto packed = pack_model<T>(model, rows.cols());
    if (rows.dtype() == DType::f32)
      kernels::cpu::accumulate_normalised(packed.view, rows.as<float>(), rows.rows(), rows.cols(), log_norm,
                                          stats.data(), weighted(rows));
    else
      kernels::cpu::accumulate_normalised(packed.view, rows.as<double>(), rows.rows(), rows.cols(), log_norm,
                                          stats.data(), weighted(rows));
  }

  template <class T>
  kernels::PassReport score_as(const Model& model, const Dataset& rows, double* loglik, double* resp) {
    const auto packed = pack_model<T>(model, rows.cols());
    if (rows.dtype() == DType::f32)
      return kernels::cpu::score(packed.view, rows.as<float>(), rows.rows(), rows.cols(), loglik, resp, options_);
    return kernels::cpu::score(packed.view, rows.as<double>(), rows.rows(), rows.cols(), loglik, resp, options_);
  }

  /// The pass options for `rows`: their sample weights, if any, fold into the statistics.
  kernels::cpu::Options weighted(const Dataset& rows) const {
    kernels::cpu::Options o = options_;
    o.weights = rows.weights();
    return o;
  }

  kernels::cpu::Options options_;
  Prune prune_;
  PrunePolicy policy_;
};

}  // namespace

void Compute::accumulate_labelled(const Model& model, const Dataset& rows, const std::size_t* labels,
                                  std::vector<double>& stats) {
  const std::size_t K = model.components();
  std::vector<double> resp(rows.rows() * K, 0.0);
  for (std::size_t i = 0; i < rows.rows(); ++i) resp[i * K + labels[i]] = 1.0;
  accumulate_given(model, rows, resp.data(), stats);
}

void Compute::accumulate_normalised(const Model&, const Dataset&, Precision, const double*, std::vector<double>&) {
  // Not pure: a Compute (the CUDA one is a separate file) need not implement it to build.
  throw NotCompiled("component-sharded statistics on the \"" + name() + "\" Compute");
}

// A Compute that does not keep log-densities recomputes them: the fallbacks are the plain passes.
std::size_t Compute::kept_bytes_per_row(std::size_t, Precision) const { return 0; }

kernels::PassReport Compute::score_keeping(const Model& model, const Dataset& rows, Precision precision, double* loglik,
                                           std::vector<unsigned char>& kept) {
  kept.clear();
  return score(model, rows, precision, loglik, nullptr);
}

void Compute::accumulate_normalised_kept(const Model& model, const Dataset& rows, Precision precision,
                                         const double* log_norm, std::vector<unsigned char>&,
                                         std::vector<double>& stats) {
  accumulate_normalised(model, rows, precision, log_norm, stats);
}

bool Compute::all_reduce_statistics(comms::Communicator&, std::vector<double>&) { return false; }

std::unique_ptr<Compute> make_cpu_compute(int threads, int component_workers, Prune prune) {
  return std::make_unique<CpuCompute>(threads, component_workers, prune);
}

Prune prune_from_name(const std::string& name) {
  if (name == "auto") return Prune::automatic;
  if (name == "off") return Prune::off;
  throw InvalidInput("prune \"" + name +
                     "\": accepted: auto (exact pruning of the E-step), off (every pair evaluated)");
}

std::optional<int> cuda_index(std::string_view device) {
  if (device == "cuda") return 0;
  if (!device.starts_with("cuda:")) return std::nullopt;
  int index = -1;
  const char* first = device.data() + 5;
  const char* last = device.data() + device.size();
  auto [ptr, ec] = std::from_chars(first, last, index);
  if (ec != std::errc() || ptr != last || index < 0)
    throw InvalidInput("--device \"" + std::string(device) + "\": expected cuda:<index> with index ≥ 0");
  return index;
}

std::string resolve_device(std::string_view device, int (*count_gpus)()) {
  if (device != "auto") return std::string(device);
  return count_gpus() > 0 ? "cuda:0" : "cpu";
}

std::unique_ptr<Compute> make_compute(const std::string& given, int threads, Prune prune) {
  const std::string device = resolve_device(given);
  if (device == "cpu") return make_cpu_compute(threads, 1, prune);
  if (const std::optional<int> index = cuda_index(device)) return make_cuda_compute(*index);
  throw InvalidInput("unknown device \"" + device + "\"; accepted: auto, cpu, cuda, cuda:<index>");
}

std::uint64_t f32_copy_bytes(std::string_view device, Precision precision, const Dataset& rows) {
  const bool gpu = resolve_device(device).starts_with("cuda");
  if (!gpu || precision == Precision::fp64 || rows.dtype() != DType::f64) return 0;
  const std::uint64_t bytes = std::uint64_t{rows.rows()} * rows.cols() * sizeof(float);
  const auto memory =
      static_cast<std::uint64_t>(sysconf(_SC_PHYS_PAGES)) * static_cast<std::uint64_t>(sysconf(_SC_PAGE_SIZE));
  return bytes <= memory / 8 ? bytes : 0;
}

}  // namespace mixle::engine
