// The CUDA Compute (compiled only with the CUDA kernels; compute_cuda_absent.cpp stands
// in otherwise). It packs the model (pack_model<float|double>, as the CPU kernels do), copies
// the packed arrays to the device and runs kernels/cuda's chunk pass over the rows:
//
//   resident   when the whole dataset (converted to the compute precision) and one chunk's
//              working memory fit in 70% of the device memory available to the pass (free, plus
//              what this Compute already holds and reuses — kernels/cuda/chunk_plan.hpp), the
//              rows are uploaded once
//              and stay on the device for later passes over the same Dataset (identified by its
//              address, shape and dtype; a copy of the Dataset is held so that owned storage
//              cannot be freed and its address reused while cached). Callers that view their own
//              memory (Dataset::view) must not change it between passes — data.hpp's contract.
//   streamed   otherwise, chunk by chunk each pass: the host converts a chunk into one of two
//              pinned buffers while the device computes the previous chunk; copies run on their
//              own stream, ordered against compute by events.
//
// Compute runs in chunks of at most kMaxChunkRows rows, keeping the device working set
// O(chunk·(D + K)) — never O(N·K). Chunks are multiples of slot_rows(stat_size) (itself a
// multiple of kSubBlockRows, so float32 partial sums are grouped as on the CPU); with the
// slot-by-slot fold of kernels/cuda this makes the statistics bit-identical for any chunking,
// resident or streamed. MIXLE_CUDA_STREAM_ROWS=<rows> forces streaming with chunks of that many
// rows rounded up to that multiple (tests use it to exercise the streamed path on small data);
// MIXLE_CUDA_CHUNK_ROWS=<rows> only caps the chunk (resident data in several chunks).
//
// Per-row inputs from the host — given responsibilities (rows × K, converted to T on the host),
// external normalisers and sample weights (rows, kept float64) — are staged chunk by chunk
// through the same two pinned/device buffer pairs and events as streamed rows, resident or not.
//
// Component-sharded EM (engine/component_sharded.hpp) uses one more pass:
//   accumulate_normalised      PassMode::normalised: the accumulate pass's log-densities (tf32:
//                              the GEMM path, as accumulate), r = exp(min(L − N, 0)) against the
//                              caller's float64 normaliser N cast to T on the device
//                              (normalise_external.cu), then the same slot fold; stats[0] and
//                              stats[1] are left exactly as the caller passed them
#include "engine/compute.hpp"
#include "comms/communicator.hpp"

#include <mixle/error.hpp>

#if MIXLE_HAVE_CUDA_KERNELS
#include "kernels/cuda/pass.hpp"

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>

namespace mixle::engine {
namespace {

namespace kc = kernels::cuda;

/// The row count in environment variable `name`, rounded up to a multiple of `unit`; 0 when unset.
std::int64_t env_rows(const char* name, std::int64_t unit) {
  const char* text = std::getenv(name);
  if (!text || !*text) return 0;
  char* end = nullptr;
  const long long v = std::strtoll(text, &end, 10);
  if (*end != '\0' || v <= 0)
    throw InvalidInput(std::string(name) + "=\"" + text + "\": expected a positive row count");
  return (v + unit - 1) / unit * unit;
}

/// Rows [first, first + n) of `src` (host, row-major, `cols` per row) converted into `dst`.
template <class T>
void convert_rows(const Dataset& src, std::int64_t first, std::int64_t n, T* dst) {
  const std::size_t count = static_cast<std::size_t>(n) * src.cols();
  const std::size_t offset = static_cast<std::size_t>(first) * src.cols();
  if (src.dtype() == DType::f32) {
    const float* s = src.as<float>() + offset;
    if constexpr (std::is_same_v<T, float>)
      std::memcpy(dst, s, count * sizeof(float));
    else
      for (std::size_t i = 0; i < count; ++i) dst[i] = static_cast<T>(s[i]);
  } else {
    const double* s = src.as<double>() + offset;
    if constexpr (std::is_same_v<T, double>)
      std::memcpy(dst, s, count * sizeof(double));
    else
      for (std::size_t i = 0; i < count; ++i) dst[i] = static_cast<T>(s[i]);
  }
}

/// Device state for one compute precision.
template <class T>
struct TypedState {
  kc::DeviceModel<T> model;
  kc::ChunkWorkspace<T> ws;
  std::array<kc::DeviceBuffer<T>, 2> x, given;
  std::array<kc::PinnedBuffer<T>, 2> x_host, given_host;
  std::array<kc::DeviceBuffer<double>, 2> norm;  // external normalisers (normalised mode)
  std::array<kc::PinnedBuffer<double>, 2> norm_host;
  std::array<kc::DeviceBuffer<double>, 2> weights;  // sample weights (weighted rows)
  std::array<kc::PinnedBuffer<double>, 2> weights_host;
  kc::PinnedBuffer<T> resp_out;
  kc::PinnedBuffer<double> loglik_out;
  kc::DeviceBuffer<T> resident;
  std::optional<Dataset> resident_rows;  // the cached dataset (keeps owned storage alive)

