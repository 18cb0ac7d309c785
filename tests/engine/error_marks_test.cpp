// Failures carried through collectives (engine/error_marks.hpp): when one rank of a data-parallel
// E-step fails, every other rank's error names it *and* quotes its reason — a launcher that stops
// the group at the first exit may leave only one rank's message on screen. Runs the real
// distributed handle on two threads of this process (the `threads` communicator).
#include "common/thread_ranks.hpp"
#include "comms/thread_group.hpp"
#include "engine/compute.hpp"
#include "engine/distributed_handle.hpp"
#include "engine/error_marks.hpp"

#include <mixle/error.hpp>
#include <mixle/model.hpp>

#include <gtest/gtest.h>

#include <chrono>
#include <exception>
#include <functional>
#include <new>
#include <span>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

namespace mixle {
namespace {

using namespace std::chrono_literals;

TEST(ErrorMarks, TheOtherRanksQuoteTheFailingRanksReason) {
  const Model model = model_from_json(R"({"format":"mixle-model","version":1,"weights":[0.5,0.5],"parts":[
      {"family":"categorical","columns":[0,1],"categories":3,"prob":[[0.5,0.5,0],[0.2,0.8,0]]}]})");
  // 512 rows, half per rank; row 300 (rank 1's) has category 2: impossible under the model.
  std::vector<double> values(512);
  for (std::size_t i = 0; i < values.size(); ++i) values[i] = static_cast<double>(i % 2);
  values[300] = 2.0;
  const Dataset all = Dataset::from_vector(values, values.size(), 1);
  std::vector<std::string> errors(2);
  std::vector<std::vector<std::size_t>> rows(2);
  const std::vector<std::string> others = test::on_thread_ranks(2, [&](std::size_t r, comms::Communicator& comm) {
    engine::DistributedEncodedData handle(all.slice(256 * r, 256 * (r + 1)), all.rows(), 256 * r, comm,
                                          engine::make_cpu_compute(1));
    try {
      handle.stream_accumulate(model, engine::EstimatorOptions{});
    } catch (const ImpossibleEvidence& e) {
      errors[r] = e.what();
      rows[r] = e.rows();
    }
  });
  EXPECT_EQ(others, (std::vector<std::string>{"", ""})) << "an error other than ImpossibleEvidence";
  EXPECT_NE(errors[1].find("rows 300"), std::string::npos) << errors[1];
  EXPECT_NE(errors[0].find("failed on rank 1 (rank 1: "), std::string::npos) << errors[0];
  EXPECT_NE(errors[0].find("rows 300"), std::string::npos) << errors[0];
  // The same type on both ranks, with the rows it names (global indices).
  EXPECT_EQ(rows[0], std::vector<std::size_t>{300});
  EXPECT_EQ(rows[1], std::vector<std::size_t>{300});
}

/// Rank `failing` of `size` fails with `failure`; raise_marks on every rank. Returns each rank's
/// exception.
std::vector<std::exception_ptr> raise_in_group(int size, int failing, const std::function<void()>& failure) {
  auto members = comms::make_thread_group(size, 30s);
  std::vector<std::exception_ptr> raised(static_cast<std::size_t>(size));
  std::vector<std::thread> threads;
  for (int r = 0; r < size; ++r)
    threads.emplace_back([&, r] {
      comms::Communicator& comm = *members[static_cast<std::size_t>(r)];
      std::exception_ptr error;
      if (r == failing) try {
          failure();
        } catch (...) {
          error = std::current_exception();
        }
      std::vector<double> mark{engine::error_mark(error, r)};
      try {
        comm.all_reduce_sum(std::span<double>(mark));
        engine::raise_marks(mark[0], error, comm, "the test step");
      } catch (...) {
        raised[static_cast<std::size_t>(r)] = std::current_exception();
      }
    });
  for (auto& t : threads) t.join();
  return raised;
}

/// Rank 1 of 3 fails with `failure`.
std::vector<std::exception_ptr> raise_on_three(const std::function<void()>& failure) {
  return raise_in_group(3, 1, failure);
}

