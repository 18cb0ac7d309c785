// The `threads` communicator (comms/thread_group.hpp). Every collective is two rendezvous of the
// group's members: at the first each member posts its buffer addresses; between the two each
// member reads the others' buffers and computes its own result into private memory; after the
// second (nobody reads any more) each writes its result into its own buffer. Members only ever
// write their own buffers, so no collective needs a lock around the data itself.
#include "comms/thread_group.hpp"

#include <mixle/error.hpp>

#include <algorithm>
#include <functional>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <string>

namespace mixle::comms {
namespace {

struct GroupState {
  explicit GroupState(int n) : size(n), arrived(static_cast<std::size_t>(n), 0), send(static_cast<std::size_t>(n)) {}
  std::mutex mutex;
  std::condition_variable changed;
  int size;
  std::uint64_t generation = 0;   // completed rendezvous
  int count = 0;                  // members at the current rendezvous
  std::vector<char> arrived;      // who is at the current rendezvous (for timeout messages)
  std::vector<const void*> send;  // each member's posted buffer
  std::string broken;             // why the group can no longer meet (empty: it can)
};

class ThreadMember final : public Communicator {
 public:
  ThreadMember(std::shared_ptr<GroupState> state, int rank, std::chrono::milliseconds timeout,
               std::vector<int> world_ranks = {})
      : Communicator(rank, state->size, timeout, std::move(world_ranks)), state_(std::move(state)) {}
  ~ThreadMember() override {
    if (std::uncaught_exceptions() > 0) abandon();
  }
  std::string_view type() const noexcept override { return "threads"; }
  MemorySpace memory_space() const noexcept override { return MemorySpace::host; }

  void abandon() noexcept {
    std::lock_guard<std::mutex> lock(state_->mutex);
    if (state_->broken.empty())
      state_->broken = "member " + std::to_string(rank()) + " left the group with an error (its own message says why)";
    state_->changed.notify_all();
  }

 protected:
  std::unique_ptr<Communicator> split_impl(const SplitGroup& group) override {
    // Each child's first member makes the child's state; the others copy the shared pointer
    // through one all-gather of its address (threads share the address space). The barrier
    // keeps the first member's holder alive until every member has its copy.
    std::shared_ptr<GroupState> holder;
    if (group.rank == 0) holder = std::make_shared<GroupState>(static_cast<int>(group.members.size()));
    const std::shared_ptr<GroupState>* mine = &holder;
    std::vector<const std::shared_ptr<GroupState>*> all(static_cast<std::size_t>(size()));
    all_gather_impl(&mine, sizeof mine, all.data(), MemorySpace::host);
    std::shared_ptr<GroupState> child = *all[static_cast<std::size_t>(group.members.front())];
    barrier_impl();
    return std::make_unique<ThreadMember>(std::move(child), group.rank, timeout(), group.world_members);
  }

  void all_reduce_impl(void* data, std::size_t count, DataType type, ReduceOp op, MemorySpace) override {
    const std::size_t bytes = count * (type == DataType::float64 ? 8 : 4);
    scratch_.resize(bytes);
    rendezvous(data, "all_reduce");
    if (type == DataType::float64)
      reduce<double>(count, op);
    else
      reduce<float>(count, op);
    rendezvous(nullptr, "all_reduce");
    std::memcpy(data, scratch_.data(), bytes);
  }

  void broadcast_impl(void* data, std::size_t bytes, int root, MemorySpace) override {
    rendezvous(data, "broadcast");
    if (rank() != root) {
      scratch_.resize(bytes);
      std::memcpy(scratch_.data(), state_->send[static_cast<std::size_t>(root)], bytes);
    }
    rendezvous(nullptr, "broadcast");
    if (rank() != root) std::memcpy(data, scratch_.data(), bytes);
  }