  /// Device bytes held that a pass reuses rather than allocates again (every buffer grows in
  /// place): the cached rows, the workspace (its partials included), the staging buffers.
  std::size_t held_bytes() const {
    std::size_t b = resident.size() * sizeof(T) + ws.resp.size() * sizeof(T) + ws.row_offset.size() * sizeof(T) +
                    ws.loglik.size() * sizeof(double) + ws.status.size() * sizeof(int) +
                    ws.partials.size() * sizeof(double);
    for (int i = 0; i < 2; ++i)
      b += (x[i].size() + given[i].size()) * sizeof(T) + (norm[i].size() + weights[i].size()) * sizeof(double);
    return b;
  }
};

class CudaCompute final : public Compute {
 public:
  explicit CudaCompute(int device) : device_(device) {
    kc::DeviceGuard guard(device_);
    compute_.emplace();
    copy_.emplace();
    for (int b = 0; b < 2; ++b) h2d_done_[b].emplace(), compute_done_[b].emplace();
  }

  /// Releases every device object with this Compute's device current (streams, events and
  /// handles belong to it), then restores the caller's device.
  ~CudaCompute() override {
    try {
      kc::DeviceGuard guard(device_);
      f32_ = TypedState<float>{};
      f64_ = TypedState<double>{};
      stats_dev_ = kc::DeviceBuffer<double>{};
      report_dev_ = kc::DeviceBuffer<kc::DeviceReport>{};
      stats_host_ = kc::PinnedBuffer<double>{};
      report_host_ = kc::PinnedBuffer<kc::DeviceReport>{};
      cublas_.reset();
      for (int b = 0; b < 2; ++b) h2d_done_[b].reset(), compute_done_[b].reset();
      copy_.reset();
      compute_.reset();
    } catch (...) {
      // A failing runtime at teardown: the members' own destructors report and carry on.
    }
  }

  std::string name() const override { return "cuda:" + std::to_string(device_); }

  kernels::PassReport accumulate(const Model& model, const Dataset& rows, Precision precision,
                                 std::vector<double>& stats) override {
    check_door(model, rows, &stats);
    if (precision == Precision::fp64)
      return run<double>(kc::PassMode::accumulate, model, rows, {}, &stats, nullptr, nullptr, false);
    return run<float>(kc::PassMode::accumulate, model, rows, {}, &stats, nullptr, nullptr,
                      precision == Precision::tf32);
  }

  kernels::PassReport score(const Model& model, const Dataset& rows, Precision precision, double* loglik,
                            double* resp) override {
    check_door(model, rows, nullptr);
    if (precision == Precision::fp64)
      return run<double>(kc::PassMode::score, model, rows, {}, nullptr, loglik, resp, false);
    return run<float>(kc::PassMode::score, model, rows, {}, nullptr, loglik, resp, precision == Precision::tf32);
  }

