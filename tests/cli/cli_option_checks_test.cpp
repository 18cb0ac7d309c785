// Every option whose values the command line checks: a bad value is a usage error (exit 2) on one
// "mixle: usage error:" line that names the option, the value and what would be accepted, and
// nothing runs — no model, checkpoint or output is written.
#include "common/run_cli.hpp"

#include <gtest/gtest.h>

#include <cctype>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

namespace mixle::test {
namespace {

struct BadOption {
  std::string args;                // after `mixle`; DATA, MODEL and OUT are replaced by paths
  std::vector<std::string> words;  // the message must contain each
};

std::string with_paths(std::string args, const TempDir& dir) {
  for (const auto& [name, path] : {std::pair<std::string, std::string>{"DATA", dir.file("d.npy")},
                                   {"MODEL", dir.file("m.json")},
                                   {"OUT", dir.file("out")}}) {
    for (auto at = args.find(name); at != std::string::npos; at = args.find(name, at + path.size()))
      args.replace(at, name.size(), path);
  }
  return args;
}

TEST(CliOptionChecks, EachRefusalNamesTheOptionTheValueAndWhatIsAccepted) {
  TempDir dir("cli-option-checks");
  write_bytes(dir.file("m.json"), R"({"format":"mixle-model","version":1,"weights":[0.5,0.5],"parts":[
    {"family":"gaussian_diag","columns":[0,2],"mean":[[0,0],[6,0]],"var":[[1,1],[1,1]]}]})");
  ASSERT_EQ(run_cli(dir, with_paths("generate -m MODEL -n 200 -o DATA", dir)).code, 0);
  const std::vector<BadOption> cases = {
      {"fit --data DATA -k 2 --empty drop -o OUT", {"--empty: drop not in {keep,reseed}"}},
      {"fit --data DATA -k 0 -o OUT", {"--components: 0 is below 1", "accepted: k or a range a:b of positive"}},
      {"fit --data DATA -k 0:3 -o OUT", {"--components: 0:3 is below 1"}},
      // A negative K is named as such, not reported as a missing --components.
      {"fit --data DATA --components -3 -o OUT", {"--components: -3 is below 1"}},
      {"fit --data DATA -k 2x -o OUT", {"--components: \"2x\" is not k or a:b", "accepted: k or a range"}},
      {"fit --data DATA -k 99999999999999999999 -o OUT", {"--components: \"99999999999999999999\" is not k"}},
      {"fit --data DATA -k 2: -o OUT", {"--components: \"2:\" is not k or a:b"}},
      {"fit --data DATA -k 5:2 -o OUT", {"--components: 5:2 runs backwards", "a ≤ b"}},
      {"fit --data DATA -k 2 --missing skip -o OUT", {"--missing: skip not in {error,drop,marginalise}"}},
      {"fit --data DATA -k 2:3 --select hqc -o OUT", {"--select: hqc not in {bic,aic}"}},
      {"fit --data DATA -k 2 --batch-size -5 -o OUT",
       {"--batch-size: -5 is below 0", "accepted: 0 (full-batch EM) or the rows per step"}},
      {"fit --data DATA -k 2 --comm tcp -o OUT", {"--comm: unknown communicator 'tcp'", "accepted: auto, single"}},
      {"fit --data DATA -k 2 --format xls -o OUT", {"--format: xls not in {auto,npy,csv,raw}"}},
      {"fit --data DATA -k 2 --raw-dtype f16 -o OUT", {"--raw-dtype: f16 not in {f32,f64}"}},
      // Numbers with a floor or a range: refused as they are parsed, not by the library after
      // (which named its own field, init-p or num_workers, and exited 1).
      {"fit --data DATA -k 2 --max-iter 0 -o OUT", {"--max-iter: 0 is below 1", "accepted: the most em iterations"}},
      {"fit --data DATA -k 2 --tol -1 -o OUT", {"--tol: -1 is below 0", "accepted: a change of the mean"}},
      {"fit --data DATA -k 2 --tol nan -o OUT", {"--tol: nan is not a finite number"}},
      {"fit --data DATA -k 2 --n-init 0 -o OUT", {"--n-init: 0 is below 1", "accepted: the restarts, ≥ 1"}},
      {"fit --data DATA -k 2 --init select --init-p 0 -o OUT",
       {"--init-p: 0 is not above 0", "accepted: the probability that a row is kept, in (0, 1]"}},
      {"fit --data DATA -k 2 --init select --init-p 1.5 -o OUT", {"--init-p: 1.5 is above 1"}},
      {"fit --data DATA -k 2 --batch-size 50 --step-decay 0.5 -o OUT",
       {"--step-decay: 0.5 is not above 0.5", "accepted: α in (0.5, 1]"}},
      {"fit --data DATA -k 2 --batch-size 50 --step-decay 1.25 -o OUT", {"--step-decay: 1.25 is above 1"}},
      {"fit --data DATA -k 2 --batch-size 50 --step-offset -1 -o OUT", {"--step-offset: -1 is below 0"}},
      {"fit --data DATA -k 2 --batch-size 50 --step-offset inf -o OUT", {"--step-offset: inf is not a finite number"}},
      {"fit --data DATA -k 2 --batch-size 50 --epochs 0 -o OUT", {"--epochs: 0 is below 1"}},
      {"fit --data DATA -k 2 --batch-size 50 --full-batch-iterations -1 -o OUT",
       {"--full-batch-iterations: -1 is below 0"}},
      {"fit --data DATA -k 2 --reg-covar -1e-6 -o OUT", {"--reg-covar: -1e-6 is below 0", "accepted: a variance ≥ 0"}},
      {"fit --data DATA -k 2 --pseudo-count -1 -o OUT", {"--pseudo-count: -1 is below 0"}},
      {"fit --data DATA -k 2 --rate-floor 0 -o OUT", {"--rate-floor: 0 is not above 0", "accepted: a floor > 0"}},
      {"fit --data DATA -k 2 --threads -1 -o OUT", {"--threads: -1 is below 0", "accepted: cpu threads, or 0 for all"}},
      {"fit --data DATA -k 2 --workers -1 -o OUT", {"--workers: -1 is below 0", "accepted: component threads"}},
      {"fit --data DATA -k 2 --timeout 0 -o OUT", {"--timeout: 0 is not above 0", "accepted: seconds > 0"}},
      {"generate -m MODEL -n 0 -o OUT", {"--rows: 0 is below 1", "accepted: the rows to draw, ≥ 1"}},
      {"score --data DATA -m MODEL -o OUT --threads -2", {"--threads: -2 is below 0"}},
      {"score --data DATA -m MODEL -o OUT --timeout -5", {"--timeout: -5 is not above 0"}},
      {"fit --data DATA -k 2 --timeout 1e300 -o OUT", {"--timeout: 1e300 is above 31536000", "at most a year"}},
      {"score --data DATA -m MODEL -o OUT --timeout 31536001", {"--timeout: 31536001 is above 31536000"}},
      {"generate -m MODEL -n 5 -o OUT --dtype f16", {"--dtype: f16 not in {f32,f64}"}},
      {"plan --model MODEL --rows 0", {"--rows: 0 is below 1", "accepted: the data rows"}},
      {"fit --data DATA -k 2 --checkpoint-every 0 -o OUT",
       {"--checkpoint-every: 0 is below 1", "accepted: the iterations between checkpoints"}},
      {"plan --model MODEL --rows 100 --num-chunks 0", {"--num-chunks: 0 is below 1", "accepted: the row ranges"}},
      {"plan --family gaussian_diag --components 0 --rows 100", {"--components: 0 is below 1"}},
      {"plan --family gaussian_diag --components 2 --dims 0 --rows 100", {"--dims: 0 is below 1"}},
      {"plan --model MODEL --rows 100 --safety-factor 0", {"--safety-factor: 0 is not above 0"}},
      {"plan --model MODEL --rows 100 --sub-chunks 0", {"--sub-chunks: 0 is below 1"}},
      {"plan --model MODEL --rows 100 --shard-components --min-components-per-shard 0",
       {"--min-components-per-shard: 0 is below 1"}},
      {"resources --calibrate --rows 0 --out OUT", {"--rows: 0 is below 1", "accepted: the rows benchmarked"}},
      {"resources --calibrate --dims 0 --out OUT", {"--dims: 0 is below 1"}},
      {"resources --calibrate --components 0 --out OUT", {"--components: 0 is below 1"}},
      {"resources --calibrate --iters 0 --out OUT", {"--iters: 0 is below 1"}},
      {"score --data DATA -m MODEL --what probs -o OUT",
       {"--what: probs not in {loglik,resp,labels,loglik-mean,bic,aic}"}},
      {"plan --model MODEL --rows 100 --dtype f16", {"--dtype: f16 not in {f32,f64}"}},
      {"launch --nproc 0 -- true", {"--nproc: 0 is below 1", "accepted: the ranks to start on this machine"}},
      {"launch --nproc 4097 -- true", {"--nproc: 4097 is above 4096"}},
      {"launch --master-port 0 -- true", {"--master-port: 0 is below 1", "accepted: a tcp port, 1 to 65535"}},
      {"launch --master-port 65536 -- true", {"--master-port: 65536 is above 65535"}},
      {"launch --max-restarts -1 -- true", {"--max-restarts: -1 is below 0"}},
      {"launch --max-restarts 1001 -- true", {"--max-restarts: 1001 is above 1000"}},
      {"launch --grace-period -0.5 -- true", {"--grace-period: -0.5 is below 0"}},
      {"launch --grace-period 3600.5 -- true", {"--grace-period: 3600.5 is above 3600", "accepted: seconds from"}},
      {"launch --grace-period nan -- true", {"--grace-period: nan is not a finite number"}},
      {"bench --rows 0", {"--rows: 0 is below 1", "accepted: the rows benchmarked"}},
      {"bench --dims -2", {"--dims: -2 is below 1"}},
      {"bench --components 0", {"--components: 0 is below 1"}},
      {"bench --family categorical --categories 1", {"--categories: 1 is below 2"}},
      {"bench --threads -1", {"--threads: -1 is below 0"}},
      {"bench --iters 0", {"--iters: 0 is below 1"}},
      {"bench --warmup -1", {"--warmup: -1 is below 0"}},
      {"bench --comm --min-bytes 0", {"--min-bytes: 0 is below 1"}},
      {"bench --comm --max-bytes -1", {"--max-bytes: -1 is below 1"}},
      {"bench --comm --max-bytes 68719476737", {"--max-bytes: 68719476737 is above 68719476736", "64 gib"}},
      {"launch --nproc 0x2 -- true", {"--nproc: 0x2 is not a decimal integer", "accepted: decimal digits"}},
      {"generate -m MODEL -n 0X10 -o OUT", {"--rows: 0X10 is not a decimal integer"}},
      {"fit --data DATA -k 2 --max-iter 000 -o OUT", {"--max-iter: 0 is below 1"}},
      {"resources --discover --cpu-workers 0 --out OUT", {"--cpu-workers: 0 is below 1", "accepted: the cpu slots"}},
  };
  for (const BadOption& c : cases) {
    const std::string args = with_paths(c.args, dir);
    SCOPED_TRACE(args);
    std::filesystem::remove_all(dir.file("out"));
    CliRun r = run_cli(dir, args);
    for (char& ch : r.err) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    EXPECT_EQ(r.code, 2) << r.err;
    EXPECT_EQ(r.err.rfind("mixle: usage error: ", 0), 0u) << r.err;
    for (std::string w : c.words) {
      for (char& ch : w) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
      EXPECT_NE(r.err.find(w), std::string::npos) << "\"" << r.err << "\" lacks " << w;
    }
    EXPECT_FALSE(std::filesystem::exists(dir.file("out"))) << "a refused command wrote its output";
  }
}