  void all_gather_impl(const void* send, std::size_t bytes, void* recv, MemorySpace) override {
    // recv may alias this member's own send block: gather into scratch first.
    scratch_.resize(bytes * static_cast<std::size_t>(size()));
    rendezvous(send, "all_gather");
    for (int r = 0; r < size(); ++r)
      std::memcpy(scratch_.data() + static_cast<std::size_t>(r) * bytes, state_->send[static_cast<std::size_t>(r)],
                  bytes);
    rendezvous(nullptr, "all_gather");
    std::memcpy(recv, scratch_.data(), scratch_.size());
  }

  void barrier_impl() override { rendezvous(nullptr, "barrier"); }

 private:
  template <class T>
  void reduce(std::size_t count, ReduceOp op) {
    // Rank order on every member: the same bytes everywhere.
    T* out = reinterpret_cast<T*>(scratch_.data());
    std::memcpy(out, state_->send[0], count * sizeof(T));
    for (int r = 1; r < size(); ++r) {
      const T* in = static_cast<const T*>(state_->send[static_cast<std::size_t>(r)]);
      if (op == ReduceOp::sum)
        std::transform(out, out + count, in, out, std::plus<T>());
      else
        std::transform(out, out + count, in, out, [](T a, T b) { return std::max(a, b); });
    }
  }

  /// Posts `buffer` and waits until every member has arrived (a generation barrier).
  void rendezvous(const void* buffer, const char* call) {
    GroupState& s = *state_;
    std::unique_lock<std::mutex> lock(s.mutex);
    check_broken(call);
    const std::uint64_t generation = s.generation;
    // Only a posting rendezvous writes the slot: the closing one (nullptr) must not, because other
    // members may still be reading every slot, outside the lock, between the two.
    if (buffer) s.send[static_cast<std::size_t>(rank())] = buffer;
    s.arrived[static_cast<std::size_t>(rank())] = 1;
    if (++s.count == s.size) {
      s.count = 0;
      std::fill(s.arrived.begin(), s.arrived.end(), 0);
      ++s.generation;
      s.changed.notify_all();
      return;
    }
    const bool done =
        s.changed.wait_for(lock, timeout(), [&] { return s.generation != generation || !s.broken.empty(); });
    if (s.generation != generation) return;
    if (!done) {  // the first member to time out says who is missing, for every member
      std::string missing;
      for (int r = 0; r < s.size; ++r)
        if (!s.arrived[static_cast<std::size_t>(r)]) missing += (missing.empty() ? "" : ", ") + std::to_string(r);
      s.broken = "timed out after " + std::to_string(timeout().count()) + " ms; member(s) " + missing +
                 " did not arrive (hung or slow)";
      s.changed.notify_all();
    }
    check_broken(call);
  }

  /// Throws when the group is broken (a member left with an error, or one timed out).
  void check_broken(const char* call) const {
    if (!state_->broken.empty())
      throw CommunicationError(std::string("threads communicator: ") + call + " on member " + std::to_string(rank()) +
                               ": " + state_->broken);
  }

  std::shared_ptr<GroupState> state_;
  std::vector<unsigned char> scratch_;
};

}  // namespace

std::vector<std::unique_ptr<Communicator>> make_thread_group(int size, std::chrono::milliseconds timeout) {
  if (size < 1) throw InvalidInput("thread group of " + std::to_string(size) + " members: need at least 1");
  if (timeout.count() <= 0)
    throw InvalidInput("thread group timeout " + std::to_string(timeout.count()) + " ms: must be positive");
  auto state = std::make_shared<GroupState>(size);
  std::vector<std::unique_ptr<Communicator>> members;
  for (int r = 0; r < size; ++r) members.push_back(std::make_unique<ThreadMember>(state, r, timeout));
  return members;
}

void abandon_thread_group(Communicator& member) noexcept {
  if (auto* m = dynamic_cast<ThreadMember*>(&member)) m->abandon();
}

}  // namespace mixle::comms
