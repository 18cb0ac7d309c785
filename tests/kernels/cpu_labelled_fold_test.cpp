// The labelled fold (initialisation's hard assignments): Compute::accumulate_labelled must give
// the statistics accumulate_given gives for the one-hot responsibilities of the same labels, bit
// for bit — through the CPU kernels, which read the labels, and through the default every other
// Compute inherits, which builds the rows × K matrix. Over two 128-row blocks and a tail, float
// and double rows, with and without sample weights, for families with moments, outer products,
// counts and rates.
#include "common/kernel_compare.hpp"

#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace mixle::test {
namespace {

constexpr std::size_t kRows = 300;

/// The CPU kernels behind a Compute that overrides accumulate_given alone, so that
/// accumulate_labelled is the base class's default.
class GivenOnly final : public engine::Compute {
 public:
  std::string name() const override { return "given-only"; }
  kernels::PassReport accumulate(const Model& m, const Dataset& r, engine::Precision p,
                                 std::vector<double>& s) override {
    return cpu_->accumulate(m, r, p, s);
  }
  kernels::PassReport score(const Model& m, const Dataset& r, engine::Precision p, double* ll, double* resp) override {
    return cpu_->score(m, r, p, ll, resp);
  }
  void accumulate_given(const Model& m, const Dataset& r, const double* resp, std::vector<double>& s) override {
    cpu_->accumulate_given(m, r, resp, s);
  }

 private:
  std::unique_ptr<engine::Compute> cpu_ = engine::make_cpu_compute(2);
};

void expect_labelled_is_one_hot(engine::Compute& compute, Family family, std::size_t K, std::size_t D, std::size_t V,
                                DType dtype, bool weighted) {
  SCOPED_TRACE(std::string(family_name(family)) + " on " + compute.name() + (dtype == DType::f32 ? " f32" : " f64") +
               (weighted ? " weighted" : ""));
  const Model model = random_model(family, K, D, 7 * K + D, V);
  std::mt19937_64 rng(K + 31 * D);
  const std::vector<double> values = sample_rows(model, kRows, rng);
  Dataset rows = dtype == DType::f64
                     ? Dataset::from_vector(values, kRows, model.columns())
                     : Dataset::from_vector(std::vector<float>(values.begin(), values.end()), kRows, model.columns());
  if (weighted) {
    std::vector<double> w(kRows);
    for (std::size_t r = 0; r < kRows; ++r) w[r] = 0.25 * static_cast<double>(r % 9);
    rows = rows.with_weights(std::move(w));
  }
  std::vector<std::size_t> labels(kRows);
  std::vector<double> one_hot(kRows * K, 0.0);
  for (std::size_t r = 0; r < kRows; ++r) {
    labels[r] = std::uniform_int_distribution<std::size_t>(0, K - 1)(rng);
    one_hot[r * K + labels[r]] = 1.0;
  }
  const std::size_t size = static_cast<std::size_t>(engine::stat_layout(model).size);
  std::vector<double> given(size, 0.5), labelled(size, 0.5);  // both add to what is there
  compute.accumulate_given(model, rows, one_hot.data(), given);
  compute.accumulate_labelled(model, rows, labels.data(), labelled);
  for (std::size_t j = 0; j < size; ++j)
    ASSERT_EQ(std::memcmp(&labelled[j], &given[j], sizeof(double)), 0)
        << "statistic " << j << ": labelled " << labelled[j] << ", given " << given[j];
  EXPECT_NE(given, std::vector<double>(size, 0.5)) << "the fold added something";
}

TEST(CpuLabelledFold, EqualsTheGivenFoldOfOneHotResponsibilities) {
  auto cpu = engine::make_cpu_compute(2);
  GivenOnly fallback;
  for (engine::Compute* compute : {cpu.get(), static_cast<engine::Compute*>(&fallback)})
    for (const DType dtype : {DType::f32, DType::f64})
      for (const bool weighted : {false, true}) {
        expect_labelled_is_one_hot(*compute, Family::gaussian_diag, 5, 3, 0, dtype, weighted);
        expect_labelled_is_one_hot(*compute, Family::gaussian_full, 4, 3, 0, dtype, weighted);
        expect_labelled_is_one_hot(*compute, Family::categorical, 3, 2, 4, dtype, weighted);
        expect_labelled_is_one_hot(*compute, Family::poisson, 3, 2, 0, dtype, weighted);
      }
}

}  // namespace
}  // namespace mixle::test
