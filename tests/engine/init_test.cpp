// Initialisation: kmeans++ and select see only the columns the layout uses.
#include "engine_test_util.hpp"

#include <mixle/fit.hpp>

#include <gtest/gtest.h>

#include <cmath>

namespace mixle {
namespace {

using test::make_part;

TEST(EngineInit, UnusedColumnsDoNotAffectKmeansPlusPlus) {
  // Columns 0 and 2 are modelled; column 1 is not in the layout and holds NaN (e.g. a text
  // column read as nan) or huge values. Neither may reach the initial centres.
  Model truth;
  truth.weights = {0.5, 0.5};
  Part g = make_part(Family::gaussian_diag, 0, 1);
  g.mean = {0.0, 20.0};
  g.var = {1.0, 1.0};
  Part p = make_part(Family::poisson, 2, 3);
  p.rate = {2.0, 30.0};
  truth.parts = {g, p};
  const std::size_t N = 4000;
  const Dataset drawn = sample(truth, N, 8);
  for (double filler : {std::nan(""), 1e12}) {
    SCOPED_TRACE(filler);
    std::vector<double> v(drawn.as<double>(), drawn.as<double>() + N * 3);
    for (std::size_t r = 0; r < N; ++r) v[r * 3 + 1] = std::isnan(filler) ? filler : filler * static_cast<double>(r % 2);
    FitOptions o;
    o.components = 2;
    o.layout = "gaussian_diag:0-1,poisson:2-3";
    o.max_iter = 1;  // the initial model decides the first M-step's split
    const FitResult r = fit(Dataset::from_vector(std::move(v), N, 3), o);
    // Well separated (20 standard deviations): each component near half the rows.
    constexpr double kWeightTol = 0.05;
    EXPECT_NEAR(r.model.weights[0], 0.5, kWeightTol);
    EXPECT_NEAR(r.model.weights[1], 0.5, kWeightTol);
    EXPECT_TRUE(test::all_finite(r.model));
  }
}

}  // namespace
}  // namespace mixle
