// A test-only program run as each rank of a real process group by tests/host/distributed_rows_test.cpp
// (outside the suite's glob on purpose): it fits its own share of a data file's rows, held in
// memory, with fit_distributed(Dataset, …), and writes what it returned as DIR/rank<r>.json.
//   mixle_fit_rows_probe DATA.npy OUT_DIR FIRST_SHARE [checkpoint=DIR] [resume=DIR] [drop_column_on=R]
//     [max_iter=N]
// FIRST_SHARE: the fraction of the rows rank 0 holds; the other ranks split the rest equally
// (FIRST_SHARE 0 leaves rank 0 with none). Rank and world size come from RANK and WORLD_SIZE.
#include <mixle/mixle.hpp>

#include <nlohmann/json.hpp>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

namespace {

int env_int(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::atoi(v) : fallback;
}

}  // namespace

int main(int argc, char** argv) try {
  if (argc < 4) {
    std::fprintf(stderr, "usage: %s DATA OUT_DIR FIRST_SHARE [key=value…]\n", argv[0]);
    return 2;
  }
  const std::string out_dir = argv[2];
  const double first_share = std::atof(argv[3]);
  mixle::DistributedOptions dist;
  int drop_column_on = -1, max_iter = 30;
  for (int i = 4; i < argc; ++i) {
    const std::string a = argv[i];
    const auto eq = a.find('=');
    const std::string key = a.substr(0, eq), value = a.substr(eq + 1);
    if (key == "checkpoint")
      dist.checkpoint_dir = value;
    else if (key == "resume")
      dist.resume_dir = value;
    else if (key == "drop_column_on")
      drop_column_on = std::atoi(value.c_str());
    else if (key == "max_iter")
      max_iter = std::atoi(value.c_str());
    else
      throw mixle::UsageError("unknown option " + a);
  }
  const int rank = env_int("RANK", 0), world = env_int("WORLD_SIZE", 1);
  const mixle::Dataset all = mixle::read_data(argv[1]);
  const auto n = all.rows();
  const auto first = static_cast<std::size_t>(first_share * static_cast<double>(n));
  std::size_t begin = 0, end = first;
  if (rank > 0) {
    const std::size_t rest = n - first, others = static_cast<std::size_t>(world - 1);
    begin = first + rest * static_cast<std::size_t>(rank - 1) / others;
    end = first + rest * static_cast<std::size_t>(rank) / others;
  }
  std::size_t cols = all.cols() - (rank == drop_column_on ? 1 : 0);
  std::vector<double> values;
  for (std::size_t r = begin; r < end; ++r)
    for (std::size_t c = 0; c < cols; ++c) values.push_back(all.at(r, c));
  const mixle::Dataset mine = mixle::Dataset::from_vector(std::move(values), end - begin, cols);

  mixle::FitOptions options;
  options.components = 3;
  options.layout = "gaussian_diag:0-3,categorical:3-4:3,poisson:4-5";
  options.seed = 11;
  options.max_iter = max_iter;
  options.tol = 0.0;
  options.threads = 1;
  options.precision = "fp64";
  const mixle::DistributedFitResult r = mixle::fit_distributed(mine, options, dist);
  const nlohmann::json j = {{"rank", r.rank},
                            {"world_size", r.world_size},
                            {"comm", r.comm},
                            {"device", r.device},
                            {"first_row", r.first_row},
                            {"local_rows", r.local_rows},
                            {"resumed_from_iteration", r.resumed_from_iteration},
                            {"iterations", r.fit.iterations},
                            {"parallel", r.parallel},
                            {"model", nlohmann::json::parse(mixle::model_to_json(r.fit.model))}};
  std::ofstream(out_dir + "/rank" + std::to_string(rank) + ".json") << j.dump(1);
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "fit_rows_probe: %s\n", e.what());
  return 1;
}
