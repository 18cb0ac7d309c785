// mixle_comms_probe: a test-only program run as every rank of a real group (under `mixle launch`,
// mpirun, or processes a test starts with torchrun variables). It forms the communicator from the
// launch environment and checks collectives with exact-by-construction values (integers whose sums
// and maxima are exact in float32/float64), so a wrong reduction cannot hide in a tolerance.
//
//   mixle_comms_probe [--comm auto|gloo|mpi|single] [--timeout-ms N]
//                     [--scenario collectives|second|split|split-die|split-hang|die|hang|raise]
//                     [--victim R]
// second (mpi): a second communicator made while the first lives; both must work.
// split: sub-communicators of a world of 4 (pairs r/2, parities r%2, reversed keys, a nested split)
// must group, rank and reduce as MPI_Comm_split defines, with the parent usable in between.
// split-die / split-hang: the victim is killed / hangs while its pair all-reduces; its partner's
// error must speak in world ranks.
// Exit codes: 0 all checks passed; 1 a check failed; 3 a mixle error (e.g. CommunicationError).
#include "comms/communicator.hpp"
#include "host/launch_env.hpp"

#include <mixle/error.hpp>

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace {

using mixle::comms::Communicator;

int g_rank = -1;
int g_failures = 0;

void check(bool ok, const std::string& what) {
  if (ok) return;
  ++g_failures;
  std::fprintf(stderr, "probe: rank %d: FAIL %s\n", g_rank, what.c_str());
}

std::uint64_t fnv1a(const void* data, std::size_t bytes) {
  std::uint64_t h = 1469598103934665603ull;
  for (std::size_t i = 0; i < bytes; ++i) h = (h ^ static_cast<const unsigned char*>(data)[i]) * 1099511628211ull;
  return h;
}

// Every rank must hold identical bytes: gather each rank's hash of `data` and compare.
template <class T>
void check_identical_everywhere(Communicator& comm, const std::vector<T>& data, const std::string& what) {
  std::uint64_t mine = fnv1a(data.data(), data.size() * sizeof(T));
  std::vector<std::uint64_t> all(static_cast<std::size_t>(comm.size()));
  comm.all_gather(std::span<const std::uint64_t>(&mine, 1), std::span<std::uint64_t>(all));
  for (int r = 0; r < comm.size(); ++r)
    check(all[static_cast<std::size_t>(r)] == mine,
          what + ": rank " + std::to_string(r) + " holds different bytes than rank " + std::to_string(comm.rank()));
}

void run_collectives(Communicator& comm) {
  const int n = comm.size(), r = comm.rank();
  const double ranks_sum = n * (n + 1) / 2.0;  // Σ (rank+1)

  // float64 sum: (rank+1)·(i+1) sums to (i+1)·Σ(rank+1) exactly.
  for (std::size_t count : {std::size_t{1}, std::size_t{1000}, std::size_t{1} << 20}) {
    std::vector<double> x(count);
    for (std::size_t i = 0; i < count; ++i) x[i] = (r + 1) * double(i % 100'000 + 1);
    comm.all_reduce_sum(std::span<double>(x));
    std::size_t wrong = 0;
    for (std::size_t i = 0; i < count; ++i) wrong += x[i] != double(i % 100'000 + 1) * ranks_sum;
    check(wrong == 0, "all_reduce_sum<double> of " + std::to_string(count) + ": " + std::to_string(wrong) + " wrong");
  }
  // float32 sum: values below 2^24/n stay exact.
  {
    std::vector<float> x(4099);
    for (std::size_t i = 0; i < x.size(); ++i) x[i] = float((r + 1) * (i % 1000));
    comm.all_reduce_sum(std::span<float>(x));
    std::size_t wrong = 0;
    for (std::size_t i = 0; i < x.size(); ++i) wrong += x[i] != float((i % 1000) * ranks_sum);
    check(wrong == 0, "all_reduce_sum<float>: " + std::to_string(wrong) + " wrong");
  }
  // max: a per-rank pattern whose maximum each rank can compute itself.
  auto pattern = [](int rank, std::size_t i) { return double((i * 7 + std::size_t(rank) * 13) % 101) - 50.0; };
  {
    std::vector<double> x(777);
    std::vector<float> y(777);
    for (std::size_t i = 0; i < x.size(); ++i) x[i] = pattern(r, i), y[i] = float(-pattern(r, i));
    comm.all_reduce_max(std::span<double>(x));
    comm.all_reduce_max(std::span<float>(y));
    std::size_t wrong = 0;
    for (std::size_t i = 0; i < x.size(); ++i) {
      double mx = -1e300, my = -1e300;
      for (int q = 0; q < n; ++q) mx = std::max(mx, pattern(q, i)), my = std::max(my, -pattern(q, i));
      wrong += (x[i] != mx) + (y[i] != float(my));
    }
    check(wrong == 0, "all_reduce_max: " + std::to_string(wrong) + " wrong");
  }
  // Order-sensitive sums (random doubles): the result must be the same bytes on every rank.
  {
    std::mt19937_64 gen(1234 + std::uint64_t(r));
    std::uniform_real_distribution<double> u(-1.0, 1.0);
    std::vector<double> x(10'007);
    for (auto& v : x) v = u(gen) * std::ldexp(1.0, int(gen() % 60) - 30);
    comm.all_reduce_sum(std::span<double>(x));
    check_identical_everywhere(comm, x, "all_reduce_sum of random doubles");
  }
  // broadcast from every root, bytes and typed.
  for (int root = 0; root < n; ++root) {
    std::vector<unsigned char> b(1001, 0);
    if (r == root)
      for (std::size_t i = 0; i < b.size(); ++i) b[i] = (unsigned char)((root * 31 + i) % 251);
    comm.broadcast_bytes(b.data(), b.size(), root);
    std::size_t wrong = 0;
    for (std::size_t i = 0; i < b.size(); ++i) wrong += b[i] != (unsigned char)((root * 31 + i) % 251);
    check(wrong == 0, "broadcast_bytes from " + std::to_string(root));
    std::vector<double> d(5, r == root ? root + 0.5 : -1.0);
    comm.broadcast(std::span<double>(d), root);
    check(d[4] == root + 0.5, "broadcast<double> from " + std::to_string(root));
  }
  // all_gather of 17 bytes per rank.
  {
    std::vector<unsigned char> mine(17), all(17 * std::size_t(n));
    for (std::size_t i = 0; i < mine.size(); ++i) mine[i] = (unsigned char)(r * 17 + i);
    comm.all_gather_bytes(mine.data(), mine.size(), all.data());
    std::size_t wrong = 0;
    for (int q = 0; q < n; ++q)
      for (std::size_t i = 0; i < 17; ++i) wrong += all[std::size_t(q) * 17 + i] != (unsigned char)(q * 17 + i);
    check(wrong == 0, "all_gather: " + std::to_string(wrong) + " wrong bytes");
  }
  comm.barrier();
  check(comm.collective_bytes() > (std::uint64_t{8} << 20), "collective_bytes counts the payload");
}

// The world ranks that form the group of `color` among colors[0..n), in child rank order (by key,
// then world rank): what MPI_Comm_split defines, computed independently of mixle's split.
std::vector<int> expected_members(const std::vector<int>& colors, const std::vector<int>& keys, int color) {
  std::vector<int> members;
  for (int q = 0; q < int(colors.size()); ++q)
    if (colors[std::size_t(q)] == color) members.push_back(q);
  std::stable_sort(members.begin(), members.end(),
                   [&](int a, int b) { return keys[std::size_t(a)] < keys[std::size_t(b)]; });
  return members;
}

// Splits `world` by colors/keys (indexed by world rank) and checks the child: size, rank, world
// ranks, and that its collectives combine exactly its members (sum and max of world ranks, gather
// of world ranks in child order). Returns the child for further use.
std::unique_ptr<Communicator> split_and_check(Communicator& parent, int world_rank, const std::vector<int>& colors,
                                              const std::vector<int>& keys, const std::string& name) {
  const std::size_t w = std::size_t(world_rank);
  auto child = parent.split(colors[w], keys[w]);
  const std::vector<int> members = expected_members(colors, keys, colors[w]);
  const int expected_rank = int(std::find(members.begin(), members.end(), world_rank) - members.begin());
  check(child->size() == int(members.size()),
        name + ": size " + std::to_string(child->size()) + ", expected " + std::to_string(members.size()));
  check(child->rank() == expected_rank,
        name + ": rank " + std::to_string(child->rank()) + ", expected " + std::to_string(expected_rank));
  check(child->type() == parent.type(), name + ": backend");
  check(child->timeout() == parent.timeout(), name + ": timeout");
  if (child->size() != int(members.size())) return child;
  for (int i = 0; i < child->size(); ++i)
    check(child->world_rank(i) == members[std::size_t(i)], name + ": world_rank(" + std::to_string(i) + ")");

  std::vector<double> sum{double(world_rank), 1.0};
  child->all_reduce_sum(std::span<double>(sum));
  double expected_sum = 0;
  for (int m : members) expected_sum += m;
  check(sum[0] == expected_sum && sum[1] == double(members.size()), name + ": all_reduce_sum of world ranks");
  std::vector<float> mx{float(world_rank), float(-world_rank)};
  child->all_reduce_max(std::span<float>(mx));
  check(mx[0] == float(*std::max_element(members.begin(), members.end())) &&
            mx[1] == float(-*std::min_element(members.begin(), members.end())),
        name + ": all_reduce_max of world ranks");
  std::vector<int> gathered(members.size(), -1);
  child->all_gather(std::span<const int>(&world_rank, 1), std::span<int>(gathered));
  check(gathered == members, name + ": all_gather of world ranks is not the members in child order");
  return child;
}

void run_split(Communicator& world) {
  const int n = world.size(), r = world.rank();
  const auto count = static_cast<std::size_t>(n);
  std::vector<int> pair(count), parity(count), by_rank(count), reversed(count), zero(count, 0);
  for (int q = 0; q < n; ++q) {
    pair[std::size_t(q)] = q / 2;
    parity[std::size_t(q)] = q % 2;
    by_rank[std::size_t(q)] = q;
    reversed[std::size_t(q)] = n - q;
  }
  auto pairs = split_and_check(world, r, pair, by_rank, "pairs (r/2)");
  auto parities = split_and_check(world, r, parity, by_rank, "parities (r%2)");
  // The parent stays usable between and after splits, alternating with its children.
  {
    std::vector<double> x{double(r + 1)};
    world.all_reduce_sum(std::span<double>(x));
    check(x[0] == n * (n + 1) / 2.0, "world all_reduce_sum after two splits");
  }
  run_collectives(*pairs);
  run_collectives(*parities);
  auto backwards = split_and_check(world, r, zero, reversed, "one group, reversed keys");
  auto ties = split_and_check(world, r, zero, zero, "one group, equal keys (ranks break ties)");
  // A nested split: the parities group again, reversed by its own rank.
  {
    std::vector<int> members = expected_members(parity, by_rank, r % 2);
    auto nested = parities->split(0, -parities->rank());
    std::vector<int> gathered(members.size(), -1);
    if (nested->size() == int(members.size()))
      nested->all_gather(std::span<const int>(&r, 1), std::span<int>(gathered));
    std::reverse(members.begin(), members.end());
    check(gathered == members, "nested split of the parities group with reversed keys");
  }
  run_collectives(world);
  world.barrier();
}

// The victim's pair partner all-reduces in the pair until it notices; the other ranks go to a
// world barrier, which the victim never reaches.
void run_split_fault(Communicator& world, int victim, bool hang) {
  const int r = world.rank();
  auto pairs = world.split(r / 2, r);
  pairs->barrier();
  world.barrier();  // every pair is formed before the victim dies
  if (r == victim) {
    if (!hang) ::raise(SIGKILL);
    for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));
  }
  if (r / 2 == victim / 2) {
    for (int round = 0; round < 1'000'000; ++round) {  // until the partner's failure is noticed
      std::vector<double> x(64, 1.0);
      pairs->all_reduce_sum(std::span<double>(x));
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }
  // Under MPI nothing but the timeout notices a hung peer, and mpirun aborts the job at the
  // first failing rank: the other pair enters the world barrier one timeout late, so the
  // partner's pair all-reduce (the message under test) times out first. Gloo's ranks see the
  // failure themselves (the tests check every rank's message there).
  if (world.type() == "mpi" && r / 2 != victim / 2) std::this_thread::sleep_for(world.timeout());
  world.barrier();
}

}  // namespace

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  std::setvbuf(stderr, nullptr, _IOLBF, 0);
  std::string comm_name = "auto", scenario = "collectives";
  long timeout_ms = 20'000;
  int victim = 1;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string a = argv[i];
    if (a == "--comm")
      comm_name = argv[i + 1];
    else if (a == "--timeout-ms")
      timeout_ms = std::stol(argv[i + 1]);
    else if (a == "--scenario")
      scenario = argv[i + 1];
    else if (a == "--victim")
      victim = std::stoi(argv[i + 1]);
    else {
      std::fprintf(stderr, "probe: unknown argument %s\n", a.c_str());
      return 2;
    }
  }
  mixle::host::LaunchEnv env;
  try {
    env = mixle::host::detect_launch_env();
    g_rank = env.rank;
    auto kind = mixle::host::resolve_comm(comm_name, env, false);
    auto comm = mixle::host::communicator_from_env(env, kind, std::chrono::milliseconds(timeout_ms));
    if (scenario == "collectives") {
      run_collectives(*comm);
      if (g_failures) return 1;
      std::printf("probe: rank %d/%d %s ok\n", comm->rank(), comm->size(), std::string(comm->type()).c_str());
      return 0;
    }
    if (scenario == "second") {
      // A second communicator while the first is alive (a host application that keeps its own):
      // MPI is initialised once, by the first, and both work.
      auto second = mixle::host::communicator_from_env(env, kind, std::chrono::milliseconds(timeout_ms));
      run_collectives(*second);
      second.reset();
      run_collectives(*comm);
      if (g_failures) return 1;
      std::printf("probe: rank %d/%d %s second ok\n", comm->rank(), comm->size(), std::string(comm->type()).c_str());
      return 0;
    }
    if (scenario == "split") {
      run_split(*comm);
      if (g_failures) return 1;
      std::printf("probe: rank %d/%d %s split ok\n", comm->rank(), comm->size(), std::string(comm->type()).c_str());
      return 0;
    }
    if (scenario == "split-die" || scenario == "split-hang") {
      run_split_fault(*comm, victim, scenario == "split-hang");
      return 0;
    }
    comm->barrier();  // everyone is in the group before the victim misbehaves
    if (comm->rank() == victim) {
      if (scenario == "die") ::raise(SIGKILL);
      if (scenario == "hang")
        for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));
      if (scenario == "raise") throw mixle::InvalidInput("probe victim raises on purpose");
    }
    for (int round = 0; round < 1'000'000; ++round) {  // until the lost peer is noticed
      std::vector<double> x(64, 1.0);
      try {
        comm->all_reduce_sum(std::span<double>(x));
      } catch (const mixle::CommunicationError&) {
        // A communicator that has failed refuses the next collective at once, without waiting
        // for the lost peer again.
        try {
          comm->all_reduce_sum(std::span<double>(x));
          std::fprintf(stderr, "probe: rank %d: the next all-reduce ran\n", g_rank);
        } catch (const mixle::Error& again) {
          std::fprintf(stderr, "probe: rank %d: the next all-reduce: %s\n", g_rank, again.what());
        }
        throw;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return 0;
  } catch (const mixle::Error& e) {
    std::fprintf(stderr, "probe: rank %d: error: %s\n", g_rank, e.what());
    mixle::host::write_error_file(env, e.what());
    return 3;
  }
}
