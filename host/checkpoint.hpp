// EM checkpoints: the global model after an iteration, its history and the data's size, as one
// JSON document written atomically (temporary file + rename), so a crash never leaves a torn
// checkpoint. The model is global, so a run can resume at any world size.
#pragma once

#include <mixle/fit.hpp>
#include <mixle/model.hpp>

#include <optional>
#include <string>
#include <vector>

namespace mixle::host {

struct Checkpoint {
  int iteration = 0;  // EM iterations done
  int restart = 0;
  std::vector<double> mean_loglik;  // one per iteration done
  std::size_t data_rows = 0;
  int world_size = 1;  // of the run that wrote it (information only)
  Model model;
  /// With n_init > 1: the best of the restarts finished before `restart` (its model, history and
  /// final log-likelihood), so a resumed fit still weighs them and runs the restarts left.
  std::optional<FitResult> best;
};

/// DIR/checkpoint.json
std::string checkpoint_path(const std::string& dir);
/// Writes DIR/checkpoint.json atomically (creating DIR).
void save_checkpoint(const std::string& dir, const Checkpoint& checkpoint);
/// Reads DIR/checkpoint.json; nullopt when absent; InvalidInput naming the field when malformed.
std::optional<Checkpoint> load_checkpoint(const std::string& dir);

}  // namespace mixle::host
