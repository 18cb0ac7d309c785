// Edges of the CLI's options that a mutation run showed no test touched: the smallest accepted
// values (one row; zero is refused), a device index accepted by the syntax check, the options a local fit accepts,
// and what the fit summary and the bench report always print.
#include "common/run_cli.hpp"

#include <mixle/data.hpp>

#include <nlohmann/json.hpp>

#include <gtest/gtest.h>

#include <fcntl.h>
#include <pty.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <regex>
#include <string>
#include <vector>

namespace mixle {
namespace {

using test::TempDir;

constexpr const char* kTruth = R"({"format": "mixle-model", "version": 1, "weights": [0.5, 0.5],
  "parts": [{"family": "gaussian_diag", "columns": [0, 2],
             "mean": [[0, 0], [6, 6]], "var": [[1, 1], [1, 1]]}]})";

// A checkpoint is written atomically: a fit killed halfway through writing its third one (the
// checkpoint-write failpoint sits between the halves) leaves the second, whole, and no model.
TEST(CliEdges, AFitKilledWritingACheckpointLeavesThePreviousOneWhole) {
  TempDir dir("cli-edges-checkpoint");
  test::write_bytes(dir.file("truth.json"), kTruth);
  ASSERT_EQ(
      test::run_cli(dir, "generate -m " + dir.file("truth.json") + " -n 500 --seed 1 -o " + dir.file("d.npy")).code, 0);
  const std::string fit = "fit --data " + dir.file("d.npy") + " -k 2 --layout gaussian_diag --seed 1 --max-iter 6 " +
                          "--tol 0 --quiet --checkpoint-every 1 --checkpoint-dir " + dir.file("ck") + " --out " +
                          dir.file("model.json");
  const test::CliRun killed = test::run_cli(dir, fit, "MIXLE_FAILPOINT=checkpoint-write@0:kill#3");
  EXPECT_NE(killed.code, 0) << "the failpoint did not stop the fit:\n" << killed.err;
  EXPECT_FALSE(std::filesystem::exists(dir.file("model.json")));
  const nlohmann::json checkpoint = nlohmann::json::parse(test::read_text(dir.file("ck/checkpoint.json")));
  EXPECT_EQ(checkpoint.at("iteration").get<int>(), 2);
}

TEST(CliEdges, OneRowIsTheSmallestGenerateAndBench) {
  TempDir dir("cli-edges-one");
  test::write_bytes(dir.file("truth.json"), kTruth);
  const test::CliRun g =
      test::run_cli(dir, "generate -m " + dir.file("truth.json") + " -n 1 --seed 1 -o " + dir.file("one.npy"));
  ASSERT_EQ(g.code, 0) << g.err;
  EXPECT_EQ(read_data(dir.file("one.npy")).rows(), 1u);
  const test::CliRun none =
      test::run_cli(dir, "generate -m " + dir.file("truth.json") + " -n 0 --seed 1 -o " + dir.file("none.npy"));
  EXPECT_EQ(none.code, 2) << none.err;  // a usage error: the option's value, refused as it is parsed
  EXPECT_NE(none.err.find("--rows: 0 is below 1; accepted: the rows to draw"), std::string::npos) << none.err;
  EXPECT_FALSE(std::filesystem::exists(dir.file("none.npy")));
  const test::CliRun b = test::run_cli(dir, "bench --rows 1 --dims 2 --components 2 --iters 1");
  EXPECT_EQ(b.code, 0) << b.err;
}

TEST(CliEdges, DeviceIndexSyntax) {
  TempDir dir("cli-edges-device");
  // cuda:<digits> passes the syntax check (then runs, or is refused as not built/not present:
  // never a usage error); anything else after "cuda:" is a usage error naming what is accepted.
  for (const char* device : {"cuda:0", "cuda:1"}) {
    const test::CliRun r =
        test::run_cli(dir, std::string("bench --rows 64 --dims 2 --components 2 --iters 1 --device ") + device);
    EXPECT_NE(r.code, 2) << device << ": " << r.err;
  }
  for (const char* device : {"cuda:", "cuda:x", "cuda:1a"}) {
    const test::CliRun r = test::run_cli(dir, std::string("bench --rows 64 --device ") + device);
    EXPECT_EQ(r.code, 2) << device;
    EXPECT_NE(r.err.find("cuda:<index>"), std::string::npos) << r.err;
  }
}

