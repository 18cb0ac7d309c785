// Failures carried through collectives (engine/error_marks.hpp): when one rank of a data-parallel
// E-step fails, every other rank's error names it *and* quotes its reason — a launcher that stops
// the group at the first exit may leave only one rank's message on screen. Runs the real
// distributed handle on two threads of this process (the `threads` communicator).
#include "comms/thread_group.hpp"
#include "engine/compute.hpp"
#include "engine/distributed_handle.hpp"

#include <mixle/error.hpp>
#include <mixle/model.hpp>

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>
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
  auto members = comms::make_thread_group(2, 30s);
  std::vector<std::string> errors(2);
  std::vector<std::thread> threads;
  for (int r = 0; r < 2; ++r)
    threads.emplace_back([&, r] {
      try {
        engine::DistributedEncodedData handle(all.slice(256 * r, 256 * (r + 1)), all.rows(), 256 * r,
                                              *members[static_cast<std::size_t>(r)], engine::make_cpu_compute(1));
        handle.stream_accumulate(model, engine::EstimatorOptions{});
      } catch (const std::exception& e) {
        errors[static_cast<std::size_t>(r)] = e.what();
      }
    });
  for (auto& t : threads) t.join();
  EXPECT_NE(errors[1].find("rows 300"), std::string::npos) << errors[1];
  EXPECT_NE(errors[0].find("failed on rank 1 (rank 1: "), std::string::npos) << errors[0];
  EXPECT_NE(errors[0].find("rows 300"), std::string::npos) << errors[0];
}

}  // namespace
}  // namespace mixle