  void accumulate_given(const Model& model, const Dataset& rows, const double* resp,
                        std::vector<double>& stats) override {
    check_door(model, rows, &stats);
    run<double>(kc::PassMode::given, model, rows, {.given = resp}, &stats, nullptr, nullptr, false);
  }

  void accumulate_normalised(const Model& model, const Dataset& rows, Precision precision, const double* log_norm,
                             std::vector<double>& stats) override {
    check_door(model, rows, &stats);
    if (!log_norm && rows.rows() > 0) throw InvalidInput("accumulate_normalised: no per-row normalisers given");
    const PerRow in{.log_norm = log_norm};
    if (precision == Precision::fp64)
      run<double>(kc::PassMode::normalised, model, rows, in, &stats, nullptr, nullptr, false);
    else
      run<float>(kc::PassMode::normalised, model, rows, in, &stats, nullptr, nullptr, precision == Precision::tf32);
  }

 private:
  static void check_door(const Model& model, const Dataset& rows, const std::vector<double>* stats) {
    if (rows.cols() < model.columns())
      throw InvalidInput("the data has " + std::to_string(rows.cols()) + " columns; the model reads " +
                         std::to_string(model.columns()));
    if (rows.cols() > static_cast<std::size_t>(std::numeric_limits<int>::max()))
      throw InvalidInput("the CUDA kernels accept at most 2^31-1 columns, got " + std::to_string(rows.cols()));
    // Components index grid.y of the statistics and full-covariance kernels.
    if (model.components() > 65535)
      throw InvalidInput("the CUDA kernels accept at most 65535 components, got " + std::to_string(model.components()));
    if (stats && static_cast<std::int64_t>(stats->size()) != stat_layout(model).size)
      throw InvalidInput("statistics buffer has " + std::to_string(stats->size()) + " values; the model needs " +
                         std::to_string(stat_layout(model).size));
  }

  template <class T>
  TypedState<T>& state() {
    if constexpr (std::is_same_v<T, float>)
      return f32_;
    else
      return f64_;
  }

  static bool same_rows(const Dataset& a, const Dataset& b) {
    return a.data() == b.data() && a.rows() == b.rows() && a.cols() == b.cols() && a.dtype() == b.dtype();
  }

  static bool trace_enabled() {
    const char* v = std::getenv("MIXLE_CUDA_TRACE");
    return v != nullptr && *v != '\0' && std::strcmp(v, "0") != 0;
  }

  /// MIXLE_CUDA_TRACE: one line per pass on stderr — how its rows move and the memory that
  /// decided it (free + held is what the pass may plan with; it stays the same from pass to pass
  /// while nothing else allocates on the device).
  void trace_pass(kc::PassMode mode, std::int64_t n, const kc::ChunkPlan& plan, const kc::ChunkRequest& r) const {
    const char* what = mode == kc::PassMode::score        ? "score"
                       : mode == kc::PassMode::given      ? "given"
                       : mode == kc::PassMode::normalised ? "normalised"
                                                          : "accumulate";
    std::fprintf(stderr,
                 "mixle cuda: %s pass on %s, %lld rows: %s in chunks of %lld rows; free %zu + held %zu bytes, "
                 "budget %.0f bytes\n",
                 what, name().c_str(), static_cast<long long>(n), plan.resident ? "resident" : "streamed",
                 static_cast<long long>(plan.chunk), r.free_bytes, r.held_bytes, plan.budget_bytes);
  }

