// A host program with its own encoded-data backend: it keeps its rows in blocks (as an
// application that receives data in pieces would), answers the E-step by adding the blocks'
// statistics — the statistics are a monoid, so the sum is the E-step of all the rows — and fits
// through it by name. Checks the fit against mixle's own local backend and exits non-zero when
// they differ or the backend was not used.
#include <mixle/mixle.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

namespace {

int e_steps = 0;  // E-steps this backend answered

class BlockBackend final : public mixle::EncodedData {
 public:
  static constexpr std::size_t kBlockRows = 1000;

  explicit BlockBackend(const mixle::Dataset& data) : all_(mixle::encoded_data(data)) {
    for (std::size_t begin = 0; begin < data.rows(); begin += kBlockRows)
      blocks_.push_back(mixle::encoded_data(data.slice(begin, std::min(data.rows(), begin + kBlockRows))));
  }
  std::string backend() const override { return "blocks"; }
  std::size_t rows() const override { return all_->rows(); }
  std::size_t columns() const override { return all_->columns(); }
  void check(const mixle::Model& model) override { all_->check(model); }
  std::vector<double> column_max() override { return all_->column_max(); }
  mixle::Statistics stream_accumulate(const mixle::Model& model, const mixle::EstimatorOptions& options) override {
    ++e_steps;
    mixle::Statistics sum = blocks_.front()->stream_accumulate(model, options);
    for (std::size_t b = 1; b < blocks_.size(); ++b) sum.combine(blocks_[b]->stream_accumulate(model, options));
    return sum;
  }
  // Initialisation's passes (they index rows globally) go to one handle of every row.
  mixle::Statistics accumulate_assigned(const mixle::Model& shape, const mixle::Assigner& assign) override {
    return all_->accumulate_assigned(shape, assign);
  }
  void fold_rows(std::vector<double>& sums, const mixle::RowVisitor& visit) override { all_->fold_rows(sums, visit); }
  mixle::Dataset sample(std::uint64_t seed, std::size_t target) override { return all_->sample(seed, target); }

 private:
  std::shared_ptr<mixle::EncodedData> all_;
  std::vector<std::shared_ptr<mixle::EncodedData>> blocks_;
};

std::unique_ptr<mixle::EncodedData> make_blocks(const mixle::Dataset& data, const mixle::EncodedDataOptions&) {
  return std::make_unique<BlockBackend>(data);
}

}  // namespace

int main() {
  const double centres[3][2] = {{-5.0, 0.0}, {0.0, 5.0}, {5.0, 0.0}};
  std::mt19937_64 rng(7);
  std::normal_distribution<double> noise(0.0, 0.7);
  std::vector<double> rows;
  for (int i = 0; i < 4500; ++i)
    for (int d = 0; d < 2; ++d) rows.push_back(centres[i % 3][d] + noise(rng));
  const mixle::Dataset data = mixle::Dataset::view(rows.data(), 4500, 2);

  try {
    mixle::register_encoded_data_backend("blocks", &make_blocks);
    mixle::FitOptions options;
    options.components = 3;
    options.seed = 1;
    options.precision = "fp64";
    options.backend = "blocks";
    const mixle::FitResult blocks = mixle::fit(data, options);
    options.backend = "local";
    const mixle::FitResult local = mixle::fit(data, options);

    double worst = std::abs(blocks.final_mean_loglik - local.final_mean_loglik);
    for (std::size_t i = 0; i < local.model.parts[0].mean.size(); ++i)
      worst = std::max(worst, std::abs(blocks.model.parts[0].mean[i] - local.model.parts[0].mean[i]));
    std::printf(
        "blocks backend: %d E-steps answered, %d iterations, mean log-likelihood %.6f; "
        "local backend %.6f; largest difference %.3g\n",
        e_steps, blocks.iterations, blocks.final_mean_loglik, local.final_mean_loglik, worst);
    if (e_steps < blocks.iterations + 1 || !(worst < 1e-9)) {
      std::fprintf(stderr, "custom_backend: the fit did not run through the backend, or it differs\n");
      return 1;
    }
  } catch (const mixle::Error& e) {
    std::fprintf(stderr, "custom_backend: %s\n", e.what());
    return 1;
  }
  return 0;
}
