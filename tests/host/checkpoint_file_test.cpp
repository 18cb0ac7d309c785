// The checkpoint file: what save_checkpoint writes, load_checkpoint reads back exactly (with the
// best restart a multi-restart fit carries), and every malformed file is refused naming the file
// and what is wrong — never resumed from.
#include "comms/process_util.hpp"
#include "host/checkpoint.hpp"

#include <mixle/error.hpp>
#include <mixle/model.hpp>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <functional>

namespace mixle::test {
namespace {

Model two_components() {
  return model_from_json(R"({"format":"mixle-model","version":1,"weights":[0.4,0.6],"parts":[
    {"family":"gaussian_diag","columns":[0,2],"mean":[[0,1],[3,4]],"var":[[1,2],[0.5,1]]}]})");
}

host::Checkpoint with_best() {
  host::Checkpoint c;
  c.iteration = 3;
  c.restart = 2;
  c.mean_loglik = {-3.5, -3.25, -3.125};
  c.data_rows = 1234;
  c.world_size = 4;
  c.model = two_components();
  FitResult best;
  best.best_restart = 1;
  best.final_mean_loglik = -2.75;
  best.rows = 1234;
  best.iterations = 2;
  best.converged = true;
  best.mean_loglik = {-3.0, -2.75};
  best.iteration_seconds = {0.5, 0.25};
  best.init_seconds = 0.125;
  best.warnings = {"component 1 captured no rows"};
  best.model = two_components();
  best.model.weights = {0.5, 0.5};
  c.best = best;
  return c;
}

/// The checkpoint file's text with `from` replaced by `to` (which must occur).
void rewrite(const std::string& dir, const std::string& from, const std::string& to) {
  const std::string path = host::checkpoint_path(dir);
  std::string text = read_file(path);
  const auto at = text.find(from);
  ASSERT_NE(at, std::string::npos) << "the checkpoint lacks " << from << ":\n" << text;
  text.replace(at, from.size(), to);
  std::ofstream(path, std::ios::trunc) << text;
}

void expect_refused(const std::string& dir, const std::vector<std::string>& fragments) {
  try {
    host::load_checkpoint(dir);
    ADD_FAILURE() << "a malformed checkpoint was read";
  } catch (const InvalidInput& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find(host::checkpoint_path(dir)), std::string::npos) << what;
    for (const auto& f : fragments) EXPECT_NE(what.find(f), std::string::npos) << what;
  }
}

TEST(CheckpointFile, RoundTripsEveryFieldAndTheBestRestart) {
  TempDir dir;
  const std::string folder = (dir.path / "nested" / "run").string();  // created on save
  EXPECT_FALSE(host::load_checkpoint(folder).has_value());
  const host::Checkpoint c = with_best();
  host::save_checkpoint(folder, c);
  const auto back = host::load_checkpoint(folder);
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->iteration, 3);
  EXPECT_EQ(back->restart, 2);
  EXPECT_EQ(back->mean_loglik, c.mean_loglik);
  EXPECT_EQ(back->data_rows, 1234u);
  EXPECT_EQ(back->world_size, 4);
  EXPECT_EQ(model_to_json(back->model), model_to_json(c.model));
  ASSERT_TRUE(back->best.has_value());
  EXPECT_EQ(back->best->best_restart, 1);
  EXPECT_EQ(back->best->final_mean_loglik, -2.75);
  EXPECT_EQ(back->best->rows, 1234u);
  EXPECT_EQ(back->best->iterations, 2);
  EXPECT_TRUE(back->best->converged);
  EXPECT_EQ(back->best->mean_loglik, c.best->mean_loglik);
  EXPECT_EQ(back->best->iteration_seconds, c.best->iteration_seconds);
  EXPECT_EQ(back->best->init_seconds, 0.125);
  EXPECT_EQ(back->best->warnings, c.best->warnings);
  EXPECT_EQ(model_to_json(back->best->model), model_to_json(c.best->model));
  // Without a best restart the field is absent and reads back absent.
  host::Checkpoint plain = c;
  plain.best.reset();
  host::save_checkpoint(folder, plain);
  EXPECT_FALSE(host::load_checkpoint(folder)->best.has_value());
}

