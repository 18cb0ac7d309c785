// The chunk pass of the CUDA kernels (host orchestration; see pass.hpp).
#include "kernels/cuda/pass.hpp"

#include "kernels/cuda/launch.hpp"

#include <mixle/error.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <string>
#include <type_traits>

namespace mixle::kernels::cuda {

template <class T>
void DeviceModel<T>::upload(const ModelView<T>& host, cudaStream_t stream) {
  const std::size_t K = static_cast<std::size_t>(host.components);
  std::size_t coef_total = 0, shift_total = 0;
  for (int p = 0; p < host.num_parts; ++p) {
    const PartView<T>& part = host.parts[p];
    coef_total += K * static_cast<std::size_t>(part.coef_stride);
    if (part.shift) shift_total += K * static_cast<std::size_t>(part.dims);
  }
  log_const_.reserve(std::max<std::size_t>(K, 1));
  coef_.reserve(std::max<std::size_t>(coef_total, 1));
  shift_.reserve(std::max<std::size_t>(shift_total, 1));
  MIXLE_CUDA_TRY(cudaMemcpyAsync(log_const_.data(), host.log_const, K * sizeof(T), cudaMemcpyHostToDevice, stream));
  parts_.assign(host.parts, host.parts + host.num_parts);
  std::size_t coef_at = 0, shift_at = 0;
  for (PartView<T>& part : parts_) {
    const std::size_t coef_count = K * static_cast<std::size_t>(part.coef_stride);
    MIXLE_CUDA_TRY(
        cudaMemcpyAsync(coef_.data() + coef_at, part.coef, coef_count * sizeof(T), cudaMemcpyHostToDevice, stream));
    part.coef = coef_.data() + coef_at;
    coef_at += coef_count;
    if (part.shift) {
      const std::size_t shift_count = K * static_cast<std::size_t>(part.dims);
      MIXLE_CUDA_TRY(cudaMemcpyAsync(shift_.data() + shift_at, part.shift, shift_count * sizeof(T),
                                     cudaMemcpyHostToDevice, stream));
      part.shift = shift_.data() + shift_at;
      shift_at += shift_count;
    }
  }
  view_ = host;
  view_.log_const = log_const_.data();
  view_.parts = parts_.data();
}

template <class T>
void ChunkWorkspace<T>::reserve(std::int64_t rows, int components, std::int64_t stat_size) {
  const std::size_t n = static_cast<std::size_t>(std::max<std::int64_t>(rows, 1));
  resp.reserve(n * static_cast<std::size_t>(components));
  row_offset.reserve(n);
  loglik.reserve(n);
  status.reserve(n);
  (void)stat_size;  // partials are sized per chunk by run_chunk (they depend on the slot plan)
}

namespace {

SlotPlan plan_slots(std::int64_t rows, std::int64_t stat_size) {
  SlotPlan plan;
  plan.stat_size = stat_size;
  plan.rows_per_slot = slot_rows(stat_size);
  plan.slots = std::max<std::int64_t>(1, (rows + plan.rows_per_slot - 1) / plan.rows_per_slot);
  return plan;
}

template <class T>
void add_log_densities(const ModelView<T>& model, const ChunkArgs<T>& c, cublasHandle_t tf32, cudaStream_t s) {
  if (model.row_offset) {
    MIXLE_CUDA_TRY(cudaMemsetAsync(c.row_offset, 0, static_cast<std::size_t>(c.rows) * sizeof(T), s));
    for (int p = 0; p < model.num_parts; ++p)
      if (model.parts[p].kind == PartKind::poisson)
        launch_poisson_row_offset(model.parts[p], c, s);
      else if (model.parts[p].kind == PartKind::lognormal)
        launch_lognormal_row_offset(model.parts[p], c, s);
  }
  launch_init_log_density(model, c, s);
  for (int p = 0; p < model.num_parts; ++p) {
    const PartView<T>& part = model.parts[p];
    switch (part.kind) {
      case PartKind::gaussian_diag:
        if constexpr (sizeof(T) == sizeof(float)) {
          if (tf32) {
            launch_gaussian_diag_log_density_tf32(tf32, part, c, s);
            break;
          }
        }
        launch_gaussian_diag_log_density(part, c, s);
        break;
      case PartKind::gaussian_full: launch_gaussian_full_log_density(part, c, s); break;
      case PartKind::categorical: launch_categorical_log_density(part, c, s); break;
      case PartKind::poisson:
      case PartKind::exponential:
      case PartKind::bernoulli: launch_rate_log_density(part, c, s); break;
      case PartKind::gamma: launch_gamma_log_density(part, c, s); break;
      case PartKind::lognormal: launch_lognormal_log_density(part, c, s); break;
    }
  }
}

template <class T>
void add_statistics(PassMode mode, const ModelView<T>& model, const ChunkArgs<T>& c, const SlotPlan& plan,
                    double* stats, cudaStream_t s) {
  launch_header_partials(mode, c, plan, s);
  for (int p = 0; p < model.num_parts; ++p) {
    const PartView<T>& part = model.parts[p];
    switch (part.kind) {
      case PartKind::gaussian_diag: launch_gaussian_diag_accumulate(part, c, plan, s); break;
      case PartKind::gaussian_full: launch_gaussian_full_accumulate(part, c, plan, s); break;
      case PartKind::categorical: launch_categorical_accumulate(part, c, plan, s); break;
      case PartKind::poisson:
      case PartKind::exponential:
      case PartKind::bernoulli: launch_rate_accumulate(part, c, plan, s); break;
      case PartKind::gamma: launch_gamma_accumulate(part, c, plan, s); break;
      case PartKind::lognormal: launch_lognormal_accumulate(part, c, plan, s); break;
    }
  }
  launch_reduce_slots(plan, stats, s);
}

}  // namespace

template <class T>
void run_chunk(PassMode mode, const ModelView<T>& model, const T* x, std::int64_t rows, int ld, std::int64_t first_row,
               const T* given_resp, const double* log_norm, const double* weights, ChunkWorkspace<T>& ws, double* stats,
               DeviceReport* report, cublasHandle_t tf32, cudaStream_t stream) {
  if (rows <= 0) return;
  if (mode == PassMode::given && !given_resp)
    throw InvalidInput("CUDA chunk pass: given mode without responsibilities");
  if (mode == PassMode::normalised && !log_norm)
    throw InvalidInput("CUDA chunk pass: normalised mode without per-row normalisers");
  bool fused = false;
  if constexpr (std::is_same_v<T, float>)
    fused = mode == PassMode::accumulate && !weights && gaussian_diag_fused_eligible(model, tf32 != nullptr);
  // The fused pass keeps the rows × K block on chip: no device buffer for it.
  ws.reserve(rows, fused ? 0 : model.components, model.stat_size);
  ChunkArgs<T> c;
  c.x = x;
  c.ld = ld;
  c.rows = rows;
  c.components = model.components;
  // Given responsibilities are only read (by the statistics kernels).
  c.resp = mode == PassMode::given ? const_cast<T*>(given_resp) : ws.resp.data();
  c.row_offset = ws.row_offset.data();
  c.loglik = ws.loglik.data();
  c.status = ws.status.data();
  c.weights = mode == PassMode::score ? nullptr : weights;
  if constexpr (std::is_same_v<T, float>) {
    if (fused) {
      SlotPlan plan = plan_slots(rows, model.stat_size);
      ws.partials.reserve(static_cast<std::size_t>(plan.slots * plan.stat_size));
      plan.partials = ws.partials.data();
      MIXLE_CUDA_TRY(cudaMemsetAsync(&report->chunk_bad, 0, sizeof report->chunk_bad, stream));
      launch_gaussian_diag_fused(model, c, plan, report, tf32 != nullptr, stream);
      launch_list_bad_rows(c, first_row, report, stream);
      launch_reduce_slots(plan, stats, stream);
      return;
    }
  }
  if (mode == PassMode::normalised) {
    // The accumulate pass's log-densities, then r = exp(min(L − N, 0)); no row status, no report.
    add_log_densities(model, c, tf32, stream);
    launch_normalise_external(c, log_norm, stream);
  } else if (mode != PassMode::given) {
    add_log_densities(model, c, tf32, stream);
    MIXLE_CUDA_TRY(cudaMemsetAsync(&report->chunk_bad, 0, sizeof report->chunk_bad, stream));
    launch_normalise(c, report, stream);
    launch_list_bad_rows(c, first_row, report, stream);
  }
  if (mode == PassMode::score) return;
  // Given responsibilities arrive weighted already (the caller scales them as it stages them).
  if (mode != PassMode::given) launch_weigh_rows(c, stream);
  SlotPlan plan = plan_slots(rows, model.stat_size);
  if (plan.slots > 65535)  // grid.z of the statistics kernels; chunks are ≤ kMaxChunkRows
    throw InvalidInput("CUDA chunk of " + std::to_string(rows) + " rows needs " + std::to_string(plan.slots) +
                       " statistics slots; at most 65535 (chunks are limited to " + std::to_string(kMaxChunkRows) +
                       " rows)");
  ws.partials.reserve(static_cast<std::size_t>(plan.slots * plan.stat_size));
  plan.partials = ws.partials.data();
  add_statistics(mode, model, c, plan, stats, stream);
}

template class DeviceModel<float>;
template class DeviceModel<double>;
template struct ChunkWorkspace<float>;
template struct ChunkWorkspace<double>;
template void run_chunk<float>(PassMode, const ModelView<float>&, const float*, std::int64_t, int, std::int64_t,
                               const float*, const double*, const double*, ChunkWorkspace<float>&, double*,
                               DeviceReport*, cublasHandle_t, cudaStream_t);
template void run_chunk<double>(PassMode, const ModelView<double>&, const double*, std::int64_t, int, std::int64_t,
                                const double*, const double*, const double*, ChunkWorkspace<double>&, double*,
                                DeviceReport*, cublasHandle_t, cudaStream_t);

}  // namespace mixle::kernels::cuda
