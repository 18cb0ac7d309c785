#include "host/checkpoint.hpp"

#include "comms/failpoint.hpp"
#include "host/data/atomic_file.hpp"
#include "plan/json_fields.hpp"

#include <mixle/data.hpp>
#include <mixle/error.hpp>

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace mixle::host {

std::string checkpoint_path(const std::string& dir) {
  return (std::filesystem::path(dir) / "checkpoint.json").string();
}

void save_checkpoint(const std::string& dir, const Checkpoint& c) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw Error("cannot create checkpoint folder " + dir + ": " + ec.message());
  nlohmann::ordered_json j;
  j["format"] = "mixle-checkpoint";
  j["version"] = 1;
  j["iteration"] = c.iteration;
  j["restart"] = c.restart;
  j["data_rows"] = c.data_rows;
  j["world_size"] = c.world_size;
  j["mean_loglik"] = c.mean_loglik;
  j["model"] = nlohmann::ordered_json::parse(model_to_json(c.model, -1));
  if (c.best) {
    const FitResult& b = *c.best;
    nlohmann::ordered_json best;
    best["restart"] = b.best_restart;
    best["final_mean_loglik"] = b.final_mean_loglik;
    best["rows"] = b.rows;
    best["total_weight"] = b.total_weight;
    best["iterations"] = b.iterations;
    best["converged"] = b.converged;
    best["mean_loglik"] = b.mean_loglik;
    best["iteration_seconds"] = b.iteration_seconds;
    best["init_seconds"] = b.init_seconds;
    best["warnings"] = b.warnings;
    best["model"] = nlohmann::ordered_json::parse(model_to_json(b.model, -1));
    j["best"] = std::move(best);
  }
  // Atomic: a rank lost mid-write (the failpoint between the halves) leaves the previous
  // checkpoint in place, never a torn one.
  const std::string text = j.dump(1) + "\n";
  AtomicFile file(checkpoint_path(dir));
  file.write(text.data(), text.size() / 2);
  comms::failpoint(comms::kFailpointCheckpointWrite);
  file.write(text.data() + text.size() / 2, text.size() - text.size() / 2);
  file.commit();
}

std::optional<Checkpoint> load_checkpoint(const std::string& dir) {
  const std::string path = checkpoint_path(dir);
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream ss;
  ss << in.rdbuf();
  const std::string text = ss.str();
  plan::detail::refuse_nul_bytes(text, path);
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {  // syntax, or a number beyond double's range
    throw InvalidInput(path + ": not valid JSON: " + e.what());
  }
  auto need = [&](const char* key) -> const nlohmann::json& {
    if (!j.contains(key)) throw InvalidInput(path + ": missing field \"" + key + "\"");
    return j.at(key);
  };
  if (need("format") != "mixle-checkpoint" || need("version") != 1)
    throw InvalidInput(path + ": not a mixle checkpoint version 1 (\"format\": \"mixle-checkpoint\")");
  Checkpoint c;
  try {
    c.iteration = need("iteration").get<int>();
    c.restart = need("restart").get<int>();
    c.data_rows = need("data_rows").get<std::size_t>();
    c.world_size = need("world_size").get<int>();
    c.mean_loglik = need("mean_loglik").get<std::vector<double>>();
  } catch (const nlohmann::json::exception& e) {
    throw InvalidInput(path + ": " + e.what());
  }
  if (c.iteration < 1 || c.mean_loglik.size() != static_cast<std::size_t>(c.iteration))
    throw InvalidInput(path + ": \"iteration\" " + std::to_string(c.iteration) + " does not match " +
                       std::to_string(c.mean_loglik.size()) + " log-likelihood values");
  c.model = model_from_json(need("model").dump(), path + ": model");
  if (j.contains("best")) {
    const nlohmann::json& b = j.at("best");
    FitResult best;
    try {
      best.best_restart = b.at("restart").get<int>();
      best.final_mean_loglik = b.at("final_mean_loglik").get<double>();
      best.rows = b.at("rows").get<std::size_t>();
      // Absent in checkpoints of earlier versions, which had no sample weights.
      best.total_weight = b.value("total_weight", static_cast<double>(best.rows));
      best.iterations = b.at("iterations").get<int>();
      best.converged = b.at("converged").get<bool>();
      best.mean_loglik = b.at("mean_loglik").get<std::vector<double>>();
      best.iteration_seconds = b.at("iteration_seconds").get<std::vector<double>>();
      best.init_seconds = b.value("init_seconds", 0.0);  // absent in checkpoints of earlier versions
      best.warnings = b.at("warnings").get<std::vector<std::string>>();
    } catch (const nlohmann::json::exception& e) {
      throw InvalidInput(path + ": best: " + e.what());
    }
    if (best.best_restart < 0 || best.best_restart >= c.restart)
      throw InvalidInput(path + ": best.restart " + std::to_string(best.best_restart) +
                         " is not a restart finished before restart " + std::to_string(c.restart));
    best.model = model_from_json(b.at("model").dump(), path + ": best.model");
    c.best = std::move(best);
  }
  return c;
}

}  // namespace mixle::host
