// In-process component-sharded EM (host/component_sharded_fit.hpp).
#include "host/component_sharded_fit.hpp"

#include "comms/thread_group.hpp"
#include "engine/component_sharded.hpp"
#include "engine/compute.hpp"
#include "engine/encoded_data.hpp"
#include "host/fit_driver.hpp"
#include "host/missing_values.hpp"
#include "host/stepwise_fit.hpp"

#include <mixle/error.hpp>

#include <algorithm>
#include <chrono>
#include <exception>
#include <thread>

namespace mixle::host {
namespace {

/// A wait at a rendezvous only outlasts this when a member hangs: members are threads of this
/// process, and one that fails abandons the group, so the others stop at once.
constexpr std::chrono::minutes kMemberTimeout{30};

bool spreads_over_gpus(const std::string& device) { return device == "cuda" || device == "auto"; }

}  // namespace

int default_shards(const std::string& device, int gpus) { return spreads_over_gpus(device) ? std::max(gpus, 2) : 2; }

int shard_threads(int threads, int cores, int shards) { return std::max(1, (threads > 0 ? threads : cores) / shards); }

std::string shard_device(const std::string& device, int g, int gpus) {
  if (spreads_over_gpus(device) && gpus > 0) return "cuda:" + std::to_string(g % gpus);
  return device;
}

FitResult fit_component_sharded(const Dataset& data, const FitOptions& options) {
  engine::refuse_reseed(engine::empty_policy_from_name(options.empty));
  if (options.num_workers < 0)
    throw InvalidInput("num_workers = " + std::to_string(options.num_workers) +
                       " for component_sharded: the number of component shards, ≥ 1 (0 = automatic)");
  const int gpus = engine::cuda_device_count();
  const int G = options.num_workers > 0 ? options.num_workers : default_shards(options.device, gpus);
  const int threads_each =
      shard_threads(options.threads, static_cast<int>(std::max(1u, std::thread::hardware_concurrency())), G);

  // Initialisation runs through the ordinary local handle, so the sharded fit starts from the
  // unsharded fit's initial model. The handle lives until the fit returns (fit_handle drives the
  // restarts through it); the shards read `data` itself.
  engine::EncodedDataOptions enc;
  enc.device = options.device;
  enc.threads = options.threads;
  const auto handle = engine::encoded_data(data, enc);

  FitHooks hooks;
  hooks.run_restart = [&](Model initial, const engine::EmOptions& em, double& final_rows, double& final_loglik) {
    const auto ranges = engine::component_ranges(initial.components(), G);
    const std::size_t largest = engine::largest_range(ranges);
    auto members = comms::make_thread_group(G, kMemberTimeout);
    std::vector<engine::EmResult> results(static_cast<std::size_t>(G));
    std::vector<std::exception_ptr> errors(static_cast<std::size_t>(G));
    std::vector<std::thread> threads;
    for (int g = 0; g < G; ++g)
      threads.emplace_back([&, g] {
        comms::Communicator& comm = *members[static_cast<std::size_t>(g)];
        try {
          const engine::RowRange own = ranges[static_cast<std::size_t>(g)];
          const engine::ShardMesh mesh = engine::make_shard_mesh(G, g, G);
          engine::ShardedEstimator estimator(data, 0, {engine::RowRange{0, data.rows()}}, mesh, largest, comm,
                                             engine::make_compute(shard_device(options.device, g, gpus), threads_each));
          engine::EmOptions mine = em;
          if (g != 0) mine.on_iteration = nullptr;  // progress once, from shard 0
          engine::EmResult r =
              engine::run_sharded_em(estimator, engine::slice_components(initial, own.begin, own.end), own.begin, mine);
          const engine::ShardEStep last = estimator.e_step(r.model, em.estimator);  // the final model's log-likelihood
          r.model = engine::gather_global_model(r.model, ranges, mesh, comm);
          r.warnings = engine::gather_warnings(r.warnings, comm);  // every shard's empty components
          if (g == 0) final_rows = last.rows, final_loglik = last.loglik;
          results[static_cast<std::size_t>(g)] = std::move(r);
        } catch (...) {
          errors[static_cast<std::size_t>(g)] = std::current_exception();
          comms::abandon_thread_group(comm);
        }
      });
    for (auto& t : threads) t.join();
    // The root cause first: a member's own error, not the others' "member g left the group".
    for (const auto& e : errors)
      if (e) try {
          std::rethrow_exception(e);
        } catch (const CommunicationError&) {
        } catch (...) {
          throw;
        }
    for (const auto& e : errors)
      if (e) std::rethrow_exception(e);
    return std::move(results[0]);
  };
  return fit_handle(*handle, options, hooks);
}

FitResult fit_component_sharded_rows(const Dataset& given, const FitOptions& options) {
  if (given.empty()) throw InvalidInput(given.source() + ": no data rows");
  if (options.batch_size > 0) validate_stepwise(options);  // refuses this backend, saying which run stepwise EM
  const DroppedRows kept = handle_missing_rows(given, options);
  refuse_all_missing(kept.count, given.rows(), given.source(), options);
  refuse_marginalise_sharded(options);
  FitResult result = fit_component_sharded(kept.data, options);
  note_missing_rows(result, options, kept.count, kept.first);
  return result;
}

std::unique_ptr<EncodedData> component_sharded_encoded_data(const Dataset& data, const EncodedDataOptions&) {
  throw InvalidInput("encoded_data: the component_sharded backend holds its shards only while fit runs, so " +
                     data.source() +
                     " cannot be encoded for it — fit the Dataset with FitOptions::backend = \"component_sharded\", "
                     "or encode with local, distributed or component_parallel");
}

}  // namespace mixle::host
