#include "host/cli/score_ranks.hpp"

#include "comms/communicator.hpp"
#include "engine/compute.hpp"
#include "engine/distributed_handle.hpp"
#include "engine/error_marks.hpp"
#include "host/cli/option_checks.hpp"
#include "host/cli/score_chunks.hpp"
#include "host/data/matrix_stream.hpp"

#include <mixle/error.hpp>
#include <mixle/fit.hpp>

#include <chrono>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <span>
#include <vector>

namespace mixle::host {
namespace {

std::size_t chunk_of(const Model& model, const Dataset& rows) {
  return score_chunk_rows(model.components(), rows.cols() * dtype_size(rows.dtype()));
}

/// Calls fn(chunk) for consecutive chunks of `rows`, releasing each one's rows after it.
template <class Fn>
void each_chunk(const Dataset& rows, std::size_t chunk, Fn&& fn) {
  for_each_chunk(rows.rows(), chunk, [&](std::size_t begin, std::size_t end) {
    fn(rows.slice(begin, end));
    rows.release(begin, end);
  });
}

std::size_t output_columns(const ScoreArgs& a, const Model& model) { return a.what == "resp" ? model.components() : 1; }

std::vector<std::string> output_header(const ScoreArgs& a, const Model& model) {
  if (a.what == "labels") return {"label"};
  if (a.what != "resp") return {"loglik"};
  std::vector<std::string> header;
  for (std::size_t k = 0; k < model.components(); ++k) header.push_back("resp_" + std::to_string(k));
  return header;
}

/// Rank `rank`'s part of the per-row output: a .npy beside a.out.
std::string part_path(const ScoreArgs& a, int rank) { return a.out + ".part-" + std::to_string(rank) + ".npy"; }

/// Removes every rank's part file when it goes out of scope.
struct PartsRemover {
  const ScoreArgs& a;
  std::size_t world;
  ~PartsRemover() {
    std::error_code ignored;
    for (std::size_t r = 0; r < world; ++r) std::filesystem::remove(part_path(a, static_cast<int>(r)), ignored);
  }
};

/// Appends the rows of the part file `part` (written by score_rows_to) to `out`, chunk by chunk.
template <class T>
void append_part(MatrixStream<T>& out, const std::string& part, std::size_t cols) {
  const std::size_t rows = probe_data(part).rows, chunk = score_chunk_rows(cols, sizeof(T) * cols);
  std::vector<T> values;
  for_each_chunk(rows, chunk, [&](std::size_t begin, std::size_t end) {
    ReadOptions range;
    range.row_begin = begin;
    range.row_end = end;
    const Dataset d = read_data(part, range);  // float64: mapped; int64 labels: converted, exactly
    values.resize(d.rows() * cols);
    for (std::size_t i = 0; i < values.size(); ++i) values[i] = static_cast<T>(d.at(i / cols, i % cols));
    out.append(values.data(), d.rows());
  });
}

/// Rank 0's last step: the parts of the ranks that had rows, in rank order, into a.out.
template <class T>
void concatenate(const ScoreArgs& a, const Model& model, const std::vector<engine::RowRange>& ranges,
                 std::size_t rows) {
  const std::size_t cols = output_columns(a, model);
  MatrixStream<T> out(a.out, rows, cols, output_format(a.out), output_header(a, model));
  for (std::size_t r = 0; r < ranges.size(); ++r)
    if (ranges[r].end > ranges[r].begin) append_part(out, part_path(a, static_cast<int>(r)), cols);
  out.commit();
}

}  // namespace

double score_loglik_sum(const ScoreArgs& a, const Model& model, const Dataset& rows) {
  double loglik = 0.0;
  each_chunk(rows, chunk_of(model, rows), [&](const Dataset& chunk) {
    for (double x : score_samples(model, chunk, a.device, a.threads, a.precision)) loglik += x;
  });
  return loglik;
}

void print_summary(const ScoreArgs& a, const Model& model, double loglik, std::size_t rows) {
  const double value = a.what == "bic"   ? bic_from_loglik(loglik, model.free_parameters(), static_cast<double>(rows))
                       : a.what == "aic" ? aic_from_loglik(loglik, model.free_parameters())
                                         : loglik / static_cast<double>(rows);
  std::printf("%s: %.10g (%zu rows, %zu free parameters)\n", a.what.c_str(), value, rows, model.free_parameters());
}

void score_rows_to(const ScoreArgs& a, const Model& model, const Dataset& rows, const std::string& path) {
  // Per-row outputs go to the file chunk by chunk (never all N × K at once); it appears,
  // complete, only after the last chunk — an error on the way leaves no file.
  const DataFormat format = output_format(path);
  const std::size_t chunk = chunk_of(model, rows);
  if (a.what == "labels") {
    MatrixStream<std::int64_t> out(path, rows.rows(), 1, format, output_header(a, model));
    each_chunk(rows, chunk, [&](const Dataset& c) {
      const auto v = predict(model, c, a.device, a.threads, a.precision);
      out.append(v.data(), v.size());
    });
    out.commit();
    return;
  }
  const bool resp = a.what == "resp";
  MatrixStream<double> out(path, rows.rows(), output_columns(a, model), format, output_header(a, model));
  each_chunk(rows, chunk, [&](const Dataset& c) {
    const auto v = resp ? predict_proba(model, c, a.device, a.threads, a.precision)
                        : score_samples(model, c, a.device, a.threads, a.precision);
    out.append(v.data(), c.rows());
  });
  out.commit();
}

int score_on_ranks(const ScoreArgs& given, const Model& model, const LaunchEnv& env) {
  ScoreArgs a = given;
  a.device = rank_device(a.device, env.local_rank, engine::cuda_device_count());
  const std::unique_ptr<comms::Communicator> comm =
      communicator_from_env(env, resolve_comm("auto", env, /*want_device=*/false), timeout_ms(a.timeout_s));
  const ReadOptions read = a.data.read_options();
  const DataInfo info = probe_data(a.data.path, read);
  const auto world = static_cast<std::size_t>(comm->size());
  const std::vector<engine::RowRange> ranges = engine::even_row_ranges(info.rows, world);
  const engine::RowRange mine = ranges[static_cast<std::size_t>(comm->rank())];
  const std::string part = part_path(a, comm->rank());
  // One all-reduce: the log-likelihood sum and every rank's error mark (engine/error_marks.hpp);
  // when any rank failed, every rank removes its part before raising.
  std::vector<double> sums{0.0};
  try {
    engine::all_reduce_with_marks(
        *comm, sums,
        [&] {
          if (mine.end <= mine.begin) return;
          ReadOptions range = read;
          range.row_begin = mine.begin;
          range.row_end = mine.end;
          const Dataset rows = read_data(a.data.path, range);
          if (a.summary())
            sums[0] = score_loglik_sum(a, model, rows);
          else
            score_rows_to(a, model, rows, part);
        },
        "scoring the rows");
  } catch (...) {
    std::error_code ignored;
    std::filesystem::remove(part, ignored);
    throw;
  }
  if (comm->rank() != 0) return 0;
  if (a.summary()) {
    print_summary(a, model, sums[0], info.rows);
    return 0;
  }
  {
    const PartsRemover parts{a, world};  // whether the concatenation succeeds or throws
    if (a.what == "labels")
      concatenate<std::int64_t>(a, model, ranges, info.rows);
    else
      concatenate<double>(a, model, ranges, info.rows);
  }
  std::fprintf(stderr, "mixle: scored %zu rows on %zu ranks → %s\n", info.rows, world, a.out.c_str());
  return 0;
}

}  // namespace mixle::host