  /// Uploads all rows into state.resident unless they are already there.
  template <class T>
  void make_resident(TypedState<T>& st, const Dataset& rows, std::int64_t chunk) {
    if (st.resident_rows && same_rows(*st.resident_rows, rows)) return;
    st.resident_rows.reset();
    const std::int64_t n = static_cast<std::int64_t>(rows.rows());
    const std::size_t cols = rows.cols();
    st.resident.reserve(static_cast<std::size_t>(n) * cols);
    st.x_host[0].reserve(static_cast<std::size_t>(chunk) * cols);
    for (std::int64_t r0 = 0; r0 < n; r0 += chunk) {
      const std::int64_t m = std::min(chunk, n - r0);
      convert_rows(rows, r0, m, st.x_host[0].data());
      MIXLE_CUDA_TRY(cudaMemcpyAsync(st.resident.data() + static_cast<std::size_t>(r0) * cols, st.x_host[0].data(),
                                     static_cast<std::size_t>(m) * cols * sizeof(T), cudaMemcpyHostToDevice,
                                     copy_->get()));
      copy_->synchronize();
    }
    st.resident_rows = rows;
  }

  /// Host per-row inputs of a pass: given responsibilities (rows × K, given mode) or external
  /// normalisers (rows, normalised mode). Given mode folds about zero (accumulate_given).
  struct PerRow {
    const double* given = nullptr;
    const double* log_norm = nullptr;
  };

