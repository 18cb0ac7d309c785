// The `gloo` communicator: Gloo's TCP transport on host buffers, rendezvous through our store.
// Gloo's ring all-reduce computes each element's sum once and forwards the result, so every rank
// receives the same bytes (docs/design.md §8).
#include "comms/builtin.hpp"
#include "comms/peer_failure.hpp"
#include "comms/store.hpp"

#include <mixle/error.hpp>

#if MIXLE_HAVE_GLOO
#include <gloo/allgather.h>
#include <gloo/allreduce.h>
#include <gloo/barrier.h>
#include <gloo/broadcast.h>
#include <gloo/math.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/store.h>
#include <gloo/transport/tcp/device.h>

#include <signal.h>
#include <unistd.h>

#include <cstdlib>

namespace mixle::comms::detail {
namespace {

// gloo::rendezvous::Store over our StoreClient, under a key prefix so that runs and restarts never
// read each other's addresses. Gloo expects get() to block until the key exists.
class GlooStoreAdapter final : public gloo::rendezvous::Store {
 public:
  GlooStoreAdapter(std::shared_ptr<StoreClient> store, std::string prefix, std::chrono::milliseconds timeout)
      : store_(std::move(store)), prefix_(std::move(prefix)), timeout_(timeout) {}
  void set(const std::string& key, const std::vector<char>& data) override { store_->set(prefix_ + key, data); }
  std::vector<char> get(const std::string& key) override { return store_->get(prefix_ + key, timeout_); }
  void wait(const std::vector<std::string>& keys) override { wait(keys, timeout_); }
  void wait(const std::vector<std::string>& keys, const std::chrono::milliseconds& timeout) override {
    std::vector<std::string> full;
    for (const auto& k : keys) full.push_back(prefix_ + k);
    store_->wait(full, std::min(timeout, timeout_));
  }

 private:
  std::shared_ptr<StoreClient> store_;
  std::string prefix_;
  std::chrono::milliseconds timeout_;
};

// Gloo's TCP pairs write without MSG_NOSIGNAL, so a write to a peer that was just killed raises
// SIGPIPE, whose default action kills this process silently — before Gloo can report the error and
// we can name the lost rank (seen in the killed-rank tests). Ignore it, unless the application
// installed its own handler.
void ignore_sigpipe() {
  struct sigaction current {};
  if (::sigaction(SIGPIPE, nullptr, &current) == 0 && current.sa_handler == SIG_DFL) {
    struct sigaction ignore {};
    ignore.sa_handler = SIG_IGN;
    sigemptyset(&ignore.sa_mask);
    ::sigaction(SIGPIPE, &ignore, nullptr);
  }
}

template <class T>
void (*reduce_function(ReduceOp op))(void*, const void*, const void*, size_t) {
  using Fn = void (*)(void*, const void*, const void*, size_t);
  return op == ReduceOp::sum ? static_cast<Fn>(&gloo::sum<T>) : static_cast<Fn>(&gloo::max<T>);
}

// What a world communicator and its split children share: the store client (only the world
// communicator closes it), the store namespace under which failures are reported by world rank,
// and the TCP device (one event loop serves every context of this process).
struct GlooShared {
  std::shared_ptr<StoreClient> store;
  std::string prefix;  // the world communicator's store_prefix
  std::shared_ptr<gloo::transport::Device> device;
};

class GlooCommunicator final : public Communicator {
 public:
  // A world communicator: owns the rendezvous.
  explicit GlooCommunicator(CommOptions o)
      : Communicator(o.rank, o.size, o.timeout), options_(std::move(o)), owns_rendezvous_(true) {
    ignore_sigpipe();
    shared_.store = options_.store;
    shared_.prefix = options_.store_prefix;
    connect("rendezvous", options_.store_prefix + "gloo/", [&] {
      gloo::transport::tcp::attr attr;
      attr.hostname = options_.gloo_hostname;
      shared_.device = gloo::transport::tcp::CreateDevice(attr);
    });
  }

  // A split child: a fresh full mesh over the group's members, with its own store keys.
  GlooCommunicator(const GlooShared& shared, const SplitGroup& group, std::string key_prefix,
                   std::chrono::milliseconds timeout)
      : Communicator(group.rank, static_cast<int>(group.members.size()), timeout, group.world_members),
        shared_(shared),
        owns_rendezvous_(false) {
    connect("split rendezvous", std::move(key_prefix), [] {});
  }

  ~GlooCommunicator() override {
    context_.reset();  // closes the pairs before the store goes
    if (owns_rendezvous_) leave_rendezvous(options_);
  }

  std::string_view type() const noexcept override { return "gloo"; }
  MemorySpace memory_space() const noexcept override { return MemorySpace::host; }

 protected:
  void all_reduce_impl(void* data, std::size_t count, DataType type, ReduceOp op, MemorySpace) override {
    run("all_reduce", [&] {
      gloo::AllreduceOptions opts(context_);
      opts.setTag(next_tag());
      opts.setTimeout(timeout());
      if (type == DataType::float64) {
        opts.setOutput(static_cast<double*>(data), count);
        opts.setReduceFunction(reduce_function<double>(op));
      } else {
        opts.setOutput(static_cast<float*>(data), count);
        opts.setReduceFunction(reduce_function<float>(op));
      }
      gloo::allreduce(opts);
    });
  }

