// Stepwise (mini-batch, online) EM: after each batch of rows the running sufficient statistics
// become (1 − ρ_t)·S + ρ_t·Ŝ_batch, with Ŝ_batch scaled to the whole data's weight, and the
// M-step runs (Cappé & Moulines' online EM; Liang & Klein's stepwise EM). docs/streaming.md.
#pragma once

#include "engine/em.hpp"
#include "engine/encoded_data.hpp"
#include "engine/estimator.hpp"

#include <cstdint>
#include <memory>
#include <vector>

namespace mixle::engine {

struct StepwiseOptions {
  double step_decay = 0.6;   // α ∈ (0.5, 1]
  double step_offset = 2.0;  // t0 ≥ 0
  int epochs = 10;           // passes over the batches (≥ 1); stops earlier when converged
  bool shuffle = false;      // visit the batches in a seeded random order each epoch
  std::uint64_t seed = 0;
};

/// Throws InvalidInput naming the control and the accepted range.
void validate(const StepwiseOptions& options);

/// ρ for step t (t = 0 for the first batch): 1 at t = 0 — the running statistics start as the
/// first batch's — then (t + t0)^−α.
double step_size(std::uint64_t t, const StepwiseOptions& options);

/// The order in which epoch `epoch` (0-based) visits `batches` batches: 0, 1, … without
/// shuffling; otherwise a permutation drawn from (seed, epoch) alone.
std::vector<std::size_t> batch_order(std::size_t batches, std::size_t epoch, const StepwiseOptions& options);

/// Moves statistics accumulated about the shifts `from` to the shifts `to` (both shift_table()s
/// of models shaped like `model`): for each shifted part and component, with δ = from − to and
/// m its mass, Σr(x−to) = Σr(x−from) + m·δ and the second moments gain F·δᵀ + δ·Fᵀ + m·δ·δᵀ
/// (their diagonal, for the families that keep one). Unshifted parts and the header are unchanged.
void reshift_statistics(const Model& model, std::vector<double>& stats, const ShiftTable& from, const ShiftTable& to);

/// One step's update of the running statistics: `batch` (a batch's statistics under `model`,
/// accumulated about `shifts` = shift_table(model, precision)) scaled by `scale` becomes the
/// running statistics when `running` is empty; otherwise `running` (about `running_shifts`) is
/// moved to `shifts` and becomes (1 − rho)·running + rho·scale·batch. Either way `running_shifts`
/// becomes `shifts`. Throws InvalidInput when the running statistics have another size.
void fold_batch(const Model& model, std::vector<double>& running, ShiftTable& running_shifts,
                const std::vector<double>& batch, double scale, double rho, const ShiftTable& shifts);

/// Runs stepwise EM from `initial` over `batches` (each a handle of one batch of rows, together
/// all the rows, whose sample weights total `total_weight`). One EmResult entry per epoch: its
/// mean log-likelihood is the weighted mean over the epoch's batches of each batch's
/// log-likelihood under the model before that batch's step; an epoch whose mean differs from the
/// previous one by less than em.tol ends the run (converged). em.max_iter bounds the epochs too.
/// Rejected: EmptyPolicy::reseed and marginalised missing values (InvalidInput).
EmResult run_stepwise_em(const std::vector<std::shared_ptr<EncodedData>>& batches, double total_weight, Model initial,
                         const EmOptions& em, const StepwiseOptions& options);

}  // namespace mixle::engine