  template <class T>
  kernels::PassReport run(kc::PassMode mode, const Model& model, const Dataset& rows, const PerRow& in,
                          std::vector<double>* stats, double* loglik, double* resp, bool tf32) {
    kernels::PassReport report;
    device_stats_ = -1;  // stats_dev_ is about to be overwritten
    const std::int64_t n = static_cast<std::int64_t>(rows.rows());
    if (n == 0) return report;
    const double* given = mode == kc::PassMode::given ? in.given : nullptr;
    const double* log_norm = mode == kc::PassMode::normalised ? in.log_norm : nullptr;
    const double* weights = mode == kc::PassMode::score ? nullptr : rows.weights();  // staged like log_norm
    kc::DeviceGuard guard(device_);
    TypedState<T>& st = state<T>();
    const auto packed = pack_model<T>(model, rows.cols(), /*zero_shift=*/mode == kc::PassMode::given);
    const kernels::ModelView<T>& host_view = packed.view;
    const int K = host_view.components;
    const int cols = static_cast<int>(rows.cols());
    cudaStream_t cs = compute_->get();
    st.model.upload(host_view, cs);
    if (st.resident_rows && !same_rows(*st.resident_rows, rows)) {
      // Free a cached dataset that is not this one before measuring free memory.
      st.resident_rows.reset();
      st.resident = kc::DeviceBuffer<T>();
    }

    // Chunk size and residency (kernels/cuda/chunk_plan.hpp).
    std::size_t free_bytes = 0, total_bytes = 0;
    MIXLE_CUDA_TRY(cudaMemGetInfo(&free_bytes, &total_bytes));
    kc::ChunkRequest request;
    request.rows = n;
    request.row_bytes = static_cast<std::size_t>(cols) * sizeof(T);
    request.work_bytes_per_row =
        kc::work_bytes_per_row(host_view, given != nullptr, log_norm != nullptr, tf32, weights != nullptr);
    request.unit = kc::slot_rows(host_view.stat_size);  // chunks start at multiples
    request.forced_stream_rows = env_rows("MIXLE_CUDA_STREAM_ROWS", request.unit);
    request.max_chunk_rows = env_rows("MIXLE_CUDA_CHUNK_ROWS", request.unit);
    request.free_bytes = free_bytes;
    // The statistics and report buffers are reused too (allocated after the first measurement).
    request.held_bytes =
        st.held_bytes() + stats_dev_.size() * sizeof(double) + report_dev_.size() * sizeof(kc::DeviceReport);
    const kc::ChunkPlan chunk_plan = kc::plan_chunks(request);
    const bool resident = chunk_plan.resident;
    const std::int64_t chunk = chunk_plan.chunk;
    if (chunk <= 0)
      throw MemoryError("device " + name() + " has " + std::to_string(free_bytes >> 20) + " MiB free; one chunk of " +
                        std::to_string(request.unit) + " rows needs " +
                        std::to_string(static_cast<std::size_t>(chunk_plan.streamed_bytes_per_row *
                                                                    static_cast<double>(request.unit) +
                                                                static_cast<double>(kc::kPartialBudgetBytes)) >>
                                       20) +
                        " MiB");
    if (trace_enabled()) trace_pass(mode, n, chunk_plan, request);
    if (resident) {
      make_resident(st, rows, chunk);
    } else if (st.resident_rows) {
      // These rows are streamed this pass: a cached copy of them would only hold memory.
      st.resident_rows.reset();
      st.resident = kc::DeviceBuffer<T>();
    }

    const std::int64_t stat_size = host_view.stat_size;
    // One spare slot: all_reduce_statistics appends the caller's error mark to the statistics.
    stats_dev_.reserve(static_cast<std::size_t>(stat_size) + 1);
    report_dev_.reserve(1);
    MIXLE_CUDA_TRY(cudaMemsetAsync(stats_dev_.data(), 0, static_cast<std::size_t>(stat_size) * sizeof(double), cs));
    MIXLE_CUDA_TRY(cudaMemsetAsync(report_dev_.data(), 0, sizeof(kc::DeviceReport), cs));
    cublasHandle_t tf32_handle = nullptr;
    if (tf32) {
      if (!cublas_) cublas_.emplace();
      tf32_handle = cublas_->get();
    }
    const std::size_t ucols = static_cast<std::size_t>(cols);
    for (int b = 0; b < 2; ++b) {
      if (!resident)
        st.x[b].reserve(static_cast<std::size_t>(chunk) * ucols),
            st.x_host[b].reserve(static_cast<std::size_t>(chunk) * ucols);
      if (given)
        st.given[b].reserve(static_cast<std::size_t>(chunk) * K),
            st.given_host[b].reserve(static_cast<std::size_t>(chunk) * K);
      if (log_norm)
        st.norm[b].reserve(static_cast<std::size_t>(chunk)), st.norm_host[b].reserve(static_cast<std::size_t>(chunk));
      if (weights)
        st.weights[b].reserve(static_cast<std::size_t>(chunk)),
            st.weights_host[b].reserve(static_cast<std::size_t>(chunk));
    }
    if (mode == kc::PassMode::score) {
      st.resp_out.reserve(static_cast<std::size_t>(chunk) * K);
      st.loglik_out.reserve(static_cast<std::size_t>(chunk));
    }

    int index = 0;
    for (std::int64_t r0 = 0; r0 < n; r0 += chunk, ++index) {
      const std::int64_t m = std::min(chunk, n - r0);
      const int b = index & 1;
      const T* x = nullptr;
      const T* given_dev = nullptr;
      const double* norm_dev = nullptr;
      const double* weights_dev = nullptr;
      if (!resident || given || log_norm || weights) {
        // The pinned buffers of slot b are free once their previous copy has completed.
        h2d_done_[b]->synchronize();
        if (!resident) convert_rows(rows, r0, m, st.x_host[b].data());
        if (given) {
          // Weighted rows' given responsibilities are scaled here, in T as the CPU kernels do.
          const double* g = given + static_cast<std::size_t>(r0) * K;
          for (std::size_t i = 0; i < static_cast<std::size_t>(m) * K; ++i)
            st.given_host[b].data()[i] =
                weights ? static_cast<T>(g[i]) * static_cast<T>(weights[r0 + static_cast<std::int64_t>(i) / K])
                        : static_cast<T>(g[i]);
        }
        if (log_norm) std::copy(log_norm + r0, log_norm + r0 + m, st.norm_host[b].data());
        if (weights) std::copy(weights + r0, weights + r0 + m, st.weights_host[b].data());
        // The device buffers of slot b are free once the compute of chunk index − 2 is done.
        MIXLE_CUDA_TRY(cudaStreamWaitEvent(copy_->get(), compute_done_[b]->get(), 0));
        if (!resident)
          MIXLE_CUDA_TRY(cudaMemcpyAsync(st.x[b].data(), st.x_host[b].data(),
                                         static_cast<std::size_t>(m) * ucols * sizeof(T), cudaMemcpyHostToDevice,
                                         copy_->get()));
        if (given)
          MIXLE_CUDA_TRY(cudaMemcpyAsync(st.given[b].data(), st.given_host[b].data(),
                                         static_cast<std::size_t>(m) * K * sizeof(T), cudaMemcpyHostToDevice,
                                         copy_->get()));
        if (log_norm)
          MIXLE_CUDA_TRY(cudaMemcpyAsync(st.norm[b].data(), st.norm_host[b].data(),
                                         static_cast<std::size_t>(m) * sizeof(double), cudaMemcpyHostToDevice,
                                         copy_->get()));
        if (weights)
          MIXLE_CUDA_TRY(cudaMemcpyAsync(st.weights[b].data(), st.weights_host[b].data(),
                                         static_cast<std::size_t>(m) * sizeof(double), cudaMemcpyHostToDevice,
                                         copy_->get()));
        h2d_done_[b]->record(copy_->get());
        MIXLE_CUDA_TRY(cudaStreamWaitEvent(cs, h2d_done_[b]->get(), 0));
        given_dev = given ? st.given[b].data() : nullptr;
        norm_dev = log_norm ? st.norm[b].data() : nullptr;
        weights_dev = weights ? st.weights[b].data() : nullptr;
      }
      x = resident ? st.resident.data() + static_cast<std::size_t>(r0) * ucols : st.x[b].data();
      kc::run_chunk<T>(mode, st.model.view(), x, m, cols, r0, given_dev, norm_dev, weights_dev, st.ws,
                       stats_dev_.data(), report_dev_.data(), tf32_handle, cs);
      compute_done_[b]->record(cs);
      if (mode == kc::PassMode::score) copy_out(st, m, K, r0, loglik, resp);
    }

    // Results: statistics (added to the caller's) and the bad-row report.
    stats_host_.reserve(static_cast<std::size_t>(std::max<std::int64_t>(stat_size, 1)));
    report_host_.reserve(1);
    if (mode != kc::PassMode::score)
      MIXLE_CUDA_TRY(cudaMemcpyAsync(stats_host_.data(), stats_dev_.data(),
                                     static_cast<std::size_t>(stat_size) * sizeof(double), cudaMemcpyDeviceToHost, cs));
    MIXLE_CUDA_TRY(
        cudaMemcpyAsync(report_host_.data(), report_dev_.data(), sizeof(kc::DeviceReport), cudaMemcpyDeviceToHost, cs));
    compute_->synchronize();
    if (mode != kc::PassMode::score) {
      // normalised: the caller owns the log-likelihood and row count (header [0], [1]).
      const std::int64_t first = mode == kc::PassMode::normalised ? kernels::kStatHeader : 0;
      for (std::int64_t j = first; j < stat_size; ++j) (*stats)[j] += stats_host_.data()[j];
    }
    if (mode == kc::PassMode::accumulate) device_stats_ = stat_size;
    const kc::DeviceReport& dr = *report_host_.data();
    if (trace_enabled() && tf32 && mode == kc::PassMode::accumulate)
      // The statistics guard's choice (docs/numerics.md §4); no " rows: " here (trace readers).
      std::fprintf(stderr,
                   "mixle cuda: accumulate pass on %s: second moments of %llu of %lld (row, component) pairs summed "
                   "about the centre\n",
                   name().c_str(), dr.expanded_pairs, static_cast<long long>(n) * K);
    report.impossible_rows = static_cast<std::int64_t>(dr.impossible_rows);
    report.nan_rows = static_cast<std::int64_t>(dr.nan_rows);
    report.num_listed = std::min(dr.num_listed, kernels::PassReport::kMaxListed);
    for (int i = 0; i < report.num_listed; ++i) report.listed[i] = dr.listed[i];
    return report;
  }