/// Runs `mixle args…` with stderr on a pseudo-terminal (stdout to /dev/null); returns what the
/// terminal received.
std::string stderr_on_a_terminal(const std::vector<std::string>& args) {
  int master = -1, slave = -1;
  if (::openpty(&master, &slave, nullptr, nullptr, nullptr) != 0) return "openpty failed";
  const pid_t child = ::fork();
  if (child == 0) {
    const int null = ::open("/dev/null", O_WRONLY);
    ::dup2(null, STDOUT_FILENO);
    ::dup2(slave, STDERR_FILENO);
    ::close(master);
    std::vector<char*> argv{const_cast<char*>(MIXLE_CLI_PATH)};
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  ::close(slave);
  std::string text;
  char buffer[4096];
  for (;;) {
    const ssize_t n = ::read(master, buffer, sizeof buffer);
    if (n > 0)
      text.append(buffer, static_cast<std::size_t>(n));
    else if (n < 0 && errno == EINTR)
      continue;
    else
      break;  // EIO once the child has closed its side
  }
  ::close(master);
  int status = 0;
  ::waitpid(child, &status, 0);
  return text;
}

// On a terminal the progress is one line rewritten in place; when the fit ends that line is
// finished with a newline, so what follows (a warning here) starts a line of its own.
TEST(CliEdges, ProgressOnATerminalIsOneLiveLineThatEndsBeforeTheWarnings) {
  TempDir dir("cli-edges-tty");
  test::write_bytes(dir.file("truth.json"), kTruth);
  ASSERT_EQ(
      test::run_cli(dir, "generate -m " + dir.file("truth.json") + " -n 300 --seed 2 -o " + dir.file("d.npy")).code, 0);
  const std::string text = stderr_on_a_terminal({"fit", "--data", dir.file("d.npy"), "-k", "2", "--seed", "3", "--tol",
                                                 "0", "--max-iter", "3", "--out", dir.file("m.json")});
  EXPECT_NE(text.find("\r\033[K[restart 0] iter   3/3"), std::string::npos) << text;
  const auto warning = text.find("mixle: warning: EM did not converge");
  ASSERT_NE(warning, std::string::npos) << text;
  ASSERT_GT(warning, 0u);
  // A terminal turns "\n" into "\r\n".
  EXPECT_EQ(text[warning - 1], '\n') << "the live line ran into the warning:\n" << text;
}

// Off a terminal the progress is a line an iteration; `--quiet` prints none.
TEST(CliEdges, ProgressIsALineAnIterationOnAPipeAndNoneWhenQuiet) {
  TempDir dir("cli-edges-quiet");
  test::write_bytes(dir.file("truth.json"), kTruth);
  ASSERT_EQ(
      test::run_cli(dir, "generate -m " + dir.file("truth.json") + " -n 300 --seed 2 -o " + dir.file("d.npy")).code, 0);
  const std::string fit =
      "fit --data " + dir.file("d.npy") + " -k 2 --seed 3 --tol 0 --max-iter 3 --out " + dir.file("m.json");
  const test::CliRun loud = test::run_cli(dir, fit);
  ASSERT_EQ(loud.code, 0) << loud.err;
  for (const char* line : {"[restart 0] iter   1/3", "[restart 0] iter   2/3", "[restart 0] iter   3/3"})
    EXPECT_NE(loud.err.find(line), std::string::npos) << line << "\n" << loud.err;
  EXPECT_EQ(loud.err.find('\r'), std::string::npos) << loud.err;  // no live line off a terminal
  // The pairs each row's E-step evaluated: K = 2 every iteration (the first pass has no anchors,
  // and with two components the dense pass costs less than a pruned one).
  EXPECT_NE(loud.err.find("  2 pairs/row\n"), std::string::npos) << loud.err;
  const test::CliRun one =
      test::run_cli(dir, "fit --data " + dir.file("d.npy") + " -k 1 --tol 0 --max-iter 2 --out " + dir.file("m1.json"));
  ASSERT_EQ(one.code, 0) << one.err;
  EXPECT_NE(one.err.find("  1 pairs/row\n"), std::string::npos) << one.err;  // one component: one pair a row
  const test::CliRun quiet = test::run_cli(dir, fit + " --quiet");
  ASSERT_EQ(quiet.code, 0) << quiet.err;
  EXPECT_EQ(quiet.err.find("] iter "), std::string::npos) << quiet.err;
}

TEST(CliEdges, FitSummaryAndBenchReportShowEveryLine) {
  TempDir dir("cli-edges-fit");
  test::write_bytes(dir.file("truth.json"), kTruth);
  ASSERT_EQ(
      test::run_cli(dir, "generate -m " + dir.file("truth.json") + " -n 500 --seed 2 -o " + dir.file("d.npy")).code, 0);
  // A local fit takes --shard-components 1 (one shard: nothing to distribute).
  const test::CliRun f = test::run_cli(
      dir, "fit --data " + dir.file("d.npy") + " -k 2 --seed 3 --shard-components 1 --out " + dir.file("m.json"));
  ASSERT_EQ(f.code, 0) << f.err;
  for (const char* line : {"fitted 2 components on 500 rows", "mean log-likelihood per row:",
                           "log-likelihood per iteration:", "throughput:", "component 0", "component 1"})
    EXPECT_NE(f.out.find(line), std::string::npos) << "fit output lacks \"" << line << "\":\n" << f.out;
  // The per-iteration log-likelihoods make a line of their own, numbers only.
  EXPECT_TRUE(std::regex_search(f.out, std::regex(R"((^|\n)log-likelihood per iteration:( -?\d+\.\d{6},?)+\n)")))
      << f.out;
  // A backend outside the distributed driver takes one shard too, and refuses two.
  const std::string threaded = "fit --data " + dir.file("d.npy") + " -k 2 --seed 3 -q --backend component_parallel";
  EXPECT_EQ(test::run_cli(dir, threaded + " --shard-components 1 --out " + dir.file("t.json")).code, 0);
  EXPECT_EQ(test::run_cli(dir, threaded + " --shard-components 2 --out " + dir.file("t.json")).code, 2);
  // Checkpoints, resume and receipts belong to the distributed driver: each alone is refused.
  for (const std::string& option :
       {"--checkpoint-dir " + dir.file("ck"), "--resume " + dir.file("ck"), "--receipts " + dir.file("r.jsonl")}) {
    const test::CliRun refused = test::run_cli(dir, threaded + " " + option + " --out " + dir.file("t.json"));
    EXPECT_EQ(refused.code, 2) << option;
    EXPECT_NE(refused.err.find("need the local or distributed backend"), std::string::npos) << option << refused.err;
  }
  const test::CliRun b = test::run_cli(dir, "bench --rows 200 --dims 2 --components 2 --iters 1");
  ASSERT_EQ(b.code, 0) << b.err;
  for (const char* phase : {"cpu      e_step", "cpu      m_step", "cpu      iteration"})
    EXPECT_NE(b.out.find(phase), std::string::npos) << "bench report lacks \"" << phase << "\":\n" << b.out;
  // The documented defaults (bench/README.md): 10 timed repetitions per phase after 2 warm-up
  // iterations, family gaussian_diag, fp32, seed 0.
  const test::CliRun d = test::run_cli(dir, "bench --rows 200 --dims 2 --components 2 --json " + dir.file("b.json"));
  ASSERT_EQ(d.code, 0) << d.err;
  const nlohmann::json report = nlohmann::json::parse(test::read_text(dir.file("b.json")));
  EXPECT_EQ(report["case"]["iters"], 10);
  EXPECT_EQ(report["case"]["warmup"], 2);
  EXPECT_EQ(report["case"]["family"], "gaussian_diag");
  EXPECT_EQ(report["case"]["precision"], "fp32");
  EXPECT_EQ(report["case"]["seed"], 0);
  for (const char* phase : {"e_step", "m_step", "iteration"})
    EXPECT_EQ(report["results"][0]["phases"][phase]["samples_s"].size(), 10u) << phase;
}

// --format overrides the extension both ways (an .npy named .bin, CSV named .data, raw named
// .dat), --comm names an unknown communicator with the accepted ones, and an output name whose
// format cannot be told is a usage error naming it.
TEST(CliEdges, FormatsCommunicatorsAndOutputNames) {
  TempDir dir("cli-edges-formats");
  test::write_bytes(dir.file("truth.json"), kTruth);
  ASSERT_EQ(
      test::run_cli(dir, "generate -m " + dir.file("truth.json") + " -n 300 --seed 2 -o " + dir.file("d.npy")).code, 0);
  ASSERT_EQ(
      test::run_cli(dir, "generate -m " + dir.file("truth.json") + " -n 300 --seed 2 -o " + dir.file("d.csv")).code, 0);
  const Dataset d = read_data(dir.file("d.npy"));
  // float32 unless --dtype f64 asks for the draws themselves, which the float32 file rounds.
  ASSERT_EQ(d.dtype(), DType::f32);
  ASSERT_EQ(test::run_cli(
                dir, "generate -m " + dir.file("truth.json") + " -n 300 --seed 2 --dtype f64 -o " + dir.file("d64.npy"))
                .code,
            0);
  const Dataset d64 = read_data(dir.file("d64.npy"));
  ASSERT_EQ(d64.dtype(), DType::f64);
  ASSERT_EQ(d64.rows(), d.rows());
  bool wider = false;  // some draw is not a float32 value
  for (std::size_t i = 0; i < d.rows() * d.cols(); ++i) {
    const double x = d64.at(i / 2, i % 2);
    EXPECT_EQ(d.at(i / 2, i % 2), static_cast<double>(static_cast<float>(x))) << i;
    wider |= static_cast<double>(static_cast<float>(x)) != x;
  }
  EXPECT_TRUE(wider) << "the f64 file holds float32 values only";
  std::vector<float> raw(d.rows() * d.cols());
  for (std::size_t i = 0; i < raw.size(); ++i) raw[i] = static_cast<float>(d.at(i / 2, i % 2));
  test::write_bytes(dir.file("d.dat"), std::string(reinterpret_cast<const char*>(raw.data()), raw.size() * 4));
  std::filesystem::copy_file(dir.file("d.npy"), dir.file("npy.bin"));
  std::filesystem::copy_file(dir.file("d.csv"), dir.file("csv.data"));
  for (const std::string& args :
       {"--data " + dir.file("npy.bin") + " --format npy", "--data " + dir.file("csv.data") + " --format csv",
        "--data " + dir.file("d.dat") + " --format raw --cols 2"}) {
    const test::CliRun r = test::run_cli(dir, "fit " + args + " -k 2 -q --seed 1 --out " + dir.file("m.json"));
    EXPECT_EQ(r.code, 0) << args << ": " << r.err;
    EXPECT_NE(r.out.find("on 300 rows"), std::string::npos) << args << ": " << r.out;
  }
  // Without --format the .bin file is raw float32 bytes, header included: not 300 rows.
  const test::CliRun as_raw = test::run_cli(
      dir, "fit --data " + dir.file("npy.bin") + " --cols 2 -k 2 -q --seed 1 --out " + dir.file("m.json"));
  EXPECT_EQ(as_raw.out.find("on 300 rows"), std::string::npos) << as_raw.out;
  const test::CliRun comm = test::run_cli(dir, "fit --data " + dir.file("d.npy") + " -k 2 --comm pigeon");
  EXPECT_EQ(comm.code, 2);
  EXPECT_NE(comm.err.find("unknown communicator 'pigeon'; accepted: auto, "), std::string::npos) << comm.err;
  const test::CliRun out =
      test::run_cli(dir, "generate -m " + dir.file("truth.json") + " -n 3 --seed 2 -o " + dir.file("d.parquet"));
  EXPECT_EQ(out.code, 2);
  EXPECT_NE(out.err.find("d.parquet\": use a .npy file name, or .csv, .tsv or .txt for text"), std::string::npos)
      << out.err;
  // A .npz is an archive of .npy files, not one: refused as an output (the reader explains it).
  const test::CliRun npz =
      test::run_cli(dir, "generate -m " + dir.file("truth.json") + " -n 3 --seed 2 -o " + dir.file("d.npz"));
  EXPECT_EQ(npz.code, 2);
  EXPECT_NE(npz.err.find("d.npz\": use a .npy file name"), std::string::npos) << npz.err;
  // Extensions count in any case: D.TSV is text with tabs.
  ASSERT_EQ(test::run_cli(dir, "generate -m " + dir.file("truth.json") + " -n 3 --seed 2 -o " + dir.file("D.TSV")).code,
            0);
  EXPECT_NE(test::read_text(dir.file("D.TSV")).find('\t'), std::string::npos);
  EXPECT_EQ(test::read_text(dir.file("D.TSV")).find(','), std::string::npos);
  // .tsv is text with tabs, .txt (here the labels) text with commas: the same rows either way.
  ASSERT_EQ(test::run_cli(dir, "generate -m " + dir.file("truth.json") + " -n 300 --seed 2 -o " + dir.file("d.tsv") +
                                   " --labels " + dir.file("labels.txt"))
                .code,
            0);
  const std::string tsv = test::read_text(dir.file("d.tsv"));
  EXPECT_NE(tsv.find('\t'), std::string::npos) << tsv.substr(0, 200);
  EXPECT_EQ(tsv.find(','), std::string::npos) << tsv.substr(0, 200);
  const Dataset back = read_data(dir.file("d.tsv"));
  ASSERT_EQ(back.rows(), d.rows());
  // generate draws float32 values; text holds each float's shortest form, read back as double.
  for (std::size_t i = 0; i < raw.size(); ++i)
    EXPECT_EQ(static_cast<float>(back.at(i / 2, i % 2)), static_cast<float>(d.at(i / 2, i % 2))) << i;
  EXPECT_EQ(read_data(dir.file("labels.txt")).rows(), 300u);
}

// Raw data take their shape from --shape N,C (N may be left out); anything but two
// non-negative integers is a usage error naming the option.
TEST(CliEdges, RawShapeOption) {
  TempDir dir("cli-edges-raw");
  std::vector<float> v(400);
  for (std::size_t i = 0; i < v.size(); ++i)
    v[i] = static_cast<float>((i % 2 ? 6.0 : 0.0) + 0.01 * static_cast<double>(i % 7));
  test::write_bytes(dir.file("d.f32"), std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(float)));
  for (const char* shape : {"200,2", ",2"}) {
    const test::CliRun r = test::run_cli(
        dir, "fit --data " + dir.file("d.f32") + " --shape " + shape + " -k 2 -q --out " + dir.file("m.json"));
    EXPECT_EQ(r.code, 0) << shape << ": " << r.err;
    EXPECT_NE(r.out.find("on 200 rows"), std::string::npos) << shape << ": " << r.out;
  }
  for (const char* shape : {"2x0,2", "200,", "200,2,1", "-1,2"}) {
    const test::CliRun r = test::run_cli(
        dir, "fit --data " + dir.file("d.f32") + " --shape " + shape + " -k 2 --out " + dir.file("m.json"));
    EXPECT_EQ(r.code, 2) << shape << ": " << r.err;
    EXPECT_NE(r.err.find("--shape"), std::string::npos) << shape << ": " << r.err;
  }
}

}  // namespace
}  // namespace mixle
