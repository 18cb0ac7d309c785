#include "host/bench/comm_bench.hpp"
#include "host/bench/bench.hpp"

#include <mixle/version.hpp>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>

namespace mixle::host::bench {

std::vector<CommBenchRow> run_comm_bench(comms::Communicator& comm, std::size_t min_bytes, std::size_t max_bytes,
                                         int iters, int warmup) {
  std::vector<CommBenchRow> out;
  const double n = comm.size();
  const double expected = n * (n + 1) / 2;
  for (std::size_t bytes = std::max<std::size_t>(8, min_bytes); bytes <= max_bytes; bytes *= 4) {
    CommBenchRow row;
    row.count = bytes / sizeof(double);
    row.bytes = row.count * sizeof(double);
    std::vector<double> buffer(row.count);
    std::vector<double> times;
    for (int i = 0; i < warmup + iters; ++i) {
      std::fill(buffer.begin(), buffer.end(), static_cast<double>(comm.rank() + 1));
      comm.barrier();
      const auto t0 = std::chrono::steady_clock::now();
      comm.all_reduce_sum(std::span<double>(buffer));
      const double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      if (i >= warmup) times.push_back(t);
      row.correct = row.correct && std::all_of(buffer.begin(), buffer.end(), [&](double v) { return v == expected; });
    }
    // The slowest rank's median defines the collective's time.
    std::vector<double> median{summarise(std::move(times)).median};
    comm.all_reduce_max(std::span<double>(median));
    row.seconds = median[0];
    std::vector<double> ok{row.correct ? 0.0 : 1.0};
    comm.all_reduce_max(std::span<double>(ok));
    row.correct = ok[0] == 0.0;
    row.algbw_gbs = row.seconds > 0 ? giga(static_cast<double>(row.bytes) / row.seconds) : 0.0;
    row.busbw_gbs = row.algbw_gbs * 2.0 * (n - 1) / n;  // 0 in a world of one
    out.push_back(row);
  }
  return out;
}

std::string format_comm_table(const comms::Communicator& comm, const std::vector<CommBenchRow>& rows) {
  std::string s;
  char line[256];
  std::snprintf(line, sizeof line, "# all-reduce (sum, float64) over %d rank(s), %s\n", comm.size(),
                std::string(comm.type()).c_str());
  s += line;
  s += "#        bytes     count    time(us)  algbw(GB/s)  busbw(GB/s)  check\n";
  for (const auto& r : rows) {
    std::snprintf(line, sizeof line, "%14zu %9zu %11.2f %12.3f %12.3f  %s\n", r.bytes, r.count, r.seconds * 1e6,
                  r.algbw_gbs, r.busbw_gbs, r.correct ? "ok" : "WRONG");
    s += line;
  }
  return s;
}

std::string format_comm_json(const comms::Communicator& comm, const std::vector<CommBenchRow>& rows) {
  nlohmann::ordered_json j;
  j["format"] = "mixle-comm-bench";
  j["schema_version"] = 2;  // 2: the communicator is "comm" (it was "backend")
  j["version"] = MIXLE_VERSION_STRING;
  const std::time_t now = std::time(nullptr);
  char date[32];
  std::strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  j["date"] = date;
  j["comm"] = std::string(comm.type());
  j["ranks"] = comm.size();
  j["definitions"] = {{"algbw", "bytes per rank / seconds, 1e9 B/GB"},
                      {"busbw", "algbw * 2(n-1)/n"},
                      {"seconds", "median over repetitions of the slowest rank"}};
  j["results"] = nlohmann::ordered_json::array();
  for (const auto& r : rows)
    j["results"].push_back({{"bytes", r.bytes},
                            {"count", r.count},
                            {"seconds", r.seconds},
                            {"algbw_gbs", r.algbw_gbs},
                            {"busbw_gbs", r.busbw_gbs},
                            {"correct", r.correct}});
  return j.dump(2) + "\n";
}

}  // namespace mixle::host::bench