  bool all_reduce_statistics(comms::Communicator& comm, std::vector<double>& values) override {
    const std::size_t n = values.size();
    if (device_stats_ < 0 || comm.memory_space() != comms::MemorySpace::device) return false;
    const auto held = static_cast<std::size_t>(device_stats_);
    if (n < held || n > held + 1 || stats_dev_.size() < n) return false;
    kc::DeviceGuard guard(device_);
    cudaStream_t cs = compute_->get();
    if (n > held)
      MIXLE_CUDA_TRY(cudaMemcpyAsync(stats_dev_.data() + held, values.data() + held, (n - held) * sizeof(double),
                                     cudaMemcpyHostToDevice, cs));
    compute_->synchronize();  // the communicator reduces on its own stream
    device_stats_ = -1;       // from here the buffer holds sums over the ranks
    comm.all_reduce_sum(std::span<double>(stats_dev_.data(), n), comms::MemorySpace::device);
    stats_host_.reserve(n);
    MIXLE_CUDA_TRY(
        cudaMemcpyAsync(stats_host_.data(), stats_dev_.data(), n * sizeof(double), cudaMemcpyDeviceToHost, cs));
    compute_->synchronize();
    std::copy_n(stats_host_.data(), n, values.begin());
    if (trace_enabled())
      std::fprintf(stderr, "mixle cuda: %zu statistics all-reduced in device memory by %s\n", n,
                   std::string(comm.type()).c_str());
    return true;
  }

