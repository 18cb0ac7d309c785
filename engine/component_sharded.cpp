// Component-sharded EM (engine/component_sharded.hpp, docs/sharding.md).
#include "engine/component_sharded.hpp"
#include "engine/error_marks.hpp"
#include "engine/report.hpp"

#include <mixle/error.hpp>
#include <mixle/family.hpp>
#include <mixle/plan/placement.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <exception>
#include <limits>

namespace mixle::engine {
namespace {

constexpr double kNegInf = -std::numeric_limits<double>::infinity();

/// The arrays of a part that hold parameters, in a fixed order (flattening, byte counts).
/// The part's parameter arrays, as its family's descriptor lists them.
std::vector<std::vector<double>*> part_arrays(Part& p) {
  std::vector<std::vector<double>*> out;
  for (const ParamDescriptor& param : family_descriptor(p.family).params) out.push_back(&(p.*param.values));
  return out;
}
std::vector<const std::vector<double>*> part_arrays(const Part& p) {
  std::vector<const std::vector<double>*> out;
  for (const ParamDescriptor& param : family_descriptor(p.family).params) out.push_back(&(p.*param.values));
  return out;
}

}  // namespace

ShardMesh make_shard_mesh(int world, int rank, int groups) {
  if (groups < 1 || groups > world || world % groups != 0)
    throw UsageError("--shard-components " + std::to_string(groups) + " with " + std::to_string(world) +
                     " rank(s): G must be between 1 and the world size and divide it (world = data groups × G)");
  ShardMesh mesh;
  mesh.world = world;
  mesh.groups = groups;
  mesh.data_groups = world / groups;
  mesh.rank = rank;
  return mesh;
}

std::vector<RowRange> component_ranges(std::size_t K, int groups, const plan::Resources* resources) {
  if (K < static_cast<std::size_t>(groups))
    throw UsageError("--shard-components " + std::to_string(groups) +
                     " needs at least as many components; K = " + std::to_string(K));
  std::vector<plan::DeviceSpec> devices;
  for (int g = 0; g < groups; ++g) {
    if (resources && static_cast<std::size_t>(g) < resources->size()) {
      devices.push_back(resources->devices()[static_cast<std::size_t>(g)]);
    } else {
      plan::DeviceSpec d;
      d.name = "rank:" + std::to_string(g);
      devices.push_back(d);
    }
  }
  // Only the ranges matter here (not bytes): a one-column summary never trips a capacity check.
  plan::ModelSummary summary;
  summary.components = K;
  summary.parts = {plan::PartSummary{"gaussian_diag", 1, 0}};
  const auto shards = plan::model_sharding_plan(summary, plan::Resources(devices));
  if (shards.size() != static_cast<std::size_t>(groups))
    throw UsageError("model_sharding_plan cut K = " + std::to_string(K) + " into " + std::to_string(shards.size()) +
                     " shards, not the " + std::to_string(groups) + " of --shard-components");
  std::vector<RowRange> out;
  for (const auto& s : shards) out.push_back({s.component_start, s.component_stop});
  return out;
}

Model slice_components(const Model& model, std::size_t begin, std::size_t end) {
  const std::size_t K = model.components();
  if (!(begin < end && end <= K))
    throw InvalidInput("component range [" + std::to_string(begin) + ", " + std::to_string(end) +
                       ") is not a non-empty part of [0, " + std::to_string(K) + ")");
  Model out;
  out.weights.assign(model.weights.begin() + static_cast<std::ptrdiff_t>(begin),
                     model.weights.begin() + static_cast<std::ptrdiff_t>(end));
  for (const Part& p : model.parts) {
    Part q = p;
    auto dst = part_arrays(q);
    auto src = part_arrays(p);
    for (std::size_t a = 0; a < dst.size(); ++a) {
      if (src[a]->empty()) continue;
      const std::size_t m = src[a]->size() / K;  // values per component
      dst[a]->assign(src[a]->begin() + static_cast<std::ptrdiff_t>(begin * m),
                     src[a]->begin() + static_cast<std::ptrdiff_t>(end * m));
    }
    out.parts.push_back(std::move(q));
  }
  return out;
}

std::uint64_t model_parameter_bytes(const Model& model) {
  std::uint64_t values = model.weights.size();
  for (const Part& p : model.parts)
    for (const auto* a : part_arrays(p)) values += a->size();
  return values * sizeof(double);
}

Model gather_global_model(const Model& shard, const std::vector<RowRange>& ranges, const ShardMesh& mesh,
                          comms::Communicator& comm, int root) {
  const std::size_t K = shard.components();
  // Values per component (the same in every shard: all shards share the parts' structure).
  std::size_t per_component = 1;
  for (const Part& p : shard.parts)
    for (const auto* a : part_arrays(p)) per_component += a->size() / K;
  Model global;
  if (comm.rank() == root) {
    global.parts = shard.parts;
    for (Part& p : global.parts)
      for (auto* a : part_arrays(p)) a->clear();
  }
  std::vector<double> buffer;
  for (std::size_t c = 0; c < ranges.size(); ++c) {
    const std::size_t Kc = ranges[c].end - ranges[c].begin;
    buffer.assign(Kc * per_component, 0.0);
    const int owner = static_cast<int>(c);  // component group c of data group 0
    if (comm.rank() == owner) {
      // Layout: weights [Kc], then each part's arrays in part_arrays order (K leading).
      std::size_t at = 0;
      for (double w : shard.weights) buffer[at++] = w;
      for (const Part& p : shard.parts)
        for (const auto* a : part_arrays(p))
          for (double v : *a) buffer[at++] = v;
    }
    comm.broadcast(std::span<double>(buffer), owner);
    if (comm.rank() != root) continue;
    std::size_t at = 0;
    global.weights.insert(global.weights.end(), buffer.begin(), buffer.begin() + static_cast<std::ptrdiff_t>(Kc));
    at += Kc;
    for (std::size_t i = 0; i < global.parts.size(); ++i) {
      auto dst = part_arrays(global.parts[i]);
      auto src = part_arrays(shard.parts[i]);
      for (std::size_t a = 0; a < dst.size(); ++a) {
        const std::size_t n = src[a]->size() / K * Kc;
        dst[a]->insert(dst[a]->end(), buffer.begin() + static_cast<std::ptrdiff_t>(at),
                       buffer.begin() + static_cast<std::ptrdiff_t>(at + n));
        at += n;
      }
    }
  }
  (void)mesh;
  return global;
}

std::vector<std::string> gather_warnings(const std::vector<std::string>& warnings, comms::Communicator& comm) {
  std::string mine;
  for (const auto& w : warnings) mine += w + '\n';
  const std::vector<double> size{static_cast<double>(mine.size())};
  std::vector<double> sizes(static_cast<std::size_t>(comm.size()));
  comm.all_gather(std::span<const double>(size), std::span<double>(sizes));
  const std::size_t widest = static_cast<std::size_t>(*std::max_element(sizes.begin(), sizes.end()));
  std::vector<std::string> out;
  if (widest == 0) return out;
  mine.resize(widest, '\0');
  std::string all(widest * sizes.size(), '\0');
  comm.all_gather_bytes(mine.data(), widest, all.data());
  for (std::size_t r = 0; r < sizes.size(); ++r) {
    std::size_t at = r * widest;
    const std::size_t end = at + static_cast<std::size_t>(sizes[r]);
    while (at < end) {
      const std::size_t eol = all.find('\n', at);
      std::string w = all.substr(at, eol - at);
      if (std::find(out.begin(), out.end(), w) == out.end()) out.push_back(std::move(w));
      at = eol + 1;
    }
  }
  return out;
}

ShardedEstimator::ShardedEstimator(Dataset local, std::size_t first_row, std::vector<RowRange> group_rows,
                                   ShardMesh mesh, std::size_t max_shard_components, comms::Communicator& comm,
                                   std::unique_ptr<Compute> compute)
    : data_(std::move(local)),
      first_row_(first_row),
      group_rows_(std::move(group_rows)),
      mesh_(mesh),
      comm_(comm),
      compute_(std::move(compute)),
      max_shard_components_(std::max<std::size_t>(max_shard_components, 1)) {
  // The mesh's two kinds of group, as sub-communicators (collective: every rank builds its
  // estimator): the G shards of this rank's rows exchange per-row log-likelihoods; the D
  // holders of this rank's shard sum its statistics.
  component_comm_ = comm_.split(mesh_.data_group(), mesh_.component_group());
  data_comm_ = comm_.split(mesh_.component_group(), mesh_.data_group());
  // Chunking depends on whether every rank's Compute keeps log-densities (one flag, once).
  std::vector<double> cannot{compute_->kept_bytes_per_row(1, Precision::fp32) > 0 ? 0.0 : 1.0};
  comm_.all_reduce_max(std::span<double>(cannot));
  every_rank_keeps_ = cannot[0] == 0.0;
}

ShardChunking shard_chunking(std::size_t max_shard_components, Precision precision, bool every_rank_keeps,
                             const std::vector<RowRange>& group_rows) {
  // A collective chunk (a multiple of the kernels' 128-row block) is what one exchange of per-row
  // shard log-likelihoods covers. Where every rank's Compute keeps a chunk's log-densities
  // between scoring and folding, chunks are sized so that they take kKeptBudget (chunk × K_c
  // values): the kept values stay in cache, and every chunk holds the same number of
  // row-components (≈ 4Mi in fp32), so the per-collective latency weighs the same whatever K_c.
  // Otherwise (CUDA recomputes) chunks are large: few collectives, each waiting for every rank.
  // The rule reads only the largest shard, the precision and the world-wide keep decision, so
  // every rank walks the same chunks.
  constexpr std::size_t kMaxRows = 65536, kKeptBudget = std::size_t{16} << 20;
  ShardChunking c;
  c.keep = every_rank_keeps;
  c.rows = kMaxRows;
  if (c.keep) {
    const std::size_t bytes_per_row =
        max_shard_components * (precision == Precision::fp64 ? sizeof(double) : sizeof(float));
    c.rows = std::clamp<std::size_t>(kKeptBudget / bytes_per_row / 128 * 128, 128, kMaxRows);
  }
  const std::size_t largest = largest_range(group_rows);
  // No bigger than the largest group needs (keeps the exchange buffers small for small data).
  c.rows = std::max<std::size_t>(128, std::min(c.rows, (largest + 127) / 128 * 128));
  for (const RowRange& g : group_rows) c.count = std::max(c.count, (g.end - g.begin + c.rows - 1) / c.rows);
  return c;
}

ShardChunking ShardedEstimator::chunking(Precision precision) const {
  return shard_chunking(max_shard_components_, precision, every_rank_keeps_, group_rows_);
}

ShardEStep ShardedEstimator::e_step(const Model& shard, const EstimatorOptions& options) {
  // Every rank holds the same structure, so every rank refuses here, before any collective.
  for (const Part& p : shard.parts)
    if (family_ops(p.family).shares_parameters(p))
      throw InvalidInput(std::string(family_name(p.family)) +
                         ": its components share parameters (one covariance), which component sharding would "
                         "split over the shards; fit it data parallel (without --shard-components or the "
                         "component_sharded backend)");
  const ShardChunking chunks = chunking(options.precision);
  const std::size_t K = shard.components(), R = chunks.rows;
  const bool keep = chunks.keep;
  const std::size_t D = static_cast<std::size_t>(mesh_.data_groups), d = static_cast<std::size_t>(mesh_.data_group());
  const std::size_t G = static_cast<std::size_t>(mesh_.groups);
  const bool counts_rows = mesh_.component_group() == 0;  // per-row log-likelihood once per data group
  const std::size_t n = data_.rows();
  ShardEStep out;
  out.stats.assign(static_cast<std::size_t>(stat_layout(shard).size), 0.0);
  std::exception_ptr error;
  // send: this shard's per-row log-likelihoods ℓ_c, then this rank's error mark.
  bool group_failed = false;  // a rank of this component group failed: skip work, keep meeting
  std::vector<double> send(R + 1), all(G * (R + 1)), norm(R);
  for (std::size_t j = 0; j < chunks.count; ++j) {
    // Every rank walks the same number of chunks (empty ones past its group's rows), so every
    // rank makes the same sequence of collectives — also after an error: the marks carry it
    // through the group's gathers, and the world's scalar reduce below raises it everywhere.
    const std::size_t begin = std::min(n, j * R), end = std::min(n, begin + R), m = end - begin;
    std::fill(send.begin(), send.end(), kNegInf);
    const Dataset rows = data_.slice(begin, end);
    if (!error && !group_failed && m) try {
        // The shard model's weights are the global ones, so ℓ_c = log Σ_{k∈shard} w_k p(x|k).
        if (keep)
          compute_->score_keeping(shard, rows, options.precision, send.data(), kept_);
        else
          compute_->score(shard, rows, options.precision, send.data(), nullptr);
      } catch (...) {
        error = std::current_exception();
      }
    send[R] = error_mark(error, comm_.rank());
    component_comm_->all_gather(std::span<const double>(send), std::span<double>(all));
    for (std::size_t c = 0; c < G; ++c) group_failed |= all[c * (R + 1) + R] != 0.0;
    if (!m || error || group_failed) continue;
    try {
      // log p(x) = log Σ_c exp(ℓ_c), combined in shard order from the gathered values: every
      // rank of the component group computes the same bytes, whatever the communicator.
      kernels::PassReport report;
      const double* group = all.data();
      for (std::size_t i = 0; i < m; ++i) {
        double hi = kNegInf;
        bool nan = false;
        for (std::size_t c = 0; c < G; ++c) {
          const double l = group[c * (R + 1) + i];
          nan |= std::isnan(l);
          hi = std::max(hi, l);
        }
        double sum = 0.0;
        if (std::isfinite(hi))
          for (std::size_t c = 0; c < G; ++c) sum += std::exp(group[c * (R + 1) + i] - hi);
        const double L = nan || hi == -kNegInf ? std::numeric_limits<double>::quiet_NaN() : hi + std::log(sum);
        norm[i] = L;
        if (!(L > kNegInf) || std::isnan(L)) {  // −inf under every shard, NaN, or +inf
          (std::isnan(L) ? report.nan_rows : report.impossible_rows) += 1;
          if (report.num_listed < kernels::PassReport::kMaxListed)
            report.listed[report.num_listed++] = static_cast<std::int64_t>(begin + i);
          continue;
        }
        if (!counts_rows) continue;
        if (const double* w = rows.weights()) {  // sample weights: the row counts w times
          if (w[i] != 0.0) out.loglik += w[i] * L, out.rows += w[i];
        } else {
          out.loglik += L, out.rows += 1.0;
        }
      }
      raise_for(report, data_.source(), first_row_);
      // r_k = w_k p(x|k) / p(x), folded without storing rows × K_c responsibilities.
      if (keep)
        compute_->accumulate_normalised_kept(shard, rows, options.precision, norm.data(), kept_, out.stats);
      else
        compute_->accumulate_normalised(shard, rows, options.precision, norm.data(), out.stats);
    } catch (...) {
      error = std::current_exception();
    }
  }
  // Shard statistics summed over the D data groups that hold this shard (bit-identical on
  // each of them, so their M-steps agree). Skipped when D = 1.
  if (D > 1) data_comm_->all_reduce_sum(std::span<double>(out.stats));
  // Global scalars: the non-empty components' mass from data group 0 (its shard statistics are
  // now the reduced ones), log-likelihood and rows from component group 0 — summed with every
  // rank's error mark, the error kept above raised on every rank.
  double nonempty = 0.0;
  for (std::size_t k = 0; k < K; ++k)
    if (const double w = out.stats[kernels::kStatHeader + k]; !is_empty_mass(w)) nonempty += w;
  std::vector<double> scalars{d == 0 ? nonempty : 0.0, out.loglik, out.rows};
  all_reduce_with_marks(
      comm_, scalars,
      [&] {
        if (error) std::rethrow_exception(error);
      },
      "the sharded E-step");
  out.nonempty_mass = scalars[0];
  out.loglik = scalars[1];
  out.rows = scalars[2];
  return out;
}

MStepResult ShardedEstimator::m_step(const Model& shard, const ShardEStep& step,
                                     const EstimatorOptions& options) const {
  if (!(step.nonempty_mass > 0.0))
    throw InvalidInput("M-step: no responsibility mass at all (no valid rows were folded in)");
  const std::size_t K = shard.components();
  double shard_mass = 0.0;
  for (std::size_t k = 0; k < K; ++k) shard_mass += step.stats[kernels::kStatHeader + k];
  MStepResult result;
  if (shard_mass > 0.0) {
    // Statistics were folded about the means as the compute precision sees them.
    result = engine::m_step(shard, step.stats, shift_table(shard, options.precision), options);
  } else {  // every component of this shard is empty: all keep their parameters
    result.model = shard;
    for (std::size_t k = 0; k < K; ++k) result.empty_components.push_back(k);
  }
  // Global weights: mass_k over the mass of every shard's non-empty components — the unsharded
  // M-step's rule (mass_k / total, renormalised after the empty ones are dropped) in one division.
  for (std::size_t k = 0; k < K; ++k) {
    const double w = step.stats[kernels::kStatHeader + k];
    result.model.weights[k] = is_empty_mass(w) ? 0.0 : w / step.nonempty_mass;
  }
  return result;
}

void refuse_reseed(EmptyPolicy policy) {
  if (policy == EmptyPolicy::reseed)
    throw InvalidInput(
        "empty-component policy 'reseed' needs every row's log-likelihood under the whole mixture, which "
        "component sharding never assembles in one place; use 'keep' (the default) with component shards");
}

EmResult run_sharded_em(ShardedEstimator& estimator, Model shard, std::size_t component_begin,
                        const EmOptions& options) {
  refuse_reseed(options.empty);
  return run_em_steps(
      std::move(shard), options,
      [&](const Model& model) {
        const ShardEStep step = estimator.e_step(model, options.estimator);
        return IterationStep{step.rows, step.loglik, estimator.m_step(model, step, options.estimator), {}};
      },
      component_begin);
}

}  // namespace mixle::engine
