// Initial models: 'select' (the reference's initialize(rng, p)) and 'kmeans++' seeding.
#pragma once

#include "engine/encoded_data.hpp"
#include "engine/nearest_centres.hpp"

#include <cstdint>
#include <vector>

namespace mixle::engine {

/// A model of the given structure with every parameter at its family's neutral default;
/// categorical parts with categories = 0 take V from the data (largest code + 1).
Model model_shape(EncodedData& data, const std::vector<PartSpec>& parts, std::size_t K);

/// The coordinates k-means++ measures distances in, fitted to `rows` (a sample): one per
/// modelled numeric column, standardised, and V per column of a family with categories,
/// indicators of the code scaled by 1/√(1 − Σ p_v²) — so that each column adds 2 on average to
/// the squared distance of two of those rows (over all ordered pairs).
class KmeansCoordinates {
 public:
  KmeansCoordinates(const Model& shape, const Dataset& rows);
  /// Coordinates per row.
  std::size_t width() const noexcept { return width_; }
  /// Row `r` of `rows` (any rows with the shape's columns) into out[0 … width).
  void embed(const Dataset& rows, std::size_t r, double* out) const;

 private:
  struct Feature {
    std::size_t column, categories;  // categories > 0: indicators over [0, categories)
    double mean, scale;
  };
  template <class T>
  void embed_values(const T* row, double* out) const;

  std::vector<Feature> features_;
  std::size_t width_ = 0;
};

/// k-means++ seeding on a deterministic sample (≤ kKmeansSample rows, KmeansCoordinates),
/// refined by a few Lloyd iterations on the sample; then every row is assigned to its nearest
/// centre and one M-step gives the initial model. Same seed ⇒ same model at any world size and
/// any `threads` (CPU threads for the distances; 0: OpenMP's default).
constexpr std::size_t kKmeansSample = 20000;
/// Lloyd iterations at most (fewer when the labels settle).
constexpr int kLloydIterations = 10;
/// The rows k-means++ samples for K components: kKmeansSample, or 4 per component when more.
std::size_t kmeans_sample_rows(std::size_t components);

/// Where k-means starts: the coordinates fitted to the sample and K centres in them (K × width,
/// row-major) — k-means++ seeding and Lloyd's steps on the sample.
struct KmeansStart {
  KmeansCoordinates coordinates;
  std::vector<double> centres;
};
KmeansStart kmeans_on_sample(EncodedData& data, const Model& shape, std::uint64_t seed, int threads);
/// label[r] = the nearest centre of row r of `rows` (embedded; threaded over blocks of rows).
void label_rows(const Dataset& rows, const KmeansCoordinates& coordinates, const CentreSet& centres, std::size_t* label,
                int threads);
/// Every row to its nearest centre of `start`, then one M-step: an initial model.
Model model_from_centres(EncodedData& data, const Model& shape, const KmeansStart& start,
                         const EstimatorOptions& options, int threads);

Model initialise_kmeans_pp(EncodedData& data, const Model& shape, std::uint64_t seed, const EstimatorOptions& options,
                           int threads = 0);

/// Lloyd's iterations at most, and the centres' total squared shift (in the coordinates, where
/// each modelled column has variance 1 on the sample) at which they stop — scikit-learn's
/// KMeans defaults (max_iter 300, tol 1e-4 of the mean variance).
constexpr int kKmeansMaxIterations = 300;
constexpr double kKmeansTolerance = 1e-4;
/// `--init kmeans`: the k-means++ start, then Lloyd's iterations on all rows (every rank's, the
/// centres' sums reduced across ranks) until the centres move less than `tolerance` or after
/// `max_iterations`; then every row to its nearest centre and one M-step. Reports the
/// iterations run through `iterations` when given.
Model initialise_kmeans(EncodedData& data, const Model& shape, std::uint64_t seed, const EstimatorOptions& options,
                        int threads = 0, int max_iterations = kKmeansMaxIterations, double tolerance = kKmeansTolerance,
                        int* iterations = nullptr);

}  // namespace mixle::engine
