#include "engine/initialise.hpp"
#include "engine/nearest_centres.hpp"

#include <mixle/error.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>

#include <omp.h>

namespace mixle::engine {

Model model_shape(EncodedData& data, const std::vector<PartSpec>& parts, std::size_t K) {
  if (K == 0) throw InvalidInput("components = 0; a mixture needs K ≥ 1");
  if (K > data.rows())
    throw InvalidInput("components = " + std::to_string(K) + " exceeds the " + std::to_string(data.rows()) +
                       " data rows; K must be at most the number of rows");
  Model model;
  model.weights.assign(K, 1.0 / static_cast<double>(K));
  std::vector<double> col_max;
  for (const PartSpec& spec : parts) {
    if (spec.col_end > data.columns())
      throw InvalidInput("part " + std::string(family_name(spec.family)) + " reads column " +
                         std::to_string(spec.col_end - 1) + " but the data has " + std::to_string(data.columns()) +
                         " columns");
    Part p;
    p.family = spec.family;
    p.col_begin = spec.col_begin;
    p.col_end = spec.col_end;
    p.categories = spec.categories;
    if (family_descriptor(p.family).categories && p.categories == 0) {
      if (col_max.empty()) col_max = data.column_max();
      double mx = 0.0;  // so mx ≥ 0: a negative code is outside the support, refused when scored
      for (std::size_t c = p.col_begin; c < p.col_end; ++c) mx = std::max(mx, col_max[c]);
      if (!std::isfinite(mx) || mx > 1e7)
        throw InvalidInput(std::string(family_name(p.family)) + " columns [" + std::to_string(p.col_begin) + ", " +
                           std::to_string(p.col_end) +
                           "): cannot infer the number of categories from the largest code " + std::to_string(mx) +
                           "; give it as " + family_name(p.family) + ":begin-end:V");
      p.categories = static_cast<std::size_t>(mx) + 1;
    }
    family_ops(p.family).resize(p, K);
    model.parts.push_back(std::move(p));
  }
  validate_model(model);
  return model;
}

namespace {

// The k-means distances are most of the initialisation's cost. Every squared distance that
// decides something is summed over the coordinates in order 0 … C−1 in float64, so its bits do
// not depend on how the loops around it are arranged; the loops run across centres (or points)
// in SIMD lanes and across points in threads, and every choice — nearest centre, ties to the
// lowest index — is the plain loop's (CentreSet screens in float32 first, within a bound).

int thread_count(int threads) { return threads > 0 ? threads : omp_get_max_threads(); }

/// Points per thread's share of a seeding or labelling step (the seeding's SIMD loop length).
constexpr std::size_t kPointBlock = 1024;

/// `rows` (n × C, row-major) stored by coordinate: C × n.
std::vector<double> by_coordinate(const std::vector<double>& rows, std::size_t n, std::size_t C) {
  std::vector<double> t(rows.size());
  for (std::size_t r = 0; r < n; ++r)
    for (std::size_t c = 0; c < C; ++c) t[c * n + r] = rows[r * C + c];
  return t;
}

/// One seeding step for points [r0, r1) of the n stored by coordinate: d2[r] lowered to the
/// squared distance to `centre` where that is less, the distance summed over the coordinates in
/// order (the rule's bits, in every build: no FMA in the AVX2 clone).
MIXLE_WITH_AVX2_CLONE
void lower_distances(const double* pts_t, std::size_t n, std::size_t C, const double* centre, std::size_t r0,
                     std::size_t r1, double* to_new, double* d2) {
  std::fill(to_new + r0, to_new + r1, 0.0);
  for (std::size_t c = 0; c < C; ++c) {
    const double* coordinate = pts_t + c * n;
    const double m = centre[c];
#pragma omp simd
    for (std::size_t r = r0; r < r1; ++r) to_new[r] += (coordinate[r] - m) * (coordinate[r] - m);
  }
  for (std::size_t r = r0; r < r1; ++r) d2[r] = std::min(d2[r], to_new[r]);
}

}  // namespace

// A modelled column enters the distance standardised (numeric columns), or as V indicators of
// its code (columns of a family with categories: codes are labels, so codes 0 and 3 are as far
// apart as 0 and 1 — as numbers they would not be, and clusters that differ only in which code
// they favour would merge). Every column adds 2 on average to the squared distance of two rows
// of `rows` (all ordered pairs): a numeric column scaled to unit variance, a code column's
// indicators by 1/√(1 − Σ p_v²), p_v its codes' frequencies (two rows differ in 2 indicators
// with probability 1 − Σ p_v²).
KmeansCoordinates::KmeansCoordinates(const Model& shape, const Dataset& rows) {
  // Only the columns some part models: others may hold anything (NaN, text read as NaN, ids).
  for (std::size_t c = 0; c < shape.columns(); ++c)
    for (const Part& p : shape.parts)
      if (c >= p.col_begin && c < p.col_end) {
        Feature f{};
        f.column = c;
        f.categories = family_descriptor(p.family).categories ? p.categories : 0;
        features_.push_back(f);
        break;
      }
  const std::size_t n = rows.rows(), stride = rows.cols();
  // Read through the element type (Dataset::at's switch per value costs more than the sums).
  const float* f32 = n && rows.dtype() == DType::f32 ? rows.as<float>() : nullptr;
  const double* f64 = n && rows.dtype() == DType::f64 ? rows.as<double>() : nullptr;
  const auto value = [&](std::size_t r, std::size_t c) {
    return f32 ? static_cast<double>(f32[r * stride + c]) : f64[r * stride + c];
  };
  std::vector<std::size_t> numeric;  // features_ indices of the numeric columns
  for (std::size_t i = 0; i < features_.size(); ++i) {
    Feature& f = features_[i];
    width_ += f.categories ? f.categories : 1;
    if (!f.categories) {
      numeric.push_back(i);
      continue;
    }
    // Counted, then divided: a code every row holds has frequency exactly 1, where n terms of
    // 1/n can sum to a hair below 1 and 1/√(1 − Σ p²) would then scale it by millions.
    std::vector<std::size_t> count(f.categories, 0);
    for (std::size_t r = 0; r < n; ++r) {
      const double v = value(r, f.column);
      if (v >= 0.0 && v < static_cast<double>(f.categories)) ++count[static_cast<std::size_t>(v)];
    }
    double same = 0.0;
    for (const std::size_t c : count) {
      const double q = static_cast<double>(c) / static_cast<double>(n);
      same += q * q;
    }
    f.scale = same < 1.0 ? 1.0 / std::sqrt(1.0 - same) : 1.0;
  }
  // The numeric columns' ranges and means in one pass over the rows, their variances in a
  // second: each column's sums run in row order as a pass per column would, so the bits are the
  // same, but the rows are read as they lie in memory (a pass per column read a cache line a value).
  const std::size_t F = numeric.size();
  std::vector<double> lo(F, std::numeric_limits<double>::infinity()), hi(F, -std::numeric_limits<double>::infinity()),
      mean(F, 0.0), var(F, 0.0);
  for (std::size_t r = 0; r < n; ++r)
    for (std::size_t j = 0; j < F; ++j) {
      const double v = value(r, features_[numeric[j]].column);
      lo[j] = std::min(lo[j], v);
      hi[j] = std::max(hi[j], v);
      mean[j] += v / static_cast<double>(n);
    }
  // A column the sample holds constant keeps scale 1 about its value: about a rounded mean its
  // variance would be a rounding error, and 1/√ of it a scale of millions.
  for (std::size_t j = 0; j < F; ++j)
    if (lo[j] == hi[j]) mean[j] = lo[j];  // constant: so the variance below is exactly 0
  for (std::size_t r = 0; r < n; ++r)
    for (std::size_t j = 0; j < F; ++j) {
      const double v = value(r, features_[numeric[j]].column);
      var[j] += (v - mean[j]) * (v - mean[j]);
    }
  for (std::size_t j = 0; j < F; ++j) {
    Feature& f = features_[numeric[j]];
    f.mean = mean[j];
    f.scale = var[j] > 0.0 ? 1.0 / std::sqrt(var[j] / static_cast<double>(n)) : 1.0;
  }
}

void KmeansCoordinates::embed(const Dataset& rows, std::size_t r, double* out) const {
  // The row read once through its element type (this runs for every row of the data).
  const std::size_t offset = r * rows.cols();
  if (rows.dtype() == DType::f32)
    embed_values(static_cast<const float*>(rows.data()) + offset, out);
  else
    embed_values(static_cast<const double*>(rows.data()) + offset, out);
}

template <class T>
void KmeansCoordinates::embed_values(const T* row, double* out) const {
  for (const Feature& f : features_) {
    const double v = static_cast<double>(row[f.column]);
    if (!f.categories) {
      *out++ = (v - f.mean) * f.scale;
      continue;
    }
    std::fill(out, out + f.categories, 0.0);
    // A code outside [0, V) is an impossible row, refused by the data check: no indicator here.
    if (v >= 0.0 && v < static_cast<double>(f.categories)) out[static_cast<std::size_t>(v)] = f.scale;
    out += f.categories;
  }
}

std::size_t kmeans_sample_rows(std::size_t components) { return std::max(kKmeansSample, 4 * components); }

KmeansStart kmeans_on_sample(EncodedData& data, const Model& shape, std::uint64_t seed, int threads) {
  const std::size_t K = shape.components();
  const Dataset sample = data.sample(seed, kmeans_sample_rows(K));
  const std::size_t n = sample.rows();
  if (n < K)
    throw InvalidInput("kmeans++ initialisation drew " + std::to_string(n) + " sample rows for K = " +
                       std::to_string(K) + " components; use fewer components or --init select");
  KmeansStart start{KmeansCoordinates(shape, sample), {}};
  const KmeansCoordinates& coordinates = start.coordinates;
  const std::size_t C = coordinates.width();
  std::vector<double> pts(n * C);
  for (std::size_t r = 0; r < n; ++r) coordinates.embed(sample, r, &pts[r * C]);

  const int workers = thread_count(threads);
  std::mt19937_64 rng(seed ^ 0x6b6d65616e732b2bull);
  std::vector<double>& centres = start.centres;
  centres.resize(K * C);
  std::vector<double> d2(n, std::numeric_limits<double>::infinity());
  // Weighted rows (Dataset::weights) count as that many copies: the first centre is drawn in
  // proportion to weight, the others to weight × D², and Lloyd's means are weighted.
  const double* weight = sample.weights();
  std::size_t first = std::uniform_int_distribution<std::size_t>(0, n - 1)(rng);
  if (weight) {
    double total = 0.0;
    for (std::size_t r = 0; r < n; ++r) total += weight[r];
    double u = std::uniform_real_distribution<double>(0.0, total)(rng);
    for (first = 0; first + 1 < n && !(u < weight[first]); ++first) u -= weight[first];
  }
  std::copy_n(pts.begin() + first * C, C, centres.begin());
  // Seeding: each new centre lowers every point's distance to its nearest centre so far. The
  // points are stored by coordinate here so that the loop over points is the SIMD one.
  const std::vector<double> pts_t = by_coordinate(pts, n, C);
  std::vector<double> to_new(n);
  const auto blocks = static_cast<std::int64_t>((n + kPointBlock - 1) / kPointBlock);
  for (std::size_t k = 1; k < K; ++k) {
    const double* centre = &centres[(k - 1) * C];
#pragma omp parallel for num_threads(workers) if (workers > 1 && blocks > 1) schedule(static)
    for (std::int64_t b = 0; b < blocks; ++b) {
      const std::size_t r0 = static_cast<std::size_t>(b) * kPointBlock, r1 = std::min(n, r0 + kPointBlock);
      lower_distances(pts_t.data(), n, C, centre, r0, r1, to_new.data(), d2.data());
    }
    double total = 0.0;
    for (std::size_t r = 0; r < n; ++r) total += weight ? weight[r] * d2[r] : d2[r];
    // With total = 0 every sample point coincides with a centre already chosen, so any pick
    // duplicates one — and a duplicate never wins a row (ties go to the lower index): the last
    // point is as good as any. n - 1 is also where rounding leaves u past the last d2.
    std::size_t pick = n - 1;
    if (total > 0.0) {
      double u = std::uniform_real_distribution<double>(0.0, total)(rng);
      for (std::size_t r = 0; r + 1 < n; ++r) {  // past every other row, the last is the pick
        const double mass = weight ? weight[r] * d2[r] : d2[r];
        if (u < mass) {
          pick = r;
          break;
        }
        u -= mass;
      }
    }
    std::copy_n(pts.begin() + pick * C, C, centres.begin() + k * C);
  }
  // A few Lloyd iterations on the sample; once no label changes, the centres cannot either.
  // Labels come from CentreSet (nearest_centre's rule through a bounded float32 screen).
  const auto point_blocks = static_cast<std::int64_t>((n + kPointBlock - 1) / kPointBlock);
  auto label_points = [&](const CentreSet& set, std::vector<std::size_t>& label) {
#pragma omp parallel for num_threads(workers) if (workers > 1 && point_blocks > 1) schedule(static)
    for (std::int64_t b = 0; b < point_blocks; ++b) {
      const std::size_t r0 = static_cast<std::size_t>(b) * kPointBlock, r1 = std::min(n, r0 + kPointBlock);
      set.nearest(&pts[r0 * C], r1 - r0, &label[r0]);
    }
  };
  std::vector<std::size_t> label(n, K), previous;
  for (int it = 0; it < kLloydIterations; ++it) {
    previous = label;
    label_points(CentreSet(centres, K, C), label);
    if (label == previous) break;
    std::vector<double> sum(K * C, 0.0), count(K, 0.0);
    for (std::size_t r = 0; r < n; ++r) {
      const double w = weight ? weight[r] : 1.0;
      count[label[r]] += w;
      for (std::size_t c = 0; c < C; ++c) sum[label[r] * C + c] += w * pts[r * C + c];
    }
    for (std::size_t k = 0; k < K; ++k)
      if (count[k] > 0.0)  // an empty cluster keeps its centre
        for (std::size_t c = 0; c < C; ++c) centres[k * C + c] = sum[k * C + c] / count[k];
  }
  return start;
}

void label_rows(const Dataset& rows, const KmeansCoordinates& coordinates, const CentreSet& centres, std::size_t* label,
                int threads) {
  const int workers = thread_count(threads);
  const std::size_t C = coordinates.width();
  const auto blocks = static_cast<std::int64_t>((rows.rows() + kPointBlock - 1) / kPointBlock);
#pragma omp parallel num_threads(workers) if (workers > 1 && blocks > 1)
  {
    std::vector<double> x(kPointBlock * C);
#pragma omp for schedule(static)
    for (std::int64_t b = 0; b < blocks; ++b) {
      const std::size_t r0 = static_cast<std::size_t>(b) * kPointBlock, r1 = std::min(rows.rows(), r0 + kPointBlock);
      for (std::size_t r = r0; r < r1; ++r) coordinates.embed(rows, r, &x[(r - r0) * C]);
      centres.nearest(x.data(), r1 - r0, label + r0);
    }
  }
}

Model model_from_centres(EncodedData& data, const Model& shape, const KmeansStart& start,
                         const EstimatorOptions& options, int threads) {
  const CentreSet centres(start.centres, shape.components(), start.coordinates.width());
  const Statistics s =
      data.accumulate_assigned(shape, [&](const Dataset& rows, std::size_t, std::size_t, std::size_t* label) {
        label_rows(rows, start.coordinates, centres, label, threads);
      });
  MStepResult r = m_step(shape, s.values, shift_table(shape, Precision::fp64, true), options);
  return std::move(r.model);
}

Model initialise_kmeans_pp(EncodedData& data, const Model& shape, std::uint64_t seed, const EstimatorOptions& options,
                           int threads) {
  return model_from_centres(data, shape, kmeans_on_sample(data, shape, seed, threads), options, threads);
}

}  // namespace mixle::engine
