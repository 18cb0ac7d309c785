// The `gloo` communicator: Gloo's TCP transport on host buffers, rendezvous through our store.
// Gloo's ring all-reduce computes each element's sum once and forwards the result, so every rank
// receives the same bytes (DESIGN.md §6).
#include "comms/backends.hpp"
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

namespace mixle::comms::detail {
namespace {

// gloo::rendezvous::Store over our StoreClient, under a key prefix so that runs and restarts never
// read each other's addresses. Gloo expects get() to block until the key exists.
class GlooStoreAdapter final : public gloo::rendezvous::Store {
 public:
  GlooStoreAdapter(std::shared_ptr<StoreClient> store, std::string prefix,
                   std::chrono::milliseconds timeout)
      : store_(std::move(store)), prefix_(std::move(prefix)), timeout_(timeout) {}
  void set(const std::string& key, const std::vector<char>& data) override {
    store_->set(prefix_ + key, data);
  }
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

class GlooCommunicator final : public Communicator {
 public:
  explicit GlooCommunicator(CommOptions o)
      : Communicator(o.rank, o.size, o.timeout), options_(std::move(o)) {
    ignore_sigpipe();
    run("rendezvous", [&] {
      gloo::transport::tcp::attr attr;
      attr.hostname = options_.gloo_hostname;
      auto device = gloo::transport::tcp::CreateDevice(attr);
      GlooStoreAdapter store(options_.store, options_.store_prefix + "gloo/", options_.timeout);
      auto context = std::make_shared<gloo::rendezvous::Context>(rank(), size());
      context->setTimeout(options_.timeout);
      context->connectFullMesh(store, device);
      context_ = std::move(context);
    });
  }

  ~GlooCommunicator() override {
    context_.reset();  // closes the pairs before the store goes
    leave_rendezvous(options_);
  }

  std::string_view backend() const noexcept override { return "gloo"; }
  MemorySpace memory_space() const noexcept override { return MemorySpace::host; }

 protected:
  void all_reduce_impl(void* data, std::size_t count, DataType type, ReduceOp op,
                       MemorySpace) override {
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

  // Runs one Gloo call, converting Gloo's exceptions into a CommunicationError naming the lost rank.
  template <class F>
  void run(const char* what, F&& call) {
    if (broken_)
      throw CommunicationError("gloo communicator of rank " + std::to_string(rank()) +
                               " is unusable after an earlier failure");
    try {
      call();
    } catch (const mixle::Error&) {
      broken_ = true;
      throw;
    } catch (const std::exception& e) {
      broken_ = true;
      throw CommunicationError(
          "gloo " + std::string(what) + " failed on rank " + std::to_string(rank()) + " of " +
          std::to_string(size()) + ": " +
          describe_lost_peers(options_.store.get(), options_.store_prefix, rank(), size(),
                              std::min(options_.timeout, std::chrono::milliseconds(2000))) +
          " [timeout " + std::to_string(timeout().count()) + " ms; gloo: " + e.what() + "]");
    }
  }

  CommOptions options_;
  std::shared_ptr<gloo::Context> context_;
  std::uint32_t tag_ = 1;
  bool broken_ = false;
};

}  // namespace

std::unique_ptr<Communicator> make_gloo_communicator(CommOptions options) {
  return std::make_unique<GlooCommunicator>(std::move(options));
}

}  // namespace mixle::comms::detail
#endif  // MIXLE_HAVE_GLOO