std::string message_of(const std::exception_ptr& e) {
  try {
    std::rethrow_exception(e);
  } catch (const std::exception& got) {
    return got.what();
  }
}

// Marks are powers of two in a double: up to 52 ranks each failing rank is named; beyond, the
// marks cannot tell ranks apart and the message says "some rank".
TEST(ErrorMarks, FiftyTwoRanksNameTheFailingRankAndMoreSaySomeRank) {
  const auto named = raise_in_group(52, 51, [] { throw InvalidInput("row 5: NaN"); });
  EXPECT_NE(message_of(named[0]).find("failed on rank 51"), std::string::npos) << message_of(named[0]);
  const auto unnamed = raise_in_group(53, 52, [] { throw InvalidInput("row 5: NaN"); });
  EXPECT_NE(message_of(unnamed[0]).find("some rank"), std::string::npos) << message_of(unnamed[0]);
}

/// Rethrows `e` and expects type E on it, with the failing rank named in the message.
template <class E>
E expect_type(const std::exception_ptr& e, int rank) {
  EXPECT_TRUE(e) << "rank " << rank << " raised nothing";
  try {
    std::rethrow_exception(e);
  } catch (const E& got) {
    if (rank != 1)
      EXPECT_NE(std::string(got.what()).find("the test step failed on rank 1 (rank 1: "), std::string::npos)
          << got.what();
    return got;
  } catch (const std::exception& other) {
    ADD_FAILURE() << "rank " << rank << ": wrong type: " << other.what();
  }
  return E("");
}

TEST(ErrorMarks, EveryRankRaisesTheFailingRanksErrorType) {
  auto device = raise_on_three([] { throw DeviceError("CUDA error: an illegal memory access"); });
  for (int r = 0; r < 3; ++r) {
    const DeviceError e = expect_type<DeviceError>(device[static_cast<std::size_t>(r)], r);
    EXPECT_NE(std::string(e.what()).find("illegal memory access"), std::string::npos) << e.what();
  }
  auto memory = raise_on_three([] { throw MemoryError("needs 5 GiB, 4 GiB free"); });
  for (int r = 0; r < 3; ++r) expect_type<MemoryError>(memory[static_cast<std::size_t>(r)], r);
  auto communication = raise_on_three([] { throw CommunicationError("rank 7 lost"); });
  for (int r = 0; r < 3; ++r) expect_type<CommunicationError>(communication[static_cast<std::size_t>(r)], r);
  auto invalid = raise_on_three([] { throw InvalidInput("row 3: NaN"); });
  for (int r = 0; r < 3; ++r) expect_type<InvalidInput>(invalid[static_cast<std::size_t>(r)], r);
  auto usage = raise_on_three([] { throw UsageError("--shard-components -1"); });
  for (int r = 0; r < 3; ++r) expect_type<UsageError>(usage[static_cast<std::size_t>(r)], r);
  auto unrealized = raise_on_three([] { throw UnrealizedModelPlacement("no shard fits"); });
  for (int r = 0; r < 3; ++r) expect_type<UnrealizedModelPlacement>(unrealized[static_cast<std::size_t>(r)], r);
  auto conflict = raise_on_three([] { throw EncodedDataControlConflict("threads with a handle"); });
  for (int r = 0; r < 3; ++r) expect_type<EncodedDataControlConflict>(conflict[static_cast<std::size_t>(r)], r);

  auto impossible = raise_on_three([] { throw ImpossibleEvidence("rows 12, 99", {12, 99}); });
  for (int r = 0; r < 3; ++r) {
    const ImpossibleEvidence e = expect_type<ImpossibleEvidence>(impossible[static_cast<std::size_t>(r)], r);
    EXPECT_EQ(e.rows(), (std::vector<std::size_t>{12, 99})) << "rank " << r;
  }
  // The other ranks get the first 16 rows an error lists (the kernels list at most 8).
  std::vector<std::size_t> twenty(20);
  for (std::size_t i = 0; i < twenty.size(); ++i) twenty[i] = 100 + i;
  auto many = raise_on_three([&] { throw ImpossibleEvidence("20 rows", twenty); });
  for (int r = 0; r < 3; ++r) {
    const ImpossibleEvidence e = expect_type<ImpossibleEvidence>(many[static_cast<std::size_t>(r)], r);
    EXPECT_EQ(e.rows(), r == 1 ? twenty : std::vector<std::size_t>(twenty.begin(), twenty.begin() + 16)) << r;
  }
  auto missing = raise_on_three([] { throw NotCompiled("nccl"); });
  for (int r = 0; r < 3; ++r) {
    try {
      std::rethrow_exception(missing[static_cast<std::size_t>(r)]);
    } catch (const NotCompiled& e) {
      EXPECT_EQ(e.feature(), "nccl") << "rank " << r;
    } catch (...) {
      ADD_FAILURE() << "rank " << r << ": not NotCompiled";
    }
  }
  // An exception from outside mixle: mixle::Error on the others — not a claim about the input.
  auto foreign = raise_on_three([] { throw std::bad_alloc(); });
  for (int r : {0, 2}) {
    try {
      std::rethrow_exception(foreign[static_cast<std::size_t>(r)]);
    } catch (const InvalidInput& e) {
      ADD_FAILURE() << "rank " << r << ": InvalidInput for a std::bad_alloc: " << e.what();
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("failed on rank 1"), std::string::npos) << e.what();
    } catch (...) {
      ADD_FAILURE() << "rank " << r << ": not a mixle::Error";
    }
  }
}