  /// Score: copies the chunk's log-likelihoods and responsibilities to the caller (float64).
  template <class T>
  void copy_out(TypedState<T>& st, std::int64_t m, int K, std::int64_t r0, double* loglik, double* resp) {
    cudaStream_t cs = compute_->get();
    if (loglik)
      MIXLE_CUDA_TRY(cudaMemcpyAsync(st.loglik_out.data(), st.ws.loglik.data(),
                                     static_cast<std::size_t>(m) * sizeof(double), cudaMemcpyDeviceToHost, cs));
    if (resp)
      MIXLE_CUDA_TRY(cudaMemcpyAsync(st.resp_out.data(), st.ws.resp.data(), static_cast<std::size_t>(m) * K * sizeof(T),
                                     cudaMemcpyDeviceToHost, cs));
    compute_->synchronize();
    if (loglik) std::copy(st.loglik_out.data(), st.loglik_out.data() + m, loglik + r0);
    if (resp) {
      const T* src = st.resp_out.data();
      double* dst = resp + static_cast<std::size_t>(r0) * K;
      for (std::size_t i = 0; i < static_cast<std::size_t>(m) * K; ++i) dst[i] = static_cast<double>(src[i]);
    }
  }

  int device_;
  std::optional<kc::Stream> compute_, copy_;
  std::array<std::optional<kc::Event>, 2> h2d_done_, compute_done_;
  std::optional<kc::CublasHandle> cublas_;
  kc::DeviceBuffer<double> stats_dev_;
  std::int64_t device_stats_ = -1;  // values of the last call's statistics in stats_dev_, if an accumulate
  kc::DeviceBuffer<kc::DeviceReport> report_dev_;
  kc::PinnedBuffer<double> stats_host_;
  kc::PinnedBuffer<kc::DeviceReport> report_host_;
  TypedState<float> f32_;
  TypedState<double> f64_;
};

}  // namespace

int cuda_device_count() noexcept {
  try {
    return kc::device_count();
  } catch (...) {
    return 0;  // a broken runtime is reported when a device is actually asked for
  }
}

std::unique_ptr<Compute> make_cuda_compute(int device) {
  const int count = kc::device_count();
  if (device < 0 || device >= count)
    throw InvalidInput("cuda:" + std::to_string(device) + " does not exist: this machine has " + std::to_string(count) +
                       " CUDA device(s)" + (count ? "; use cuda:0…cuda:" + std::to_string(count - 1) : ""));
  return std::make_unique<CudaCompute>(device);
}

}  // namespace mixle::engine
#endif  // MIXLE_HAVE_CUDA_KERNELS
