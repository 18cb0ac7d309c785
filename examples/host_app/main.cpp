// A small host program: generates data in memory, fits a 3-component Gaussian mixture with
// mixle, prints the model, and scores new rows. Exits non-zero if the fit is clearly wrong.
#include <mixle/mixle.hpp>

#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

int main() {
  // 3 well-separated 2-D clusters, 3000 rows, in caller-owned memory (a zero-copy view).
  const double centres[3][2] = {{-5.0, 0.0}, {0.0, 5.0}, {5.0, 0.0}};
  std::mt19937_64 rng(7);
  std::normal_distribution<double> noise(0.0, 0.5);
  std::vector<double> rows;
  for (int i = 0; i < 3000; ++i)
    for (int d = 0; d < 2; ++d) rows.push_back(centres[i % 3][d] + noise(rng));
  const mixle::Dataset data = mixle::Dataset::view(rows.data(), 3000, 2);

  mixle::FitOptions options;
  options.components = 3;
  options.layout = "gaussian_diag";
  options.seed = 1;
  options.progress = [](const mixle::FitProgress& p) {
    std::printf("  iteration %d: mean log-likelihood %.5f\n", p.iteration, p.mean_loglik);
  };
  try {
    const mixle::FitResult result = mixle::fit(data, options);
    std::printf("mixle %s: %d iterations, converged=%d, mean log-likelihood %.5f\n", MIXLE_VERSION_STRING,
                result.iterations, result.converged, result.final_mean_loglik);
    std::printf("%s", mixle::model_to_json(result.model).c_str());
    std::printf("BIC %.2f  AIC %.2f\n", mixle::bic(result.model, data), mixle::aic(result.model, data));

    // Score two new rows: one near a centre, one far from all of them.
    const std::vector<double> fresh = {5.1, -0.2, 40.0, 40.0};
    const mixle::Dataset query = mixle::Dataset::view(fresh.data(), 2, 2);
    const auto loglik = mixle::score_samples(result.model, query);
    const auto labels = mixle::predict(result.model, query);
    std::printf("new rows: log-likelihood %.3f (label %lld), %.3f (label %lld)\n", loglik[0],
                static_cast<long long>(labels[0]), loglik[1], static_cast<long long>(labels[1]));
    // Sanity: the near row must be far more likely than the far one.
    if (!(loglik[0] > loglik[1] + 100.0) || !result.converged) {
      std::fprintf(stderr, "host_app: unexpected fit\n");
      return 1;
    }
  } catch (const mixle::Error& e) {
    std::fprintf(stderr, "host_app: %s\n", e.what());
    return 1;
  }
  return 0;
}
