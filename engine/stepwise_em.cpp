// Stepwise EM (engine/stepwise_em.hpp). Each epoch is one step of the shared EM loop
// (run_em_steps), so convergence, history, warnings and progress are the full-batch loop's; the
// running statistics live across epochs. Every batch's statistics are accumulated about the
// current model's shifts, exactly as in full-batch EM, and the running statistics are moved to
// those shifts before they are mixed (reshift_statistics), so no moment is ever taken about a
// stale centre.
#include "engine/stepwise_em.hpp"

#include "engine/families/family_ops.hpp"
#include "engine/row_hash.hpp"
#include "kernels/model_view.hpp"

#include <mixle/error.hpp>

#include <cmath>
#include <numeric>

namespace mixle::engine {

void validate(const StepwiseOptions& o) {
  if (!(o.step_decay > 0.5 && o.step_decay <= 1.0))
    throw InvalidInput("step decay " + std::to_string(o.step_decay) +
                       ": must be in (0.5, 1] (ρ_t = (t + t0)^−α converges only then)");
  if (!(o.step_offset >= 0.0) || !std::isfinite(o.step_offset))
    throw InvalidInput("step offset " + std::to_string(o.step_offset) + ": must be finite and ≥ 0");
  if (o.epochs < 1) throw InvalidInput("epochs " + std::to_string(o.epochs) + ": must be ≥ 1");
}

double step_size(std::uint64_t t, const StepwiseOptions& o) {
  if (t == 0) return 1.0;
  return std::pow(static_cast<double>(t) + o.step_offset, -o.step_decay);
}

std::vector<std::size_t> batch_order(std::size_t batches, std::size_t epoch, const StepwiseOptions& o) {
  std::vector<std::size_t> order(batches);
  std::iota(order.begin(), order.end(), std::size_t{0});
  if (!o.shuffle) return order;
  // Fisher–Yates with counter-based draws: the same order on every platform and standard library.
  const std::uint64_t stream = 0x5354455057495345ull + epoch;  // "STEPWISE" + epoch
  for (std::size_t i = batches; i > 1; --i) {
    const std::size_t j = static_cast<std::size_t>(row_draw(o.seed, stream, i) % i);
    std::swap(order[i - 1], order[j]);
  }
  return order;
}

void reshift_statistics(const Model& model, std::vector<double>& stats, const ShiftTable& from, const ShiftTable& to) {
  const StatLayout layout = stat_layout(model);
  const std::size_t K = model.components();
  for (std::size_t p = 0; p < model.parts.size(); ++p) {
    if (from.part_offset[p] < 0) continue;  // not a shifted part
    const Part& part = model.parts[p];
    const std::size_t D = part.dims();
    const auto stride = static_cast<std::size_t>(layout.part_stride[p]);
    const bool full = stride == D + D * D;  // Σr(x−s) [D], Σr(x−s)(x−s)ᵀ [D×D]
    if (!full && stride != 2 * D)           // else Σr(x−s) [D], Σr(x−s)² [D]
      throw Error("reshift_statistics: part " + std::to_string(p) + " (" + family_name(part.family) + ") has " +
                  std::to_string(stride) + " statistics per component, neither 2·D nor D + D²");
    std::vector<double> delta(D);
    for (std::size_t k = 0; k < K; ++k) {
      double* s = stats.data() + layout.part_offset[p] + k * stride;
      const double m = stats[static_cast<std::size_t>(kernels::kStatHeader) + k];
      for (std::size_t d = 0; d < D; ++d)
        delta[d] = from.values[static_cast<std::size_t>(from.part_offset[p]) + k * D + d] -
                   to.values[static_cast<std::size_t>(to.part_offset[p]) + k * D + d];
      double* second = s + D;
      if (full) {
        for (std::size_t i = 0; i < D; ++i)
          for (std::size_t j = 0; j < D; ++j)
            second[i * D + j] += s[i] * delta[j] + delta[i] * s[j] + m * delta[i] * delta[j];
      } else {
        for (std::size_t d = 0; d < D; ++d) second[d] += 2.0 * delta[d] * s[d] + m * delta[d] * delta[d];
      }
      for (std::size_t d = 0; d < D; ++d) s[d] += m * delta[d];
    }
  }
}

void fold_batch(const Model& model, std::vector<double>& running, ShiftTable& running_shifts,
                const std::vector<double>& batch, double scale, double rho, const ShiftTable& shifts) {
  if (running.empty()) {
    running.resize(batch.size());
    for (std::size_t i = 0; i < batch.size(); ++i) running[i] = scale * batch[i];
  } else {
    if (running.size() != batch.size() || running_shifts.values.size() != shifts.values.size())
      throw InvalidInput("stepwise EM: the running statistics (" + std::to_string(running.size()) + " values, " +
                         std::to_string(running_shifts.values.size()) +
                         " shifts) belong to a model of another shape than this batch's (" +
                         std::to_string(batch.size()) + " values, " + std::to_string(shifts.values.size()) +
                         " shifts)");
    reshift_statistics(model, running, running_shifts, shifts);
    for (std::size_t i = 0; i < running.size(); ++i) running[i] = (1.0 - rho) * running[i] + rho * scale * batch[i];
  }
  running_shifts = shifts;
}

EmResult run_stepwise_em(const std::vector<std::shared_ptr<EncodedData>>& batches, double total_weight, Model initial,
                         const EmOptions& em, const StepwiseOptions& options) {
  validate(options);
  if (batches.empty()) throw InvalidInput("stepwise EM: no batches of rows");
  if (em.empty == EmptyPolicy::reseed)
    throw InvalidInput("stepwise EM (a batch size) does not reseed empty components: use empty = keep");
  if (em.estimator.marginalise)
    throw InvalidInput("stepwise EM (a batch size) does not marginalise missing values: use missing = drop or error");
  if (!(total_weight > 0.0)) throw InvalidInput("stepwise EM: the rows' total weight must be > 0");

  const EstimatorOptions& est = em.estimator;
  std::vector<double> running;  // about `running_shifts`; empty until the first batch
  ShiftTable running_shifts;
  std::uint64_t t = 0;
  std::size_t epoch = 0;
  auto run_epoch = [&](const Model& start) {
    IterationStep step;
    step.next.model = start;
    for (const std::size_t b : batch_order(batches.size(), epoch, options)) {
      const Model& model = step.next.model;
      Statistics batch = batches[b]->stream_accumulate(model, est);
      if (!(batch.rows() > 0.0)) continue;  // every row of this batch has weight 0
      step.rows += batch.rows();
      step.loglik_sum += batch.loglik_sum();
      fold_batch(model, running, running_shifts, batch.values, total_weight / batch.rows(), step_size(t++, options),
                 shift_table(model, est.precision));
      step.next = m_step(model, running, running_shifts, est);
    }
    ++epoch;
    return step;
  };
  return run_em_steps(std::move(initial), em, run_epoch);
}

}  // namespace mixle::engine
