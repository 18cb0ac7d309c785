// Launch-environment detection (torchrun → OpenMPI/PMIx → SLURM → single), the store-port rule,
// --comm resolution and the torchelastic error file.
#include "common/require.hpp"
#include "comms/comm_type.hpp"
#include "host/launch_env.hpp"
#include "comms/socket.hpp"

#include <mixle/error.hpp>

#include <gtest/gtest.h>

#include <fcntl.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace mixle::host {
namespace {

EnvLookup fake(std::map<std::string, std::string> vars) {
  return [vars = std::move(vars)](const std::string& k) -> std::optional<std::string> {
    auto it = vars.find(k);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

// What torchrun 1.13 sets for worker 1 of 2 with the static rendezvous (recorded from a real run).
std::map<std::string, std::string> torchrun_vars() {
  return {{"RANK", "1"},
          {"LOCAL_RANK", "1"},
          {"WORLD_SIZE", "2"},
          {"LOCAL_WORLD_SIZE", "2"},
          {"GROUP_RANK", "0"},
          {"MASTER_ADDR", "127.0.0.1"},
          {"MASTER_PORT", "29500"},
          {"TORCHELASTIC_RESTART_COUNT", "0"},
          {"TORCHELASTIC_RUN_ID", "none"},
          {"TORCHELASTIC_USE_AGENT_STORE", "True"},
          {"TORCHELASTIC_ERROR_FILE", "/tmp/x/error.json"}};
}

TEST(LaunchEnv, NoLauncherIsSingle) {
  LaunchEnv e = detect_launch_env(fake({}));
  EXPECT_EQ(e.launcher, Launcher::single);
  EXPECT_EQ(e.rank, 0);
  EXPECT_EQ(e.world_size, 1);
  EXPECT_EQ(e.run_token, "none");  // no launcher's job id to keep runs apart
  EXPECT_EQ(e.master_port, 0);
  EXPECT_EQ(e.store_port, 0);
  EXPECT_EQ(resolve_comm("auto", e, false), "single");
  // Without MASTER_PORT there is no store port, even when an agent would own MASTER_PORT.
  EXPECT_EQ(detect_launch_env(fake({{"TORCHELASTIC_USE_AGENT_STORE", "True"}})).store_port, 0);
}

// Only RANK and WORLD_SIZE are required: a launcher that sets no LOCAL_* or GROUP_RANK (a script
// of the user's own) runs one rank per node, each node's rank 0 on its first device.
TEST(LaunchEnv, TorchrunVariablesLeftOutTakeTheirDefaults) {
  const LaunchEnv e = detect_launch_env(fake({{"RANK", "3"}, {"WORLD_SIZE", "4"}}));
  EXPECT_EQ(e.launcher, Launcher::torchrun);
  EXPECT_EQ(e.rank, 3);
  EXPECT_EQ(e.world_size, 4);
  EXPECT_EQ(e.local_rank, 0);
  EXPECT_EQ(e.local_world_size, 1);
  EXPECT_EQ(e.node_rank, 0);
}

// Each launcher has the name messages and receipts show (what `mixle fit` prints as "launcher").
TEST(LaunchEnv, LaunchersAreNamed) {
  EXPECT_EQ(to_string(Launcher::torchrun), "torchrun");
  EXPECT_EQ(to_string(Launcher::mpi), "mpi");
  EXPECT_EQ(to_string(Launcher::slurm), "slurm");
  EXPECT_EQ(to_string(Launcher::single), "single");
  EXPECT_EQ(to_string(detect_launch_env(fake({{"OMPI_COMM_WORLD_SIZE", "2"}, {"OMPI_COMM_WORLD_RANK", "1"}})).launcher),
            "mpi");
}

// A local rank must lie in [0, local world size), whichever bound it breaks.
TEST(LaunchEnv, LocalRankRules) {
  for (const auto& [local_rank, local_size] : {std::pair{"-1", "2"}, std::pair{"2", "2"}, std::pair{"0", "0"}}) {
    auto vars = torchrun_vars();
    vars["LOCAL_RANK"] = local_rank;
    vars["LOCAL_WORLD_SIZE"] = local_size;
    try {
      detect_launch_env(fake(vars));
      ADD_FAILURE() << "LOCAL_RANK=" << local_rank << " LOCAL_WORLD_SIZE=" << local_size << " accepted";
    } catch (const InvalidInput& e) {
      EXPECT_NE(
          std::string(e.what()).find(std::string("local rank ") + local_rank + " is not in [0, " + local_size + ")"),
          std::string::npos)
          << e.what();
    }
  }
}

// srun --mpi=pmix (or another PMIx launcher): the rank from PMIX_RANK, the size from
// SLURM_NTASKS or, without it, OMPI_UNIVERSE_SIZE; either set but empty is named.
// "cuda" and "auto" take LOCAL_RANK's GPU (the only one when a process sees one); any other
// device, or any device without a visible GPU, stays as given.
TEST(LaunchEnv, ARanksDeviceFollowsItsLocalRank) {
  EXPECT_EQ(rank_device("cuda", 1, 2), "cuda:1");
  EXPECT_EQ(rank_device("auto", 0, 2), "cuda:0");
  EXPECT_EQ(rank_device("auto", 3, 1), "cuda:0") << "a process bound to one GPU";
  EXPECT_EQ(rank_device("cuda:1", 0, 2), "cuda:1");
  EXPECT_EQ(rank_device("cpu", 1, 2), "cpu");
  EXPECT_EQ(rank_device("cuda", 0, 0), "cuda");
  EXPECT_EQ(rank_device("auto", 0, 0), "auto");
  EXPECT_THROW(rank_device("cuda", 2, 2), InvalidInput) << "more ranks on the node than GPUs";
}

TEST(LaunchEnv, PmixVariables) {
  LaunchEnv e = detect_launch_env(fake({{"PMIX_RANK", "2"},
                                        {"SLURM_NTASKS", "3"},
                                        {"SLURM_LOCALID", "0"},
                                        {"SLURM_TASKS_PER_NODE", "1(x3)"},
                                        {"SLURM_NODEID", "2"}}));
  EXPECT_EQ(e.launcher, Launcher::mpi);
  EXPECT_EQ(e.rank, 2);
  EXPECT_EQ(e.world_size, 3);
  EXPECT_EQ(e.node_rank, 2);
  e = detect_launch_env(fake({{"PMIX_RANK", "1"}, {"OMPI_UNIVERSE_SIZE", "4"}}));
  EXPECT_EQ(e.launcher, Launcher::mpi);
  EXPECT_EQ(e.world_size, 4);
  for (const char* name : {"SLURM_NTASKS", "OMPI_UNIVERSE_SIZE"}) {
    try {
      detect_launch_env(fake({{"PMIX_RANK", "0"}, {name, ""}}));
      ADD_FAILURE() << name << "='' accepted";
    } catch (const InvalidInput& e) {
      EXPECT_NE(std::string(e.what()).find(std::string("environment variable ") + name + " is set but empty"),
                std::string::npos)
          << e.what();
    }
  }
}

TEST(LaunchEnv, TorchrunWithAgentStoreMovesOurStoreOnePortUp) {
  LaunchEnv e = detect_launch_env(fake(torchrun_vars()));
  EXPECT_EQ(e.launcher, Launcher::torchrun);
  EXPECT_EQ(e.rank, 1);
  EXPECT_EQ(e.world_size, 2);
  EXPECT_EQ(e.local_rank, 1);
  EXPECT_EQ(e.local_world_size, 2);
  EXPECT_EQ(e.master_addr, "127.0.0.1");
  EXPECT_EQ(e.master_port, 29500);
  EXPECT_TRUE(e.agent_store);
  EXPECT_EQ(e.store_port, 29501);  // the agent owns 29500
  EXPECT_EQ(e.run_token, "none");
  EXPECT_EQ(e.error_file, "/tmp/x/error.json");
}

TEST(LaunchEnv, StorePortRules) {
  auto vars = torchrun_vars();
  vars["TORCHELASTIC_USE_AGENT_STORE"] = "False";  // c10d/standalone on torch ≤ 2.3: rank 0 binds it
  EXPECT_EQ(detect_launch_env(fake(vars)).store_port, 29500);
  vars["TORCHELASTIC_USE_AGENT_STORE"] = "true";  // only Python's exact "True" counts
  EXPECT_EQ(detect_launch_env(fake(vars)).store_port, 29500);
  vars["MIXLE_STORE_PORT"] = "31000";
  EXPECT_EQ(detect_launch_env(fake(vars)).store_port, 31000);
  // Both ports may be the last one.
  vars["MIXLE_STORE_PORT"] = "65535";
  vars["MASTER_PORT"] = "65535";
  EXPECT_EQ(detect_launch_env(fake(vars)).store_port, 65535);
  EXPECT_EQ(detect_launch_env(fake(vars)).master_port, 65535);
  // The agent's store on the last port leaves ours none: refused, naming both.
  vars.erase("MIXLE_STORE_PORT");
  vars["MASTER_PORT"] = "65535";
  vars["TORCHELASTIC_USE_AGENT_STORE"] = "True";
  try {
    detect_launch_env(fake(vars));
    ADD_FAILURE() << "a store port of 65536 accepted";
  } catch (const InvalidInput& e) {
    EXPECT_NE(std::string(e.what()).find("port 65535/65536 is not in [0, 65535]"), std::string::npos) << e.what();
  }
  // Each port is checked on its own: a master port past the last is refused beside a valid store
  // port, and a valid master port beside a negative store port.
  for (const auto& [master, store] : {std::pair{"70000", "31000"}, std::pair{"29500", "-2"}}) {
    vars["MASTER_PORT"] = master;
    vars["MIXLE_STORE_PORT"] = store;
    const std::string both = std::string("port ") + master + "/" + store + " is not in [0, 65535]";
    try {
      detect_launch_env(fake(vars));
      ADD_FAILURE() << both << " accepted";
    } catch (const InvalidInput& e) {
      EXPECT_NE(std::string(e.what()).find(both), std::string::npos) << e.what();
    }
  }
}

// A launcher's rank and world size are set or absent, never empty: an empty one is named.
TEST(LaunchEnv, AnEmptyRankOrWorldSizeIsNamed) {
  for (const char* name : {"RANK", "WORLD_SIZE"}) {
    auto vars = torchrun_vars();
    vars[name] = "";
    try {
      detect_launch_env(fake(vars));
      ADD_FAILURE() << name << "='' accepted";
    } catch (const InvalidInput& e) {
      EXPECT_NE(std::string(e.what()).find(std::string("environment variable ") + name + " is set but empty"),
                std::string::npos)
          << e.what();
    }
  }
}

TEST(LaunchEnv, RunTokenPrefersMixleRunToken) {
  auto vars = torchrun_vars();
  vars["TORCHELASTIC_RUN_ID"] = "abc";
  EXPECT_EQ(detect_launch_env(fake(vars)).run_token, "abc");
  vars["MIXLE_RUN_TOKEN"] = "secret";
  EXPECT_EQ(detect_launch_env(fake(vars)).run_token, "secret");
}

TEST(LaunchEnv, OpenMpiVariables) {
  LaunchEnv e = detect_launch_env(fake({{"OMPI_COMM_WORLD_RANK", "3"},
                                        {"OMPI_COMM_WORLD_SIZE", "4"},
                                        {"OMPI_COMM_WORLD_LOCAL_RANK", "1"},
                                        {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"},
                                        {"PMIX_RANK", "3"}}));
  EXPECT_EQ(e.launcher, Launcher::mpi);
  EXPECT_EQ(e.rank, 3);
  EXPECT_EQ(e.world_size, 4);
  EXPECT_EQ(e.local_rank, 1);
  EXPECT_EQ(e.local_world_size, 2);
  if (comms::find_comm_type("mpi")->built) EXPECT_EQ(resolve_comm("auto", e, false), "mpi");
  // Without the local variables (a launcher that sets only rank and size): one process per node.
  e = detect_launch_env(fake({{"OMPI_COMM_WORLD_RANK", "0"}, {"OMPI_COMM_WORLD_SIZE", "2"}}));
  EXPECT_EQ(e.local_rank, 0);
  EXPECT_EQ(e.local_world_size, 1);
}

TEST(LaunchEnv, TorchrunVariablesWinOverMpiAndSlurm) {
  auto vars = torchrun_vars();
  vars["OMPI_COMM_WORLD_RANK"] = "0";
  vars["OMPI_COMM_WORLD_SIZE"] = "1";
  vars["SLURM_PROCID"] = "0";
  vars["SLURM_NTASKS"] = "1";
  EXPECT_EQ(detect_launch_env(fake(vars)).launcher, Launcher::torchrun);
}

TEST(LaunchEnv, SlurmVariables) {
  LaunchEnv e = detect_launch_env(fake({{"SLURM_PROCID", "5"},
                                        {"SLURM_NTASKS", "8"},
                                        {"SLURM_LOCALID", "1"},
                                        {"SLURM_TASKS_PER_NODE", "4(x2)"},
                                        {"SLURM_NODEID", "1"},
                                        {"SLURM_JOB_ID", "777"},
                                        {"SLURM_STEP_ID", "2"},
                                        {"MASTER_ADDR", "node001"},
                                        {"MASTER_PORT", "29600"}}));
  EXPECT_EQ(e.launcher, Launcher::slurm);
  EXPECT_EQ(e.rank, 5);
  EXPECT_EQ(e.world_size, 8);
  EXPECT_EQ(e.local_world_size, 4);
  EXPECT_EQ(e.node_rank, 1);
  EXPECT_EQ(e.run_token, "slurm-777.2");
  EXPECT_EQ(e.store_port, 29600);
  if (comms::find_comm_type("gloo")->built) EXPECT_EQ(resolve_comm("auto", e, false), "gloo");
}

/// detect_launch_env on `vars` throws InvalidInput whose message holds every fragment.
void expect_launch_refusal(const std::map<std::string, std::string>& vars, const std::vector<std::string>& fragments);

// Under srun a rank's node-local world size is its own node's entry of SLURM_TASKS_PER_NODE, not
// the first node's: the layout "2(x3),1" puts one task on node 3. PMIx under SLURM reads it alike.
TEST(LaunchEnv, SlurmLocalWorldSizeIsThisNodesCount) {
  std::map<std::string, std::string> vars{
      {"SLURM_PROCID", "6"}, {"SLURM_NTASKS", "7"},      {"SLURM_LOCALID", "0"},  {"SLURM_TASKS_PER_NODE", "2(x3),1"},
      {"SLURM_NODEID", "3"}, {"MASTER_ADDR", "node001"}, {"MASTER_PORT", "29600"}};
  EXPECT_EQ(detect_launch_env(fake(vars)).local_world_size, 1);
  vars["SLURM_NODEID"] = "2";
  vars["SLURM_PROCID"] = "5";
  vars["SLURM_LOCALID"] = "1";
  EXPECT_EQ(detect_launch_env(fake(vars)).local_world_size, 2);
  auto pmix = vars;
  pmix["PMIX_RANK"] = "5";
  const LaunchEnv e = detect_launch_env(fake(pmix));
  EXPECT_EQ(e.launcher, Launcher::mpi);
  EXPECT_EQ(e.local_world_size, 2);
  pmix["SLURM_NODEID"] = "3";
  pmix["PMIX_RANK"] = "6";
  pmix["SLURM_LOCALID"] = "0";
  EXPECT_EQ(detect_launch_env(fake(pmix)).local_world_size, 1);
  // A node past the layout, and a layout SLURM never writes, are refused naming the variables.
  vars["SLURM_NODEID"] = "4";
  expect_launch_refusal(vars, {"SLURM_NODEID=4 names no node of SLURM_TASKS_PER_NODE='2(x3),1' (4 nodes"});
  vars["SLURM_NODEID"] = "-1";
  expect_launch_refusal(vars, {"SLURM_NODEID=-1 names no node"});
  vars["SLURM_NODEID"] = "0";
  vars["SLURM_PROCID"] = "0";
  vars["SLURM_LOCALID"] = "0";
  const std::pair<const char*, const char*> refusals[] = {
      {"2x", "SLURM_TASKS_PER_NODE='2x' is not understood"},
      {"2(x3", "SLURM_TASKS_PER_NODE='2(x3' is not understood"},
      {"0", "SLURM_TASKS_PER_NODE=0 is out of range"},
      {"2(x0)", "SLURM_TASKS_PER_NODE=0 is out of range"},
      {"4294967297", "SLURM_TASKS_PER_NODE='4294967297' gives node 0 4294967297 tasks; accepted: counts below 2^31"}};
  for (const auto& [bad, words] : refusals) {
    vars["SLURM_TASKS_PER_NODE"] = bad;
    expect_launch_refusal(vars, {words});
  }
  vars["SLURM_TASKS_PER_NODE"] = "2147483647";  // 2^31 − 1, the largest count an int holds
  EXPECT_EQ(detect_launch_env(fake(vars)).local_world_size, 2147483647);
  vars["SLURM_TASKS_PER_NODE"] = "";
  EXPECT_EQ(detect_launch_env(fake(vars)).local_world_size, 1) << "unset or empty: one task a node";
}

/// detect_launch_env on `vars` throws InvalidInput whose message holds every fragment.
void expect_launch_refusal(const std::map<std::string, std::string>& vars, const std::vector<std::string>& fragments) {
  try {
    detect_launch_env(fake(vars));
    ADD_FAILURE() << "accepted";
  } catch (const InvalidInput& e) {
    for (const std::string& f : fragments) EXPECT_NE(std::string(e.what()).find(f), std::string::npos) << e.what();
  }
}

TEST(LaunchEnv, MalformedValuesNameTheVariable) {
  auto vars = torchrun_vars();
  vars["RANK"] = "one";
  try {
    detect_launch_env(fake(vars));
    FAIL();
  } catch (const InvalidInput& e) {
    EXPECT_NE(std::string(e.what()).find("RANK='one'"), std::string::npos) << e.what();
  }
  // Trailing text, a fraction and a value past 32 bits are no integer a launcher sets either.
  for (const char* bad : {"1x", "1.0", "4294967297"}) {
    vars["RANK"] = bad;
    expect_launch_refusal(vars, {std::string("environment variable RANK='") + bad + "' is not an integer",
                                 "accepted: a whole number below 2^31"});
  }
  // The 32-bit range's ends: -2^31 is read (and then refused as a rank), one less is not a value.
  vars["RANK"] = "-2147483648";
  expect_launch_refusal(vars, {"launch environment (torchrun): rank -2147483648 is not in [0, 2)"});
  vars["RANK"] = "-2147483649";
  expect_launch_refusal(vars, {"environment variable RANK='-2147483649' is not an integer"});
  vars["RANK"] = "2";  // ≥ WORLD_SIZE
  expect_launch_refusal(vars, {"launch environment (torchrun): rank 2 is not in [0, 2)"});
  vars["RANK"] = "0";
  vars["MASTER_PORT"] = "70000";
  expect_launch_refusal(vars, {"port 70000/", "is not in [0, 65535]"});
}

TEST(LaunchEnv, ExplicitCommChoices) {
  LaunchEnv e = detect_launch_env(fake(torchrun_vars()));
  EXPECT_THROW(resolve_comm("single", e, false), UsageError);  // 2 ranks
  EXPECT_THROW(resolve_comm("carrier-pigeon", e, false), UsageError);
  if (comms::find_comm_type("mpi")->built) {
    EXPECT_THROW(resolve_comm("mpi", e, false), UsageError);
    // One torchrun rank alone is a whole MPI world (a singleton): mpi is not refused there.
    auto alone = torchrun_vars();
    alone["RANK"] = alone["LOCAL_RANK"] = "0";
    alone["WORLD_SIZE"] = alone["LOCAL_WORLD_SIZE"] = "1";
    const LaunchEnv single = detect_launch_env(fake(alone));
    ASSERT_EQ(single.launcher, Launcher::torchrun);
    EXPECT_EQ(resolve_comm("mpi", single, false), "mpi");
  }
  if (comms::find_comm_type("gloo")->built) EXPECT_EQ(resolve_comm("gloo", e, false), "gloo");
  LaunchEnv one = detect_launch_env(fake({}));
  EXPECT_EQ(resolve_comm("single", one, false), "single");
  if (!comms::find_comm_type("nccl")->built) {
    EXPECT_THROW(resolve_comm("nccl", e, true), NotCompiled);
    if (comms::find_comm_type("gloo")->built) EXPECT_EQ(resolve_comm("auto", e, true), "gloo");
  } else {
    EXPECT_EQ(resolve_comm("auto", e, true), "nccl");
  }
}

TEST(LaunchEnv, GlooWithoutMasterAddressIsExplained) {
  LaunchEnv e = detect_launch_env(fake({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "2"}}));
  MIXLE_SKIP_UNLESS_BUILT_WITH(comms::find_comm_type("gloo")->built, "gloo");
  try {
    communicator_from_env(e, "gloo", std::chrono::seconds(1));
    FAIL();
  } catch (const InvalidInput& err) {
    EXPECT_NE(std::string(err.what()).find("MASTER_ADDR"), std::string::npos) << err.what();
  }
}

// Port 1 is a port: with it and an address, the communicator goes on to the rendezvous (here a
// client of rank 1 that finds no store and times out) instead of asking for MASTER_PORT.
TEST(LaunchEnv, AnyPortFromOneIsARendezvousPort) {
  LaunchEnv e = detect_launch_env(
      fake({{"SLURM_PROCID", "1"}, {"SLURM_NTASKS", "2"}, {"MASTER_ADDR", "127.0.0.1"}, {"MASTER_PORT", "1"}}));
  EXPECT_EQ(e.store_port, 1);
  MIXLE_SKIP_UNLESS_BUILT_WITH(comms::find_comm_type("gloo")->built, "gloo");
  try {
    communicator_from_env(e, "gloo", std::chrono::milliseconds(200));
    FAIL() << "a store on port 1 was reached";
  } catch (const std::exception& err) {
    EXPECT_EQ(std::string(err.what()).find("needs MASTER_ADDR and MASTER_PORT"), std::string::npos) << err.what();
  }
}

// MASTER_PORT 0 is a port to pick only for rank 0, and only with a callback to publish it; an
// address is needed in every case. Rank 0 with a fixed port does not call the callback.
TEST(LaunchEnv, OnlyRankZeroWithACallbackPicksTheStorePort) {
  MIXLE_SKIP_UNLESS_BUILT_WITH(comms::find_comm_type("gloo")->built, "gloo");
  const auto env = [](const char* rank, const char* addr, const std::string& port) {
    std::map<std::string, std::string> v{
        {"RANK", rank}, {"WORLD_SIZE", "2"}, {"LOCAL_RANK", rank}, {"LOCAL_WORLD_SIZE", "2"}, {"MASTER_PORT", port}};
    if (*addr) v["MASTER_ADDR"] = addr;
    return detect_launch_env(fake(v));
  };
  int published = -1;
  const auto publish = [&published](int port) { published = port; };
  const auto refused = [&](const LaunchEnv& e, const std::function<void(int)>& callback, const char* why) {
    try {
      communicator_from_env(e, "gloo", std::chrono::milliseconds(200), callback);
      ADD_FAILURE() << why;
    } catch (const InvalidInput& err) {
      EXPECT_NE(std::string(err.what()).find("needs MASTER_ADDR and MASTER_PORT"), std::string::npos) << err.what();
    }
  };
  refused(env("1", "127.0.0.1", "0"), publish, "rank 1 has no port to pick");
  refused(env("0", "127.0.0.1", "0"), nullptr, "rank 0 picks only when it can publish");
  refused(env("0", "", "0"), publish, "an address is needed");
  refused(env("0", "", std::to_string(comms::find_free_port())), publish, "an address is needed with a port too");
  EXPECT_EQ(published, -1) << "nothing published by a refused start";
  // Rank 0 with a fixed port: it binds that port and publishes nothing (the group then times
  // out waiting for rank 1, which never comes).
  try {
    communicator_from_env(env("0", "127.0.0.1", std::to_string(comms::find_free_port())), "gloo",
                          std::chrono::milliseconds(200), publish);
  } catch (const std::exception&) {}
  EXPECT_EQ(published, -1);
}

// `mixle launch` hands rank 0 the socket it bound to MASTER_PORT, its number in the process's
// MIXLE_STORE_FD: rank 0 serves the store on it — binding the port again would fail while the
// socket holds it — and owns it, so the port is free once the store is gone. It does so with
// launch variables given by the caller too (the descriptor is the process's). A descriptor that
// is not a socket listening on the store port, or no number, is left alone.
TEST(LaunchEnv, RankZeroServesTheStoreOnTheSocketItWasHanded) {
  MIXLE_SKIP_UNLESS_BUILT_WITH(comms::find_comm_type("gloo")->built, "gloo");
  struct Restore {
    ~Restore() { ::unsetenv("MIXLE_STORE_FD"); }
  } restore;
  // The group never forms (rank 1 never comes); what matters is how rank 0 got its port.
  const auto start_rank0 = [](int port, const std::string& fd) -> std::string {
    ::setenv("MIXLE_STORE_FD", fd.c_str(), 1);
    const LaunchEnv e = detect_launch_env(fake(
        {{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "127.0.0.1"}, {"MASTER_PORT", std::to_string(port)}}));
    try {
      communicator_from_env(e, "gloo", std::chrono::milliseconds(300));
    } catch (const std::exception& err) {
      return err.what();
    }
    return "formed";
  };
  // The store started (on the socket, or on a port it bound) unless the port was held.
  const auto store_started = [](const std::string& said) { return said.find("cannot listen") == std::string::npos; };
  // A pipe is no listening socket: ignored, and still open after.
  int pipe_ends[2];
  ASSERT_EQ(::pipe(pipe_ends), 0);
  const comms::FileDescriptor pipe_read(pipe_ends[0]), pipe_write(pipe_ends[1]);
  const std::string ignored = start_rank0(comms::find_free_port(), std::to_string(pipe_read.get()));
  EXPECT_TRUE(store_started(ignored)) << ignored;
  EXPECT_NE(::fcntl(pipe_read.get(), F_GETFD), -1) << "the pipe was closed";
  // A listening socket on another port than the store's: ignored too.
  comms::FileDescriptor elsewhere = comms::listen_on("127.0.0.1", 0);
  const std::string other = start_rank0(comms::find_free_port(), std::to_string(elsewhere.get()));
  EXPECT_TRUE(store_started(other)) << other;
  EXPECT_NE(::fcntl(elsewhere.get(), F_GETFD), -1) << "a socket on another port was taken";
  // The socket listening on the store port, but not a number: not read.
  comms::FileDescriptor handed = comms::listen_on("127.0.0.1", 0);
  const int port = comms::local_port(handed.get());
  const std::string garbled = start_rank0(port, std::to_string(handed.get()) + "x");
  EXPECT_FALSE(store_started(garbled)) << "the socket holds its port: " << garbled;
  // Named right: served on, then closed with the store.
  const std::string served = start_rank0(port, std::to_string(handed.release()));
  EXPECT_TRUE(store_started(served)) << served;
  EXPECT_NO_THROW(comms::listen_on("127.0.0.1", port)) << "the store did not close the socket it took";
}

// Every 127.x.y.z address is loopback, not only 127.0.0.1: with one, an nccl run pins NCCL's
// bootstrap to the loopback interface (NCCL_SOCKET_IFNAME=lo), which it otherwise would not reach.
TEST(LaunchEnv, AnyAddressIn127IsLoopbackForNccl) {
  for (const char* loopback : {"127.0.0.1", "127.0.0.2", "127.255.0.9", "localhost", "::1"})
    EXPECT_TRUE(comms::is_loopback_address(loopback)) << loopback;
  for (const char* other : {"10.0.0.1", "128.0.0.1", "node7", "", "1270.0.0.1"})
    EXPECT_FALSE(comms::is_loopback_address(other)) << other;
  // The nccl type's own preparation sets the interface (only a build with NCCL has it). NCCL
  // comes with the CUDA toolkit, not from scripts/install-deps, so a CPU-only build skips here
  // even when MIXLE_REQUIRE_TOOLS=1.
  if (!comms::find_comm_type("nccl")->built) GTEST_SKIP() << "built without NCCL";
  const int port = comms::find_free_port();
  const LaunchEnv e = detect_launch_env(fake({{"RANK", "0"},
                                              {"WORLD_SIZE", "1"},
                                              {"LOCAL_RANK", "0"},
                                              {"MASTER_ADDR", "127.0.0.2"},
                                              {"MASTER_PORT", std::to_string(port)}}));
  std::optional<std::string> before;
  if (const char* v = std::getenv("NCCL_SOCKET_IFNAME")) before = v;
  ::unsetenv("NCCL_SOCKET_IFNAME");
  try {
    communicator_from_env(e, "nccl", std::chrono::seconds(5));  // may run, or lack NCCL or a GPU
  } catch (const std::exception&) {}
  const char* set = std::getenv("NCCL_SOCKET_IFNAME");
  const std::string seen = set ? set : "(unset)";
  if (before)
    ::setenv("NCCL_SOCKET_IFNAME", before->c_str(), 1);
  else
    ::unsetenv("NCCL_SOCKET_IFNAME");
  EXPECT_EQ(seen, "lo");
}

TEST(LaunchEnv, SingleCommunicatorFromEnvironment) {
  LaunchEnv e = detect_launch_env(fake({}));
  auto comm = communicator_from_env(e, resolve_comm("auto", e, false), std::chrono::seconds(1));
  EXPECT_EQ(comm->type(), "single");
  EXPECT_EQ(comm->size(), 1);
}

TEST(LaunchEnv, ErrorFileHasTorchelasticShape) {
  auto dir = std::filesystem::temp_directory_path() / ("mixle-launch-env-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  LaunchEnv e;
  EXPECT_FALSE(write_error_file(e, "nothing to write to"));
  e.error_file = (dir / "error.json").string();
  ASSERT_TRUE(write_error_file(e, "lost rank 3"));
  std::ifstream in(e.error_file);
  auto j = nlohmann::json::parse(in);
  EXPECT_EQ(j["message"]["message"], "MixleError: lost rank 3");
  EXPECT_EQ(j["message"]["extraInfo"]["py_callstack"], "(C++ engine, no Python stack)");
  EXPECT_GT(std::stoll(j["message"]["extraInfo"]["timestamp"].get<std::string>()), 1'600'000'000);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace mixle::host
