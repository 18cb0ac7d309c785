// Component-sharded EM across ranks (docs/design.md §9, docs/sharding.md): a data × components mesh.
// World W = D × G; rank r owns component shard c = r % G and the rows of data group d = r / G.
// Each rank holds only its shard's parameters (a Model of K_c components that keeps the GLOBAL
// mixture weights of those components) and its shard's statistics. Per chunk of rows the G
// shards of a data group all-gather their per-row log-likelihoods (a sub-communicator), each
// computes the whole mixture's log-likelihood from them and folds its components' share of the
// posterior (Compute::accumulate_normalised); shard statistics are summed over the D data
// groups (another sub-communicator); one scalar world all-reduce gives the global mass.
#pragma once

#include "comms/communicator.hpp"
#include "engine/compute.hpp"
#include "engine/distributed_handle.hpp"
#include "engine/em.hpp"

#include <mixle/plan/resources.hpp>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace mixle::engine {

/// This rank's place in the data × components mesh.
struct ShardMesh {
  int world = 1;
  int groups = 1;       // G: ranks per component group (component shards)
  int data_groups = 1;  // D = world / G
  int rank = 0;
  int component_group() const noexcept { return rank % groups; }  // c
  int data_group() const noexcept { return rank / groups; }       // d
};
/// Throws UsageError unless 1 ≤ G ≤ world and world % G == 0.
ShardMesh make_shard_mesh(int world, int rank, int groups);

/// Contiguous component ranges [begin, end) of the G shards: model_sharding_plan over the
/// first G devices of `resources` (throughput-weighted), or over G equal devices when none are
/// given. Throws UsageError when K < G (a shard would be empty).
std::vector<RowRange> component_ranges(std::size_t K, int groups, const plan::Resources* resources = nullptr);

/// Components [begin, end) of `model`, keeping their global weights (not renormalised).
Model slice_components(const Model& model, std::size_t begin, std::size_t end);
/// Parameter bytes a Model holds (float64 weights and part arrays).
std::uint64_t model_parameter_bytes(const Model& model);

/// Assembles the global model on `root` from every rank's shard (collective: one broadcast per
/// component shard, from the shard's owner in data group 0). Other ranks get an empty Model.
Model gather_global_model(const Model& shard, const std::vector<RowRange>& ranges, const ShardMesh& mesh,
                          comms::Communicator& comm, int root = 0);

/// Every rank's `warnings` (each names global components of its own shard), merged in rank
/// order without repeats, on every rank (collective: two all-gathers).
std::vector<std::string> gather_warnings(const std::vector<std::string>& warnings, comms::Communicator& comm);

/// The collective chunks of a sharded E-step: `rows` per exchange of per-row log-likelihoods (a
/// multiple of 128, from 128 to 65536, no more than the largest data group needs), `count` of
/// them (enough for the largest group: every rank walks the same chunks), and whether a chunk's
/// log-densities are kept between scoring and folding (when every rank's Compute keeps them:
/// then chunk × K_c values take 16 MiB). `max_shard_components` (the largest K_c) is ≥ 1.
struct ShardChunking {
  std::size_t rows = 0, count = 0;
  bool keep = false;
};
ShardChunking shard_chunking(std::size_t max_shard_components, Precision precision, bool every_rank_keeps,
                             const std::vector<RowRange>& group_rows);

/// Result of one sharded E-step (identical on every rank of a component group where noted).
struct ShardEStep {
  std::vector<double> stats;   // this shard's statistics (stat_layout(shard)), summed over data groups;
                               // the header's log-likelihood and rows stay 0 (loglik and rows hold them)
  double loglik = 0.0;         // Σ log p(x) over all rows (global)
  double rows = 0.0;           // rows folded in (global)
  double nonempty_mass = 0.0;  // Σ responsibility mass over components with mass > kEmptyMass (global)
};

/// The E-step and M-step of one rank's shard. Every rank of the world must make the same calls.
class ShardedEstimator {
 public:
  /// `local` holds rows [first_row, first_row + local.rows()) — this rank's data group's rows;
  /// `group_rows[d]` is the row range of data group d (to pad every group to the same number of
  /// chunks); `max_shard_components` is the largest K_c. Collective (splits `comm` into the
  /// mesh's groups); `comm` must outlive this object.
  ShardedEstimator(Dataset local, std::size_t first_row, std::vector<RowRange> group_rows, ShardMesh mesh,
                   std::size_t max_shard_components, comms::Communicator& comm, std::unique_ptr<Compute> compute);

  /// E-step of `shard` (the components this rank owns, global weights). A failure on any rank
  /// (ImpossibleEvidence, NaN, bad parameters) is thrown on every rank, naming the failing rank.
  ShardEStep e_step(const Model& shard, const EstimatorOptions& options);
  /// M-step of this shard from `step`: parameters as m_step, weights mass_k / global mass,
  /// renormalised over non-empty components of every shard. Local (no collectives).
  MStepResult m_step(const Model& shard, const ShardEStep& step, const EstimatorOptions& options) const;

  const ShardMesh& mesh() const noexcept { return mesh_; }
  std::size_t local_rows() const noexcept { return data_.rows(); }
  /// Bytes handed to collectives so far, by communicator: the per-row log-likelihoods gathered
  /// in the component group, the shard statistics reduced over the data groups, and the world
  /// communicator's (each E-step's scalars, and whatever else the caller runs on it).
  struct Bytes {
    std::uint64_t gathered = 0, reduced = 0, world = 0;
  };
  Bytes bytes() const noexcept {
    return {component_comm_->collective_bytes(), data_comm_->collective_bytes(), comm_.collective_bytes()};
  }
  /// The three together.
  std::uint64_t collective_bytes() const noexcept {
    const Bytes b = bytes();
    return b.gathered + b.reduced + b.world;
  }
  /// Rows per collective chunk and chunks per E-step (the largest group's), the same on every
  /// rank; whether every rank's Compute keeps a chunk's log-densities between its two passes.
  ShardChunking chunking(Precision precision) const;

 private:
  Dataset data_;
  std::size_t first_row_;
  std::vector<RowRange> group_rows_;
  ShardMesh mesh_;
  comms::Communicator& comm_;
  std::unique_ptr<comms::Communicator> component_comm_;  // the G ranks sharing this rank's rows
  std::unique_ptr<comms::Communicator> data_comm_;       // the D ranks holding this rank's shard
  std::unique_ptr<Compute> compute_;
  std::size_t max_shard_components_;  // at least 1, set by the constructor
  bool every_rank_keeps_ = false;     // every rank's Compute keeps log-densities (chunking)
  std::vector<unsigned char> kept_;   // a chunk's log-densities between scoring and folding (reused)
};

/// Throws InvalidInput for EmptyPolicy::reseed, which component sharding cannot run (a reseed
/// scores every row under the whole mixture); entry points call it before reading data.
void refuse_reseed(EmptyPolicy policy);

/// EM over shards, mirroring run_em (engine/em.hpp): info.model in the callback is this rank's
/// shard; `component_begin` turns shard-local empty components into global indices. Refuses
/// EmptyPolicy::reseed (refuse_reseed).
EmResult run_sharded_em(ShardedEstimator& estimator, Model shard, std::size_t component_begin,
                        const EmOptions& options);

}  // namespace mixle::engine
