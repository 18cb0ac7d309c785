// The `threads` communicator: collectives over members that are threads of this process give
// every member the same, correct bytes; a member that leaves with an error, or never arrives,
// makes the others throw CommunicationError naming it (the first at once, the second at the
// timeout) instead of hanging.
#include "comms/thread_group.hpp"

#include <mixle/error.hpp>

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace mixle::comms {
namespace {

using namespace std::chrono_literals;

/// Runs body(rank, member) on one thread per member; returns each member's error text ("" if none).
std::vector<std::string> run_group(int size, std::chrono::milliseconds timeout,
                                   const std::function<void(int, Communicator&)>& body) {
  auto members = make_thread_group(size, timeout);
  std::vector<std::string> errors(static_cast<std::size_t>(size));
  std::vector<std::thread> threads;
  for (int r = 0; r < size; ++r)
    threads.emplace_back([&, r] {
      try {
        body(r, *members[static_cast<std::size_t>(r)]);
      } catch (const std::exception& e) {
        errors[static_cast<std::size_t>(r)] = e.what();
        abandon_thread_group(*members[static_cast<std::size_t>(r)]);
      }
    });
  for (auto& t : threads) t.join();
  return errors;
}

TEST(ThreadGroup, CollectivesGiveEveryMemberTheSameCorrectBytes) {
  constexpr int W = 4;
  std::vector<std::vector<double>> sums(W), maxes(W), gathered(W), broadcasts(W);
  std::vector<std::vector<float>> fsums(W);
  std::vector<std::uint64_t> payload(W);
  std::vector<std::string> letters(W);
  std::string flags(W, '-');
  const auto errors = run_group(W, 10s, [&](int r, Communicator& c) {
    EXPECT_EQ(c.rank(), r);
    EXPECT_EQ(c.size(), W);
    EXPECT_EQ(c.type(), "threads");
    // 0.1 · (r + 1) + i: sums that depend on the order of addition in the last bits.
    std::vector<double> v(1000);
    for (std::size_t i = 0; i < v.size(); ++i) v[i] = 0.1 * (r + 1) + static_cast<double>(i) * 1e-3;
    sums[static_cast<std::size_t>(r)] = v;
    c.all_reduce_sum(std::span<double>(sums[static_cast<std::size_t>(r)]));
    maxes[static_cast<std::size_t>(r)] = {static_cast<double>(r), -static_cast<double>(r)};
    c.all_reduce_max(std::span<double>(maxes[static_cast<std::size_t>(r)]));
    fsums[static_cast<std::size_t>(r)] = {1.5f * static_cast<float>(r)};
    c.all_reduce_sum(std::span<float>(fsums[static_cast<std::size_t>(r)]));
    const std::vector<double> mine{static_cast<double>(r), 10.0 * r};
    gathered[static_cast<std::size_t>(r)].assign(2 * W, -1.0);
    c.all_gather(std::span<const double>(mine), std::span<double>(gathered[static_cast<std::size_t>(r)]));
    // One byte per member: the smallest gather still moves.
    const char letter = static_cast<char>('a' + r);
    letters[static_cast<std::size_t>(r)].assign(W, '-');
    c.all_gather(std::span<const char>(&letter, 1), std::span<char>(letters[static_cast<std::size_t>(r)]));
    broadcasts[static_cast<std::size_t>(r)] = {r == 2 ? 42.0 : 0.0, r == 2 ? 7.0 : 0.0};
    c.broadcast(std::span<double>(broadcasts[static_cast<std::size_t>(r)]), 2);
    // One byte: the smallest broadcast still moves (and none moves nothing, from no buffer).
    flags[static_cast<std::size_t>(r)] = r == 1 ? 'z' : '-';
    c.broadcast(std::span<char>(&flags[static_cast<std::size_t>(r)], 1), 1);
    c.broadcast(std::span<char>(static_cast<char*>(nullptr), 0), 1);
    c.barrier();
    payload[static_cast<std::size_t>(r)] = c.collective_bytes();
  });
  for (int r = 0; r < W; ++r) EXPECT_EQ(errors[static_cast<std::size_t>(r)], "") << "member " << r;
  for (int r = 0; r < W; ++r) {
    const auto& s = sums[static_cast<std::size_t>(r)];
    ASSERT_EQ(s.size(), 1000u);
    EXPECT_EQ(std::memcmp(s.data(), sums[0].data(), s.size() * sizeof(double)), 0) << "member " << r;
    EXPECT_NEAR(s[3], 0.1 * (1 + 2 + 3 + 4) + 4 * 3e-3, 1e-12);
    EXPECT_EQ(maxes[static_cast<std::size_t>(r)], (std::vector<double>{3.0, 0.0}));
    EXPECT_EQ(fsums[static_cast<std::size_t>(r)], (std::vector<float>{9.0f}));
    EXPECT_EQ(gathered[static_cast<std::size_t>(r)], (std::vector<double>{0, 0, 1, 10, 2, 20, 3, 30}));
    EXPECT_EQ(letters[static_cast<std::size_t>(r)], "abcd");
    EXPECT_EQ(broadcasts[static_cast<std::size_t>(r)], (std::vector<double>{42.0, 7.0}));
    EXPECT_EQ(flags[static_cast<std::size_t>(r)], 'z') << "member " << r;
    // Payload handed to collectives: the three all-reduces, the all-gathers' whole results
    // (W members × 2 doubles, W bytes), the broadcasts; the barrier carries none.
    EXPECT_EQ(payload[static_cast<std::size_t>(r)], 1000u * 8 + 2 * 8 + 4 + W * 2 * 8 + W + 2 * 8 + 1)
        << "member " << r;
  }
}

TEST(ThreadGroup, AMemberThatFailsMakesTheOthersThrowNamingItAtOnce) {
  const auto start = std::chrono::steady_clock::now();
  const auto errors = run_group(3, 30s, [&](int r, Communicator& c) {
    std::vector<double> v{1.0};
    c.all_reduce_sum(std::span<double>(v));
    if (r == 1) throw InvalidInput("member 1's own failure");
    c.all_reduce_sum(std::span<double>(v));  // members 0 and 2 wait here for member 1
  });
  EXPECT_LT(std::chrono::steady_clock::now() - start, 10s) << "the others must not wait for the 30 s timeout";
  EXPECT_EQ(errors[1], "member 1's own failure");
  for (int r : {0, 2})
    EXPECT_NE(errors[static_cast<std::size_t>(r)].find("member 1 left the group"), std::string::npos)
        << errors[static_cast<std::size_t>(r)];
}

TEST(ThreadGroup, AMemberThatNeverArrivesIsNamedAtTheTimeout) {
  const auto errors = run_group(3, 300ms, [&](int r, Communicator& c) {
    if (r == 2) {
      std::this_thread::sleep_for(1500ms);  // hung past the others' timeout
      return;
    }
    c.barrier();
  });
  for (int r : {0, 1}) {
    EXPECT_NE(errors[static_cast<std::size_t>(r)].find("timed out"), std::string::npos)
        << errors[static_cast<std::size_t>(r)];
    EXPECT_NE(errors[static_cast<std::size_t>(r)].find("member(s) 2 did not arrive"), std::string::npos)
        << errors[static_cast<std::size_t>(r)];
  }
}

// A split child that its member destroys while unwinding an error breaks at once for the
// others; one destroyed on a normal return claims no error: the member still waiting on it is
// told, at the timeout, who did not arrive.
TEST(ThreadGroup, AChildLeftOnAnErrorBreaksAtOnceAndOneLeftNormallyTimesOut) {
  for (const bool fail : {true, false}) {
    SCOPED_TRACE(fail ? "left on an error" : "left normally");
    const auto start = std::chrono::steady_clock::now();
    const auto errors = run_group(2, fail ? 30s : 300ms, [&](int r, Communicator& c) {
      const std::unique_ptr<Communicator> child = c.split(0, r);
      if (r == 1) {
        if (fail) throw InvalidInput("member 1's own failure");
        return;  // the child is destroyed here, with no error
      }
      child->barrier();
    });
    EXPECT_LT(std::chrono::steady_clock::now() - start, 10s);
    if (fail) {
      EXPECT_NE(errors[0].find("member 1 left the group with an error"), std::string::npos) << errors[0];
    } else {
      EXPECT_EQ(errors[1], "");
      EXPECT_NE(errors[0].find("member(s) 1 did not arrive"), std::string::npos) << errors[0];
    }
  }
}

TEST(ThreadGroup, SplitFormsRowAndColumnGroupsOfThreads) {
  // 4 members as a 2 × 2 mesh: rows {0, 1}, {2, 3} (color r / 2) and columns {0, 2}, {1, 3}
  // (color r % 2, keys reversed so the higher member ranks first).
  constexpr int W = 4;
  std::vector<std::vector<double>> row_sum(W), col_gather(W);
  std::vector<int> row_rank(W), col_rank(W), col_world(W);
  const auto errors = run_group(W, 10s, [&](int r, Communicator& c) {
    auto row = c.split(r / 2, r);
    auto col = c.split(r % 2, -r);
    row_rank[static_cast<std::size_t>(r)] = row->rank();
    col_rank[static_cast<std::size_t>(r)] = col->rank();
    col_world[static_cast<std::size_t>(r)] = col->world_rank(0);
    EXPECT_EQ(row->size(), 2);
    EXPECT_EQ(col->size(), 2);
    row_sum[static_cast<std::size_t>(r)] = {static_cast<double>(r)};
    row->all_reduce_sum(std::span<double>(row_sum[static_cast<std::size_t>(r)]));
    const std::vector<double> mine{static_cast<double>(r)};
    col_gather[static_cast<std::size_t>(r)].assign(2, -1.0);
    col->all_gather(std::span<const double>(mine), std::span<double>(col_gather[static_cast<std::size_t>(r)]));
    std::vector<double> all{1.0};
    c.all_reduce_sum(std::span<double>(all));  // the parent still works between and after
    EXPECT_EQ(all[0], 4.0);
  });
  for (int r = 0; r < W; ++r) EXPECT_EQ(errors[static_cast<std::size_t>(r)], "") << "member " << r;
  EXPECT_EQ(row_rank, (std::vector<int>{0, 1, 0, 1}));
  EXPECT_EQ(col_rank, (std::vector<int>{1, 1, 0, 0}));
  EXPECT_EQ(col_world, (std::vector<int>{2, 3, 2, 3}));
  EXPECT_EQ(row_sum, (std::vector<std::vector<double>>{{1}, {1}, {5}, {5}}));
  EXPECT_EQ(col_gather, (std::vector<std::vector<double>>{{2, 0}, {3, 1}, {2, 0}, {3, 1}}));
}

TEST(ThreadGroup, RejectsAnEmptyGroupAndANonPositiveTimeout) {
  EXPECT_THROW(make_thread_group(0, 1s), InvalidInput);
  for (auto timeout : {0ms, -5ms}) {
    try {
      make_thread_group(2, timeout);
      ADD_FAILURE() << "timeout " << timeout.count() << " ms accepted";
    } catch (const InvalidInput& e) {
      EXPECT_NE(std::string(e.what()).find("timeout " + std::to_string(timeout.count()) + " ms: must be positive"),
                std::string::npos)
          << e.what();
    }
  }
  EXPECT_EQ(make_thread_group(2, 1ms).size(), 2u);
}

}  // namespace
}  // namespace mixle::comms
