// What `mixle score` does to rows, in one process or on each rank of a launched group: every
// rank scores its contiguous share of the rows (the split fit uses, in 128-row blocks), the
// summaries are all-reduced, and the per-row outputs are written by each rank to a part file
// beside --out and concatenated by rank 0, in rank order, into --out (docs/streaming.md).
#pragma once

#include "host/cli/data_args.hpp"
#include "host/launch_env.hpp"

#include <mixle/data.hpp>
#include <mixle/model.hpp>

#include <string>

namespace mixle::host {

struct ScoreArgs {
  DataArgs data;
  std::string model, out, what = "loglik", device = "cpu", precision = "fp64";
  int threads = 0;
  /// Under a launcher: how long a rank waits for the group to form and for the other ranks to
  /// finish scoring (the one collective comes after every rank's scoring).
  double timeout_s = 600.0;
  /// One number printed (loglik-mean, bic, aic) rather than a value per row.
  bool summary() const { return what == "loglik-mean" || what == "bic" || what == "aic"; }
};

/// Σ log p(x) over `rows`, chunk by chunk (each chunk's rows released after it).
double score_loglik_sum(const ScoreArgs& a, const Model& model, const Dataset& rows);

/// Prints the summary a.what asks for, from the log-likelihood sum over `rows` rows.
void print_summary(const ScoreArgs& a, const Model& model, double loglik, std::size_t rows);

/// Writes a.what (loglik, resp or labels) of every row of `rows` to `path`, chunk by chunk (the
/// file appears complete at the end, atomically). `path`'s extension picks the format.
void score_rows_to(const ScoreArgs& a, const Model& model, const Dataset& rows, const std::string& path);

/// The launched form: this rank's rows scored, the summary all-reduced (rank 0 prints) or the
/// per-row outputs concatenated by rank 0 into a.out; a failure on any rank stops every rank,
/// naming the failing one, and leaves no output. Returns the exit code.
int score_on_ranks(const ScoreArgs& a, const Model& model, const LaunchEnv& env);

}  // namespace mixle::host