// An integer with leading zeros is the decimal number, as in Python and torchrun: `-n 010` draws
// ten rows, not CLI11's octal eight.
TEST(CliOptionChecks, IntegersAreDecimal) {
  TempDir dir("cli-option-decimal");
  write_bytes(dir.file("m.json"), R"({"format":"mixle-model","version":1,"weights":[1],"parts":[
    {"family":"poisson","columns":[0,1],"rate":[[3]]}]})");
  const CliRun r = run_cli(dir, with_paths("generate -m MODEL -n 010 -o OUT", dir) + ".npy");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("drew 10 rows × 1 columns"), std::string::npos) << r.err;
}

// --help shows each checked option's range beside its type, and its default where it has one:
// the range is the rule the checks above enforce, the default what README.md documents.
TEST(CliOptionChecks, HelpShowsEachRangeAndDefault) {
  TempDir dir("cli-option-help");
  const std::vector<std::pair<std::string, std::vector<std::string>>> commands = {
      {"fit",
       {"--max-iter INT:≥1=100",
        "--tol FLOAT:≥0=0.001",
        "--init-p FLOAT:(0,1]=0.1",
        "--n-init INT:≥1=1",
        "--reg-covar FLOAT:≥0=1e-06",
        "--pseudo-count FLOAT:≥0=0.001",
        "--rate-floor FLOAT:>0=1e-06",
        "--threads INT:≥0=0",
        "--workers INT:≥0",
        "--batch-size UINT:≥0=0",
        "--step-decay FLOAT:(0.5,1]=0.6",
        "--step-offset FLOAT:≥0=2",
        "--epochs INT:≥1=10",
        "--full-batch-iterations INT:≥0=0",
        "--timeout FLOAT:(0,31536000]=60",
        "--checkpoint-every INT:≥1=1",
        "--seed UINT=0",
        "--init TEXT=kmeans++",
        "--empty TEXT:{keep,reseed}=keep",
        "--missing TEXT:{error,drop,marginalise}=error",
        "--precision TEXT=fp32",
        "--memory-budget UINT:SIZE [b, kb(=1024b), ...]=0",
        "--backend TEXT=local",
        "--comm TEXT:COMM=auto",
        "--shard-components INT=0"}},
      {"score", {"--threads INT:≥0", "--timeout FLOAT:(0,31536000]=600"}},
      {"generate", {"-n,--rows INT:≥1"}},
      {"plan",
       {"--rows UINT:≥1", "--components UINT:≥1", "--dims UINT:≥1", "--num-chunks UINT:≥1", "--safety-factor FLOAT:>0",
        "--sub-chunks UINT:≥1", "--min-components-per-shard UINT:≥1"}},
      {"bench",
       {"-n,--rows INT:≥1=200000", "-d,--dims INT:≥1=32", "-k,--components INT:≥1=64", "--categories INT:≥2=4",
        "--threads INT:≥0=0", "--iters INT:≥1=10", "--warmup INT:≥0=2", "--min-bytes UINT:≥1=8",
        "--max-bytes UINT:[1,68719476736]=16777216"}},
      {"launch",
       {"--nproc INT:[1,4096]=1", "--master-port INT:[1,65535]", "--grace-period FLOAT:[0,3600]=10",
        "--max-restarts INT:[0,1000]=0"}},
      {"resources",
       {"--cpu-workers UINT:≥1", "--rows UINT:≥1=65536", "--dims UINT:≥1=32", "--components UINT:≥1=64",
        "--iters INT:≥1=3"}},
  };
  for (const auto& [command, shown] : commands) {
    const CliRun r = run_cli(dir, command + " --help");
    ASSERT_EQ(r.code, 0) << command << ": " << r.err;
    for (const std::string& text : shown)
      EXPECT_NE(r.out.find(text), std::string::npos) << command << " --help lacks " << text;
  }
}

}  // namespace
}  // namespace mixle::test