// The file is the JSON text and nothing after it — written in two halves around the failpoint,
// the second half ends where the text does: the last bytes are "}\n", no byte is NUL.
TEST(CheckpointFile, TheFileIsTheTextAndNothingAfterIt) {
  TempDir dir;
  const std::string folder = (dir.path / "run").string();
  host::save_checkpoint(folder, with_best());
  const std::string bytes = read_file(host::checkpoint_path(folder));
  ASSERT_GE(bytes.size(), 2u);
  EXPECT_EQ(bytes.substr(bytes.size() - 2), "}\n");
  EXPECT_EQ(bytes.find('\0'), std::string::npos);
  EXPECT_NO_THROW((void)nlohmann::json::parse(bytes));
}

struct Corruption {
  const char* name;
  std::string from, to;
  std::vector<std::string> fragments;
};

TEST(CheckpointFile, MalformedFilesAreRefusedNamingWhatIsWrong) {
  const std::vector<Corruption> cases = {
      {"truncated", "\"version\"", "\"version", {"not valid JSON"}},
      // Found by scripts/fuzz: a number past double's range escaped as a JSON library exception.
      {"a number beyond double's range", "\"iteration\": 3", "\"iteration\": 3e999", {"not valid JSON", "overflow"}},
      {"another format", "\"mixle-checkpoint\"", "\"mixle-model\"", {"not a mixle checkpoint version 1"}},
      {"another version", "\"version\": 1", "\"version\": 2", {"not a mixle checkpoint version 1"}},
      {"no format", "\"format\": \"mixle-checkpoint\",", "", {"missing field \"format\""}},
      {"no world size", "\"world_size\": 4,", "", {"missing field \"world_size\""}},
      {"iteration as text", "\"iteration\": 3", "\"iteration\": \"3\"", {"type must be number"}},
      {"history too short", "\"iteration\": 3", "\"iteration\": 4", {"\"iteration\" 4 does not match 3"}},
      {"no iteration done", "\"iteration\": 3", "\"iteration\": 0", {"\"iteration\" 0 does not match 3"}},
      {"best without its rows", "\"rows\": 1234,", "", {"best:", "rows"}},
      {"best from a later restart",
       "\"restart\": 1",
       "\"restart\": 2",
       {"best.restart 2 is not a restart finished before restart 2"}},
      {"best from no restart", "\"restart\": 1", "\"restart\": -1", {"best.restart -1"}},
      // The JSON reader stops at a NUL as at the end of the text: without the check, this file
      // would read as the document {"a": 1} and fail on its fields, and one ending in a valid
      // checkpoint followed by a crash's zero padding would be resumed from.
      {"a NUL byte inside", "{", std::string("{\"a\": 1}\0{", 10), {"checkpoint.json: a NUL byte at byte offset 8"}},
  };
  for (const Corruption& k : cases) {
    SCOPED_TRACE(k.name);
    TempDir dir;
    const std::string folder = dir.path.string();
    host::save_checkpoint(folder, with_best());
    rewrite(folder, k.from, k.to);
    expect_refused(folder, k.fragments);
  }
}

TEST(CheckpointFile, ZerosPaddingAValidCheckpointAreRefused) {
  TempDir dir;
  const std::string folder = dir.path.string();
  host::save_checkpoint(folder, with_best());
  const std::size_t size = read_file(host::checkpoint_path(folder)).size();
  std::ofstream(host::checkpoint_path(folder), std::ios::app) << std::string(4096, '\0');
  expect_refused(folder, {"a NUL byte at byte offset " + std::to_string(size), "of " + std::to_string(size + 4096)});
}

}  // namespace
}  // namespace mixle::test
