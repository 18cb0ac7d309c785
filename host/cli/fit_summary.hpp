// What `mixle fit` prints on standard output when a fit ends: rows, iterations and time, the
// log-likelihood trace, the EM throughput, and each component's weight and first parameters.
#pragma once

#include <mixle/family.hpp>
#include <mixle/fit.hpp>

#include <algorithm>
#include <cstdio>

namespace mixle::host {

/// Writes the summary of `r`, which took `seconds` in all, to `out`; `weighted`: the rows had
/// sample weights. The throughput line divides the rows by the mean EM iteration (the
/// iterations' own times, without the initialisation); it is left out when no iteration was
/// timed.
inline void print_fit_summary(std::FILE* out, const FitResult& r, double seconds, bool weighted) {
  const Model& m = r.model;
  std::fprintf(out, "fitted %zu components on %zu rows in %d iterations (%s), %.3f s\n", m.components(), r.rows,
               r.iterations, r.converged ? "converged" : "not converged", seconds);
  if (weighted)
    std::fprintf(out, "total sample weight: %.10g (log-likelihoods below are per unit of weight)\n", r.total_weight);
  std::fprintf(out, "mean log-likelihood per row: %.6f\n", r.final_mean_loglik);
  std::fputs("log-likelihood per iteration:", out);
  for (std::size_t i = 0; i < r.mean_loglik.size(); ++i) std::fprintf(out, "%s%.6f", i ? ", " : " ", r.mean_loglik[i]);
  std::fputc('\n', out);
  double em_seconds = 0.0;
  for (double s : r.iteration_seconds) em_seconds += s;
  const double per_iter = r.iterations ? em_seconds / r.iterations : 0.0;
  if (per_iter > 0)
    std::fprintf(out,
                 "throughput: %.4g rows/s (%.4g s per EM iteration; %.3f s initialisation; %.3f s in total with "
                 "initialisation)\n",
                 static_cast<double>(r.rows) / per_iter, per_iter, r.init_seconds, seconds);
  for (std::size_t k = 0; k < m.components(); ++k) {
    std::fprintf(out, "  component %zu  weight %.4f", k, m.weights[k]);
    for (const Part& p : m.parts) {
      // The first parameter of the family, for its first column: D values (e.g. the means) or,
      // for a family with categories, the first column's V values.
      const FamilyDescriptor& family = family_descriptor(p.family);
      const ParamDescriptor& shown = family.params.front();
      const std::size_t per_component = static_cast<std::size_t>(
          param_values(shown.shape, static_cast<std::int64_t>(p.dims()), static_cast<std::int64_t>(p.categories)));
      const std::size_t row = shown.shape == ParamShape::per_category ? p.categories : p.dims();
      const std::size_t n = std::min<std::size_t>(row, 4);
      std::fprintf(out, "  %s[", family.name);
      for (std::size_t i = 0; i < n; ++i)
        std::fprintf(out, "%s%.4g", i ? " " : "", (p.*shown.values)[k * per_component + i]);
      std::fprintf(out, "%s]", row > n ? " …" : "");
    }
    std::fputc('\n', out);
  }
}

}  // namespace mixle::host