  void broadcast_impl(void* data, std::size_t bytes, int root, MemorySpace) override {
    run("broadcast", [&] {
      gloo::BroadcastOptions opts(context_);
      opts.setTag(next_tag());
      opts.setTimeout(timeout());
      opts.setRoot(root);
      opts.setOutput(static_cast<std::uint8_t*>(data), bytes);  // root sends its output in place
      gloo::broadcast(opts);
    });
  }

  void all_gather_impl(const void* send, std::size_t bytes, void* recv, MemorySpace) override {
    run("all_gather", [&] {
      gloo::AllgatherOptions opts(context_);
      opts.setTag(next_tag());
      opts.setTimeout(timeout());
      opts.setInput(const_cast<std::uint8_t*>(static_cast<const std::uint8_t*>(send)), bytes);
      opts.setOutput(static_cast<std::uint8_t*>(recv), bytes * static_cast<std::size_t>(size()));
      gloo::allgather(opts);
    });
  }

  // Rendezvous keys of child n of this communicator: under this communicator's own keys, so that
  // nested splits never collide; n counts splits, the same on every rank since split is collective.
  std::unique_ptr<Communicator> split_impl(const SplitGroup& group) override {
    std::string prefix = key_prefix_ + "split/" + std::to_string(splits_++) + "/" + std::to_string(group.color) + "/";
    if (broken_)
      throw CommunicationError("gloo communicator of rank " + std::to_string(rank()) +
                               " is unusable after an earlier failure");
    return std::make_unique<GlooCommunicator>(shared_, group, std::move(prefix), timeout());
  }

  void barrier_impl() override {
    run("barrier", [&] {
      gloo::BarrierOptions opts(context_);
      opts.setTag(next_tag());
      opts.setTimeout(timeout());
      gloo::barrier(opts);
    });
  }

 private:
  std::uint32_t next_tag() { return tag_++; }

  // Forms this communicator's Gloo context (after `prepare`, inside the same error conversion).
  template <class F>
  void connect(const char* what, std::string key_prefix, F&& prepare) {
    key_prefix_ = std::move(key_prefix);
    run(what, [&] {
      prepare();
      GlooStoreAdapter store(shared_.store, key_prefix_, timeout());
      auto context = std::make_shared<gloo::rendezvous::Context>(rank(), size());
      context->setTimeout(timeout());
      context->connectFullMesh(store, shared_.device);
      context_ = std::move(context);
    });
  }

  // Runs one Gloo call, converting Gloo's exceptions into a CommunicationError naming the lost rank.
  // A call that throws anything leaves the communicator broken.
  template <class F>
  void run(const char* what, F&& call) {
    if (broken_)
      throw CommunicationError("gloo communicator of rank " + std::to_string(rank()) +
                               " is unusable after an earlier failure");
    broken_ = true;  // until the call returns
    try {
      call();
    } catch (const mixle::Error&) {
      throw;  // the store's own errors (while connecting) already say what failed
    } catch (const std::exception& e) {
      std::vector<int> members(static_cast<std::size_t>(size()));
      for (int r = 0; r < size(); ++r) members[static_cast<std::size_t>(r)] = world_rank(r);
      throw CommunicationError("gloo " + std::string(what) + " failed on rank " + std::to_string(rank()) + " of " +
                               std::to_string(size()) + world_suffix() + ": " +
                               describe_lost_peers(shared_.store.get(), shared_.prefix, world_rank(rank()), members,
                                                   !is_world(), std::min(timeout(), kReportPatience)) +
                               " [timeout " + std::to_string(timeout().count()) + " ms; gloo: " + e.what() + "]");
    }
    broken_ = false;
  }

  CommOptions options_;  // a world communicator's creation options (for leave_rendezvous)
  GlooShared shared_;
  bool owns_rendezvous_;
  std::string key_prefix_;  // this communicator's Gloo rendezvous keys
  int splits_ = 0;
  std::shared_ptr<gloo::Context> context_;
  std::uint32_t tag_ = 1;
  bool broken_ = false;
};

}  // namespace

CommType gloo_comm_type() {
  CommType b{.name = "gloo",
             .summary = "CPU, TCP (Gloo); ranks meet through the rendezvous store",
             .built = true,
             .rendezvous = true};
  b.prepare = [](CommOptions& o, const std::string& master_addr) {
    // The address peers reach this rank at: MIXLE_GLOO_HOSTNAME, else loopback for a loopback
    // rendezvous, else this host's name.
    if (const char* h = std::getenv("MIXLE_GLOO_HOSTNAME"); h && *h) {
      o.gloo_hostname = h;
    } else if (!is_loopback_address(master_addr)) {
      char name[256] = {};
      ::gethostname(name, sizeof name - 1);
      o.gloo_hostname = name;
    }
  };
  b.make = [](CommOptions o) -> std::unique_ptr<Communicator> {
    return std::make_unique<GlooCommunicator>(std::move(o));
  };
  return b;
}

}  // namespace mixle::comms::detail
#endif  // MIXLE_HAVE_GLOO