TEST(ErrorMarks, AllReduceWithMarksSumsTheValuesOrRaisesOnEveryRank) {
  auto members = comms::make_thread_group(3, 30s);
  // Each rank fills two values; rank `failing` (−1: none) throws after filling them. `custom`
  // sums through a given all-reduce, which sees the mark as the last value.
  auto run = [&](int failing, bool custom) {
    std::vector<std::vector<double>> sums(3);
    std::vector<std::string> errors(3);
    std::vector<int> failed_here(3, -1);
    std::vector<std::thread> threads;
    for (int r = 0; r < 3; ++r)
      threads.emplace_back([&, r] {
        const auto i = static_cast<std::size_t>(r);
        comms::Communicator& comm = *members[i];
        std::vector<double> values{0.0, 0.0};
        engine::MarkedAllReduce reduce;
        if (custom)
          reduce = [&](std::vector<double>& marked, bool here) {
            failed_here[i] = here;
            sums[i].push_back(static_cast<double>(marked.size()));
            comm.all_reduce_sum(std::span<double>(marked));
          };
        try {
          engine::all_reduce_with_marks(
              comm, values,
              [&] {
                values = {1.0 + r, 10.0 * r};
                if (r == failing) throw InvalidInput("rank's own reason");
              },
              "the test", reduce);
          sums[i].insert(sums[i].end(), values.begin(), values.end());
        } catch (const InvalidInput& e) {
          errors[i] = e.what();
        }
      });
    for (auto& t : threads) t.join();
    return std::tuple{sums, errors, failed_here};
  };
  for (bool custom : {false, true}) {
    auto [sums, errors, here] = run(-1, custom);
    for (std::size_t r = 0; r < 3; ++r) {
      EXPECT_EQ(errors[r], "");
      // The values come back summed and at their own length; a given all-reduce got the mark too.
      EXPECT_EQ(sums[r], custom ? std::vector<double>({3.0, 6.0, 30.0}) : std::vector<double>({6.0, 30.0}));
      if (custom) EXPECT_EQ(here[r], 0);
    }
    for (int failing : {0, 2}) {  // rank 0 too: the lowest failing rank broadcasts, whichever it is
      std::tie(sums, errors, here) = run(failing, custom);
      for (std::size_t r = 0; r < 3; ++r) {
        EXPECT_NE(errors[r].find("rank's own reason"), std::string::npos) << r << ": " << errors[r];
        if (static_cast<int>(r) != failing)
          EXPECT_NE(errors[r].find("failed on rank " + std::to_string(failing)), std::string::npos) << errors[r];
        if (custom) EXPECT_EQ(here[r], static_cast<int>(r) == failing ? 1 : 0);
      }
    }
  }
}
}  // namespace
}  // namespace mixle
