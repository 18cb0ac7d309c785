// Initial models: 'select' (the reference's initialize(rng, p)) and 'kmeans++' seeding.
#pragma once

#include "engine/encoded_data.hpp"

#include <cstdint>
#include <vector>

namespace mixle::engine {

/// A model of the given structure with every parameter at its family's neutral default;
/// categorical parts with categories = 0 take V from the data (largest code + 1).
Model model_shape(EncodedData& data, const std::vector<PartSpec>& parts, std::size_t K);

/// k-means++ seeding on a deterministic sample (≤ kKmeansSample rows, columns standardised),
/// refined by a few Lloyd iterations on the sample; then every row is assigned to its nearest
/// centre and one M-step gives the initial model. Same seed ⇒ same model at any world size.
constexpr std::size_t kKmeansSample = 20000;
Model initialise_kmeans_pp(EncodedData& data, const Model& shape, std::uint64_t seed, const EstimatorOptions& options);

}  // namespace mixle::engine
