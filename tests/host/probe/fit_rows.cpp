// A test-only program run as each rank of a real process group by tests/host/distributed_rows_test.cpp
// (outside the suite's glob on purpose): it fits its own share of a data file's rows, held in
// memory, with fit_distributed(Dataset, …), and writes what it returned as DIR/rank<r>.json.
//   mixle_fit_rows_probe DATA.npy OUT_DIR FIRST_SHARE [checkpoint=DIR] [resume=DIR] [drop_column_on=R]
//     [max_iter=N] [explicit_env=1] [publish_port=1] [via=fit|handle] [swap_mpi_rank=1]
// explicit_env=1: the launch variables move from the process environment into
// DistributedOptions::launch_environment (the process environment no longer has them).
// publish_port=1 (with explicit_env=1): rank 0 gets MASTER_PORT 0, so its store binds a port the
// OS picks, and writes it to OUT_DIR/port through DistributedOptions::on_store_port; the other
// ranks wait for that file and use its port.
// via=fit: mixle::fit(rows, options) with FitOptions::backend "torchrun" (the registry's distributed
// backend) instead of fit_distributed; via=handle: mixle::fit of the handle
// encoded_data(rows, {.backend = "mpi", .comm = "gloo"}) makes. Both write the model only.
// swap_mpi_rank=1 (under mpirun): DistributedOptions::launch_environment numbers the mpirun ranks
// backwards (OMPI_COMM_WORLD_RANK = size − 1 − rank) and the communicator is mpi, so the launch
// environment a host program passes contradicts the communicator's own numbering.
// FIRST_SHARE: the fraction of the rows rank 0 holds; the other ranks split the rest equally
// (FIRST_SHARE 0 leaves rank 0 with none). Rank and world size come from RANK and WORLD_SIZE.
#include <mixle/mixle.hpp>

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>
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
  bool explicit_env = false, publish_port = false, swap_mpi_rank = false;
  std::string via;
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
    else if (key == "explicit_env")
      explicit_env = value == "1";
    else if (key == "publish_port")
      publish_port = value == "1";
    else if (key == "via")
      via = value;
    else if (key == "swap_mpi_rank")
      swap_mpi_rank = value == "1";
    else
      throw mixle::UsageError("unknown option " + a);
  }
  const int rank = env_int("RANK", 0), world = env_int("WORLD_SIZE", 1);
  if (explicit_env) {
    for (const char* name : {"RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "GROUP_RANK", "MASTER_ADDR",
                             "MASTER_PORT", "TORCHELASTIC_RUN_ID", "TORCHELASTIC_USE_AGENT_STORE", "MIXLE_RUN_TOKEN"})
      if (const char* v = std::getenv(name)) {
        dist.launch_environment[name] = v;
        unsetenv(name);
      }
    const std::string port_file = out_dir + "/port";
    if (publish_port && rank == 0) {
      dist.launch_environment["MASTER_PORT"] = "0";
      dist.on_store_port = [port_file](int port) {
        std::ofstream(port_file + ".tmp") << port;
        std::rename((port_file + ".tmp").c_str(), port_file.c_str());
      };
    } else if (publish_port) {
      std::string port;
      for (int i = 0; i < 3000 && port.empty(); ++i) {  // up to 30 s
        std::ifstream(port_file) >> port;
        if (port.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
      dist.launch_environment["MASTER_PORT"] = port;
    }
  }
  if (swap_mpi_rank) {
    const int mpi_rank = env_int("OMPI_COMM_WORLD_RANK", 0), mpi_world = env_int("OMPI_COMM_WORLD_SIZE", 1);
    dist.launch_environment = {{"OMPI_COMM_WORLD_RANK", std::to_string(mpi_world - 1 - mpi_rank)},
                               {"OMPI_COMM_WORLD_SIZE", std::to_string(mpi_world)}};
    dist.comm = "mpi";
  }
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
  if (!via.empty()) {
    mixle::FitResult f;
    if (via == "fit") {
      options.backend = "torchrun";
      f = mixle::fit(mine, options);
    } else {
      const auto handle = mixle::encoded_data(mine, {.backend = "mpi", .threads = 1, .comm = "gloo"});
      options.threads = 0;  // the handle fixed it
      if (handle->backend() != "distributed" || handle->rows() != n)
        throw mixle::Error("the handle is " + handle->backend() + " over " + std::to_string(handle->rows()) + " rows");
      f = mixle::fit(handle, options);
    }
    const nlohmann::json j = {{"rank", rank}, {"model", nlohmann::json::parse(mixle::model_to_json(f.model))}};
    std::ofstream(out_dir + "/rank" + std::to_string(rank) + ".json") << j.dump(1);
    return 0;
  }
  const mixle::DistributedFitResult r = mixle::fit_distributed(mine, options, dist);
  const nlohmann::json j = {{"rank", r.rank},
                            {"world_size", r.world_size},
                            {"comm", r.comm},
                            {"device", r.device},
                            {"first_row", r.first_row},
                            {"local_rows", r.local_rows},
                            {"resumed_from_iteration", r.resumed_from_iteration},
                            {"iterations", r.fit.iterations},
                            {"init_seconds", r.fit.init_seconds},
                            {"parallel", r.parallel},
                            {"model", nlohmann::json::parse(mixle::model_to_json(r.fit.model))}};
  std::ofstream(out_dir + "/rank" + std::to_string(rank) + ".json") << j.dump(1);
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "fit_rows_probe: %s\n", e.what());
  return 1;
}
