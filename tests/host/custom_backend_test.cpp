// An encoded-data backend written against the public headers only (<mixle/mixle.hpp>), as a host
// program writes one: registered by name, `fit` runs its EM loop through it — by name
// (FitOptions::backend) or on a handle — and its E-steps are the ones the fit used.
#include <mixle/mixle.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>

namespace {

std::atomic<int> halves_e_steps{0};

/// The statistics of the first and second halves of the rows, added (the monoid's combine);
/// everything else from a local handle of all the rows.
class Halves final : public mixle::EncodedData {
 public:
  explicit Halves(const mixle::Dataset& data)
      : whole_(mixle::encoded_data(data)),
        first_(mixle::encoded_data(data.slice(0, data.rows() / 2))),
        second_(mixle::encoded_data(data.slice(data.rows() / 2, data.rows()))) {}
  std::string backend() const override { return "test_halves"; }
  std::size_t rows() const override { return whole_->rows(); }
  std::size_t columns() const override { return whole_->columns(); }
  void check(const mixle::Model& model) override { whole_->check(model); }
  std::vector<double> column_max() override { return whole_->column_max(); }
  mixle::Statistics stream_accumulate(const mixle::Model& model, const mixle::EstimatorOptions& options) override {
    ++halves_e_steps;
    mixle::Statistics s = first_->stream_accumulate(model, options);
    s.combine(second_->stream_accumulate(model, options));
    return s;
  }
  mixle::Statistics accumulate_assigned(const mixle::Model& shape, const mixle::Assigner& assign) override {
    return whole_->accumulate_assigned(shape, assign);
  }
  void fold_rows(std::vector<double>& sums, const mixle::RowVisitor& visit) override { whole_->fold_rows(sums, visit); }
  mixle::Dataset sample(std::uint64_t seed, std::size_t target) override { return whole_->sample(seed, target); }

 private:
  std::shared_ptr<mixle::EncodedData> whole_, first_, second_;
};

std::unique_ptr<mixle::EncodedData> make_halves(const mixle::Dataset& data, const mixle::EncodedDataOptions&) {
  return std::make_unique<Halves>(data);
}

mixle::Dataset three_clusters() {
  mixle::Model truth = mixle::model_from_json(R"({"format":"mixle-model","version":1,"weights":[0.3,0.3,0.4],
      "parts":[{"family":"gaussian_diag","columns":[0,2],"mean":[[-4,0],[0,4],[4,0]],"var":[[1,1],[1,2],[0.5,1]]}]})");
  return mixle::sample(truth, 3000, 11);
}

mixle::FitOptions options(const std::string& backend) {
  mixle::FitOptions o;
  o.components = 3;
  o.seed = 5;
  o.precision = "fp64";
  o.tol = 1e-10;
  o.max_iter = 40;
  o.backend = backend;
  return o;
}

void expect_same_model(const mixle::Model& a, const mixle::Model& b) {
  ASSERT_EQ(a.components(), b.components());
  for (std::size_t k = 0; k < a.components(); ++k) EXPECT_NEAR(a.weights[k], b.weights[k], 1e-9);
  for (std::size_t i = 0; i < a.parts[0].mean.size(); ++i) {
    EXPECT_NEAR(a.parts[0].mean[i], b.parts[0].mean[i], 1e-9);
    EXPECT_NEAR(a.parts[0].var[i], b.parts[0].var[i], 1e-9);
  }
}

// The list names the built-ins even when it is the process's first call into the library (they
// register on first use). A "threadsafe" death test runs the statement in a fresh run of this
// test binary, where no earlier test has registered them.
TEST(CustomBackend, TheFirstListingNamesTheBuiltIns) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        const auto names = mixle::encoded_data_backends();
        bool all = true;
        for (const char* name : {"local", "distributed", "component_parallel", "component_sharded"})
          all = all && std::find(names.begin(), names.end(), name) != names.end();
        std::exit(all ? 0 : 3);
      },
      ::testing::ExitedWithCode(0), "");
}

TEST(CustomBackend, AHostRegisteredBackendIsWhatFitRunsThrough) {
  mixle::register_encoded_data_backend("test_halves", &make_halves, {"test_split"});
  const auto names = mixle::encoded_data_backends();
  EXPECT_NE(std::find(names.begin(), names.end(), "test_halves"), names.end());

  const mixle::Dataset data = three_clusters();
  const mixle::FitResult local = mixle::fit(data, options("local"));
  halves_e_steps = 0;
  const mixle::FitResult halves = mixle::fit(data, options("TEST_SPLIT"));
  // One E-step per iteration and one for the final log-likelihood, all through the backend.
  EXPECT_GE(halves_e_steps.load(), halves.iterations + 1);
  EXPECT_EQ(halves.iterations, local.iterations);
  EXPECT_NEAR(halves.final_mean_loglik, local.final_mean_loglik, 1e-12);
  expect_same_model(halves.model, local.model);
}

TEST(CustomBackend, FitOnAHandleRunsThroughItAndRefusesControlsItCannotApply) {
  mixle::register_encoded_data_backend("test_halves", &make_halves, {"test_split"});
  const mixle::Dataset data = three_clusters();
  const std::shared_ptr<mixle::EncodedData> handle = mixle::encoded_data(data, {.backend = "test_halves"});
  EXPECT_TRUE(mixle::is_encoded_data_handle(mixle::DataSource{handle}));
  EXPECT_EQ(handle->backend(), "test_halves");
  halves_e_steps = 0;
  const mixle::FitResult through = mixle::fit(handle, options("local"));
  EXPECT_GE(halves_e_steps.load(), through.iterations + 1);
  expect_same_model(through.model, mixle::fit(data, options("local")).model);

  mixle::FitOptions threads = options("local");
  threads.threads = 2;
  EXPECT_THROW(mixle::fit(handle, threads), mixle::EncodedDataControlConflict);
  EXPECT_THROW(mixle::fit(handle, options("component_parallel")), mixle::EncodedDataControlConflict);
  mixle::FitOptions drop = options("local");
  drop.missing = "drop";
  try {
    mixle::fit(handle, drop);
    ADD_FAILURE() << "missing = drop on a handle was accepted";
  } catch (const mixle::InvalidInput& e) {
    EXPECT_NE(std::string(e.what()).find("needs the raw rows"), std::string::npos) << e.what();
  }
  EXPECT_THROW(mixle::fit(std::shared_ptr<mixle::EncodedData>{}, options("local")), mixle::InvalidInput);
}

}  // namespace
