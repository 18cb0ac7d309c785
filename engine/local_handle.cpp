#include "engine/local_handle.hpp"
#include "engine/report.hpp"
#include "engine/row_hash.hpp"
#include "kernels/cpu/cpu_kernels.hpp"

#include <mixle/error.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <span>
#include <vector>

namespace mixle::engine {

void check_data_against(const Model& model, const Dataset& data) {
  if (model.columns() > data.cols())
    throw InvalidInput(data.source() + ": the model reads columns up to " + std::to_string(model.columns() - 1) +
                       " but the data has only " + std::to_string(data.cols()) + " columns");
  for (const Part& p : model.parts) family_ops(p.family).check_data(p, data);
}

LocalEncodedData::LocalEncodedData(Dataset data, std::unique_ptr<Compute> compute)
    : data_(std::move(data)), compute_(std::move(compute)) {}

LocalEncodedData::LocalEncodedData(Dataset data, std::shared_ptr<Compute> compute)
    : data_(std::move(data)), compute_(std::move(compute)) {}

std::unique_ptr<EncodedData> LocalEncodedData::create(const Dataset& data, const EncodedDataOptions& options) {
  return std::make_unique<LocalEncodedData>(
      data, make_compute(options.device, options.threads, prune_from_name(options.prune)));
}

namespace {

/// `report` of a pass over rows that start `offset` rows into this handle's: its listed rows
/// counted from this handle's row 0.
kernels::PassReport shifted(kernels::PassReport report, std::size_t offset) {
  for (std::int64_t& row : std::span(report.listed, static_cast<std::size_t>(report.num_listed)))
    row += static_cast<std::int64_t>(offset);
  return report;
}

}  // namespace

void LocalEncodedData::stream_rows(std::size_t chunk_rows) {
  if (chunk_rows % kernels::cpu::kTileRows != 0)
    throw InvalidInput("streamed chunks of " + std::to_string(chunk_rows) + " rows: a multiple of " +
                       std::to_string(kernels::cpu::kTileRows) + " rows (the kernels' tile) is required");
  chunk_rows_ = chunk_rows;
  encoded_f32_ = Dataset();  // a whole copy is what streaming avoids (resident passes make it again)
}

template <class Visit>
void LocalEncodedData::for_each_chunk(std::size_t chunk, Visit&& visit) const {
  for (std::size_t begin = 0; begin < data_.rows(); begin += chunk) {
    const std::size_t end = std::min(data_.rows(), begin + chunk);
    visit(data_.slice(begin, end), begin);
    if (chunk_rows_ > 0) data_.release(begin, end);
  }
}

void LocalEncodedData::check(const Model& model) {
  if (model.columns() > data_.cols() || chunk_rows_ == 0) return check_data_against(model, data_);
  // Part by part, as check_data_against goes, so that the bad value named is the same one.
  for (const Part& p : model.parts)
    for_each_chunk(chunk_rows_, [&](const Dataset& rows, std::size_t) { family_ops(p.family).check_data(p, rows); });
}

double LocalEncodedData::total_weight() {
  const double* w = data_.weights();
  if (!w) return static_cast<double>(data_.rows());
  double total = 0.0;
  for (std::size_t r = 0; r < data_.rows(); ++r) total += w[r];
  for (const double v : incomplete_.weights) total += v;  // held at weight 0 in data_
  return total;
}

std::vector<double> LocalEncodedData::column_max() {
  std::vector<double> mx(data_.cols(), -std::numeric_limits<double>::infinity());
  for_each_chunk(chunk_rows_ ? chunk_rows_ : data_.rows(), [&](const Dataset& rows, std::size_t) {
    for (std::size_t r = 0; r < rows.rows(); ++r)
      for (std::size_t c = 0; c < rows.cols(); ++c) mx[c] = std::max(mx[c], rows.at(r, c));
  });
  return mx;
}

const Dataset& LocalEncodedData::encoded_for(Precision precision) {
  // Streamed rows are converted chunk by chunk: a whole copy is what streaming avoids.
  if (chunk_rows_ > 0 || !allow_f32_copy_ || data_.empty() || f32_copy_bytes(compute_->name(), precision, data_) == 0)
    return data_;
  if (encoded_f32_.rows() == data_.rows()) return encoded_f32_;
  std::vector<float> values(data_.rows() * data_.cols());
  const double* x = data_.as<double>();
  for (std::size_t i = 0; i < values.size(); ++i) values[i] = static_cast<float>(x[i]);
  auto owned = std::make_shared<const std::vector<float>>(std::move(values));
  const void* first = owned->data();
  encoded_f32_ = Dataset::from_storage(std::move(owned), first, DType::f32, data_.rows(), data_.cols(), data_.source(),
                                       data_.first_row());
  if (data_.weighted())
    encoded_f32_ = encoded_f32_.with_weights(std::vector<double>(data_.weights(), data_.weights() + data_.rows()));
  return encoded_f32_;
}

Statistics LocalEncodedData::stream_accumulate(const Model& model, const EstimatorOptions& options) {
  Statistics s = Statistics::zero(static_cast<std::size_t>(stat_layout(model).size));
  if (chunk_rows_ == 0) {
    const kernels::PassReport report =
        compute_->accumulate(model, encoded_for(options.precision), options.precision, s.values);
    raise_for(report, data_.source(), data_.first_row());
    last_pass_ = report;
  } else {
    // Chunks start at multiples of the kernels' tile: the same sums, in the same order, as one
    // call; each chunk's pages are released after it, a single chunk's too.
    kernels::PassReport report;
    for_each_chunk(chunk_rows_, [&](const Dataset& rows, std::size_t begin) {
      report.merge(shifted(compute_->accumulate(model, rows, options.precision, s.values), begin));
    });
    raise_for(report, data_.source(), data_.first_row());
    last_pass_ = report;
  }
  if (options.marginalise) {
    s.values.resize(static_cast<std::size_t>(stat_size(model, options)), 0.0);
    accumulate_incomplete(model, data_, incomplete_, options.precision, incomplete_threads_, s.values);
  }
  return s;
}

namespace {

/// Rows `order` of `rows`, in that order, as a dataset that owns them (with their weights).
/// Owned, not a view of a reused buffer: the CUDA kernels keep rows resident by their address,
/// and a cached dataset keeps its storage — so its address — from being reused.
template <class T>
Dataset gather(const Dataset& rows, const std::vector<std::size_t>& order) {
  const std::size_t C = rows.cols();
  const T* x = rows.as<T>();
  std::vector<T> values(order.size() * C);
  for (std::size_t i = 0; i < order.size(); ++i) std::copy_n(x + order[i] * C, C, values.begin() + i * C);
  Dataset grouped = Dataset::from_vector(std::move(values), order.size(), C);
  if (const double* w = rows.weights()) {
    std::vector<double> weights(order.size());
    for (std::size_t i = 0; i < order.size(); ++i) weights[i] = w[order[i]];
    grouped = grouped.with_weights(std::move(weights), rows.source());
  }
  return grouped;
}

}  // namespace

Statistics LocalEncodedData::accumulate_assigned(const Model& shape, const Assigner& assign) {
  Statistics s = Statistics::zero(static_cast<std::size_t>(stat_layout(shape).size));
  const std::size_t K = shape.components();
  // Chunks of ~1M responsibilities and ~1M values of rows (8 MiB each, reused chunk after
  // chunk): a multiple of the kernels' 128-row block, at least one block (a valid model has
  // K ≥ 1). A floor of 4096 rows made this block 3.3 GB at K = 100 000 — more than the model —
  // on the rank initialising a component-sharded fit whose devices were sized for a shard; the
  // columns bound the rows a streamed fit maps at once (and copies, grouped) when K is small.
  std::size_t chunk = std::max<std::size_t>(128, (std::size_t{1} << 20) / std::max(K, data_.cols()));
  chunk -= chunk % 128;
  std::vector<std::size_t> label, start(K + 1), order, grouped_label;
  for_each_chunk(chunk, [&](const Dataset& rows, std::size_t begin) {
    const std::size_t m = rows.rows();
    label.assign(m, K);
    assign(rows, first_global_row() + begin, K, label.data());
    // The assigned rows grouped by component, in row order within each (a counting sort): a
    // 128-row block of the kernels then holds one or two components, and the kernels fold only
    // the components a block has mass for — about rows × D work instead of rows × K × D.
    std::fill(start.begin(), start.end(), 0);
    const double* w = rows.weights();
    for (std::size_t r = 0; r < m; ++r) {
      if (label[r] < K) {
        ++start[label[r] + 1];
      } else {
        s.values[1] += w ? w[r] : 1.0;  // left out: counted as a row, folded into no component
      }
    }
    for (std::size_t k = 0; k < K; ++k) start[k + 1] += start[k];
    order.resize(start[K]);
    for (std::size_t r = 0; r < m; ++r)
      if (label[r] < K) order[start[label[r]]++] = r;
    if (order.empty()) return;
    const Dataset grouped = rows.dtype() == DType::f32 ? gather<float>(rows, order) : gather<double>(rows, order);
    grouped_label.resize(order.size());
    for (std::size_t i = 0; i < order.size(); ++i) grouped_label[i] = label[order[i]];
    compute_->accumulate_labelled(shape, grouped, grouped_label.data(), s.values);
  });
  return s;
}

void LocalEncodedData::fold_rows(std::vector<double>&, const RowVisitor& visit) {
  constexpr std::size_t kChunk = std::size_t{1} << 16;
  for_each_chunk(kChunk, [&](const Dataset& rows, std::size_t begin) { visit(rows, first_global_row() + begin); });
}

Dataset LocalEncodedData::sample_local(std::uint64_t seed, double p) const {
  std::vector<double> values, weights;
  std::size_t n = 0;
  const std::size_t C = data_.cols(), first = first_global_row();
  const double* w = data_.weights();
  // Room for the expected draw and 5 standard deviations more, so the copy rarely grows.
  const double expected = p * static_cast<double>(data_.rows());
  values.reserve(static_cast<std::size_t>(expected + 5.0 * std::sqrt(expected) + 1.0) * C);
  for_each_chunk(chunk_rows_ ? chunk_rows_ : data_.rows(), [&](const Dataset& rows, std::size_t begin) {
    const float* f32 = rows.dtype() == DType::f32 ? rows.as<float>() : nullptr;
    const double* f64 = f32 ? nullptr : rows.as<double>();
    for (std::size_t i = 0; i < rows.rows(); ++i) {
      const std::size_t r = begin + i;
      if (to_unit(row_draw(seed, 3, first + r)) >= p) continue;
      if (w && w[r] == 0.0) continue;  // a row of weight 0 is not in the fit: never a starting centre
      if (f32)
        values.insert(values.end(), f32 + i * C, f32 + (i + 1) * C);
      else
        values.insert(values.end(), f64 + i * C, f64 + (i + 1) * C);
      if (w) weights.push_back(w[r]);
      ++n;
    }
  });
  Dataset out = Dataset::from_vector(std::move(values), n, C);
  return w ? out.with_weights(std::move(weights)) : out;
}

Dataset LocalEncodedData::sample(std::uint64_t seed, std::size_t target) {
  const double p = std::min(1.0, static_cast<double>(target) / static_cast<double>(std::max<std::size_t>(rows(), 1)));
  return sample_local(seed, p);
}

}  // namespace mixle::engine
