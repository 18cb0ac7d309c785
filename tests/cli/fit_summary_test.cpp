// `mixle fit`'s closing summary (host/cli/fit_summary.hpp), on a result made by hand: every
// figure in it follows from the result's own fields.
#include "host/cli/fit_summary.hpp"

#include <mixle/fit.hpp>
#include <mixle/model.hpp>

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <string>

namespace mixle {
namespace {

/// What print_fit_summary writes, captured in memory.
std::string fit_summary(const FitResult& r, double seconds, bool weighted) {
  char* text = nullptr;
  std::size_t size = 0;
  std::FILE* out = ::open_memstream(&text, &size);
  host::print_fit_summary(out, r, seconds, weighted);
  std::fclose(out);
  std::string captured(text, size);
  std::free(text);
  return captured;
}

FitResult two_iterations() {
  FitResult r;
  r.model = model_from_json(R"({"format":"mixle-model","version":1,"weights":[0.25,0.75],"parts":[
      {"family":"gaussian_diag","columns":[0,5],"mean":[[1,2,3,4,5],[6,7,8,9,10]],
       "var":[[1,1,1,1,1],[1,1,1,1,1]]},
      {"family":"categorical","columns":[5,6],"categories":3,"prob":[[0.5,0.5,0],[0.2,0.8,0]]}]})");
  r.rows = 1000;
  r.iterations = 2;
  r.converged = true;
  r.mean_loglik = {-2.0, -1.5};
  r.final_mean_loglik = -1.25;
  r.iteration_seconds = {0.25, 0.75};  // 0.5 s per iteration on average
  r.init_seconds = 0.25;
  r.total_weight = 1234.5;
  return r;
}

TEST(FitSummary, EveryLineFollowsFromTheResult) {
  EXPECT_EQ(fit_summary(two_iterations(), 3.0, false),
            "fitted 2 components on 1000 rows in 2 iterations (converged), 3.000 s\n"
            "mean log-likelihood per row: -1.250000\n"
            "log-likelihood per iteration: -2.000000, -1.500000\n"
            "throughput: 2000 rows/s (0.5 s per EM iteration; 0.250 s initialisation; 3.000 s in total with "
            "initialisation)\n"
            "  component 0  weight 0.2500  gaussian_diag[1 2 3 4 …]  categorical[0.5 0.5 0]\n"
            "  component 1  weight 0.7500  gaussian_diag[6 7 8 9 …]  categorical[0.2 0.8 0]\n");
}

TEST(FitSummary, WeightsAreStatedAndAnUntimedFitHasNoThroughput) {
  FitResult r = two_iterations();
  r.iterations = 3;
  r.iteration_seconds = {1.0, 2.0, 3.0};
  r.converged = false;
  const std::string weighted = fit_summary(r, 4.5, true);
  EXPECT_NE(weighted.find("in 3 iterations (not converged), 4.500 s\ntotal sample weight: 1234.5 (log-likelihoods "
                          "below are per unit of weight)\n"),
            std::string::npos)
      << weighted;
  EXPECT_NE(weighted.find("throughput: 500 rows/s (2 s per EM iteration;"), std::string::npos) << weighted;
  r.iteration_seconds = {0.0, 0.0, 0.0};
  EXPECT_EQ(fit_summary(r, 0.0, false).find("throughput"), std::string::npos);
  r.iterations = 0;  // resumed at its last iteration: nothing to divide
  r.iteration_seconds.clear();
  r.mean_loglik.clear();
  const std::string none = fit_summary(r, 0.0, false);
  EXPECT_EQ(none.find("throughput"), std::string::npos) << none;
  EXPECT_NE(none.find("log-likelihood per iteration:\n"), std::string::npos) << none;
}

}  // namespace
}  // namespace mixle
