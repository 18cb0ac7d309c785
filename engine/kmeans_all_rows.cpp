// `--init kmeans`: Lloyd's iterations on every row (every rank's), from the k-means++ start.
#include "engine/initialise.hpp"

#include <vector>

namespace mixle::engine {

Model initialise_kmeans(EncodedData& data, const Model& shape, std::uint64_t seed, const EstimatorOptions& options,
                        int threads, int max_iterations, double tolerance, int* iterations) {
  KmeansStart start = kmeans_on_sample(data, shape, seed, threads);
  const KmeansCoordinates& coordinates = start.coordinates;
  std::vector<double>& centres = start.centres;
  const std::size_t K = shape.components(), C = coordinates.width();
  std::vector<std::size_t> label;
  std::vector<double> x(C);
  int run = 0;
  while (run < max_iterations) {
    ++run;
    const CentreSet set(centres, K, C);
    // Per centre the weighted sum of its rows' coordinates, then the weights: K·C + K values,
    // summed over each rank's rows in row order and then over ranks.
    std::vector<double> sums(K * C + K, 0.0);
    data.fold_rows(sums, [&](const Dataset& rows, std::size_t) {
      label.assign(rows.rows(), K);
      label_rows(rows, coordinates, set, label.data(), threads);
      const double* w = rows.weights();
      for (std::size_t r = 0; r < rows.rows(); ++r) {
        const double weight = w ? w[r] : 1.0;
        if (weight == 0.0) continue;  // not in the fit
        coordinates.embed(rows, r, x.data());
        double* sum = &sums[label[r] * C];
        for (std::size_t c = 0; const double v : x) sum[c++] += weight * v;
        sums[K * C + label[r]] += weight;
      }
    });
    double shift = 0.0;
    for (std::size_t k = 0; k < K; ++k) {
      const double mass = sums[K * C + k];
      if (!(mass > 0.0)) continue;  // an empty cluster keeps its centre
      for (std::size_t c = 0; c < C; ++c) {
        double& centre = centres[k * C + c];
        const double moved = sums[k * C + c] / mass, step = moved - centre;
        shift += step * step;
        centre = moved;
      }
    }
    if (shift <= tolerance) break;
  }
  if (iterations) *iterations = run;
  return model_from_centres(data, shape, start, options, threads);
}

}  // namespace mixle::engine
