// Kernel launches in the simulator: what `kernel<<<grid, block, shared, stream>>>(args…)` does on
// a GPU, reached through the project's one launch helper (kernels/cuda/device.cuh).
//
// At the launch, as CUDA does: the configuration is checked (cudaErrorInvalidConfiguration,
// not sticky), the arguments are converted to the kernel's parameter types and copied, and the
// grid is queued on the stream. In addition, every pointer among the arguments — top-level, or a
// field of a plain struct argument — must be null or point into memory cudaMalloc gave the
// stream's device; anything else (host memory, pinned memory, freed memory, another device's
// memory) is reported as an illegal address, naming the kernel and the argument, as the GPU would
// fault on the first access. When the grid runs, a fault inside it (block.hpp) becomes the
// device's sticky error, and without AddressSanitizer the guard bytes of every allocation are
// checked so an out-of-bounds write names its kernel.
#pragma once

#include "mixle/cudasim/block.hpp"
#include "mixle/cudasim/state.hpp"

#include <cstddef>
#include <memory>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>

// Present when a sanitizer runtime is linked (AddressSanitizer, UBSan); null otherwise.
extern "C" void __sanitizer_set_death_callback(void (*callback)(void)) __attribute__((weak));

namespace mixle::cudasim {

template <class F>
struct kernel_traits;
template <class... P>
struct kernel_traits<void (*)(P...)> {
  using params = std::tuple<std::decay_t<P>...>;
};

/// "ns::kernel<float>" for the kernel `Kernel`, from the compiler's spelling of the template.
inline std::string name_from_pretty(const std::string& pretty) {
  const std::string key = "Kernel = ";
  std::size_t at = pretty.find(key);
  if (at == std::string::npos) return pretty;
  at += key.size();
  const std::size_t end = pretty.find_first_of(";]", at);
  std::string n = pretty.substr(at, end == std::string::npos ? std::string::npos : end - at);
  const std::string anon = "{anonymous}::";
  for (std::size_t p; (p = n.find(anon)) != std::string::npos;) n.erase(p, anon.size());
  return n;
}

template <auto Kernel>
const std::string& kernel_name() {
  static const std::string name = name_from_pretty(__PRETTY_FUNCTION__);
  return name;
}

// ---- pointers inside arguments ---------------------------------------------------------------
// The fields of a plain struct argument are reached with structured bindings; their number is
// found by aggregate initialisation (the largest N for which T{a₁…a_N} compiles).
struct any_field {
  template <class T>
  operator T() const;
};

template <class T, std::size_t... I>
constexpr bool brace_initialisable(std::index_sequence<I...>) {
  return requires { T{(static_cast<void>(I), any_field{})...}; };
}

template <class T, std::size_t N = 12>
constexpr std::size_t field_count() {
  if constexpr (N == 0)
    return 0;
  else if constexpr (brace_initialisable<T>(std::make_index_sequence<N>{}))
    return N;
  else
    return field_count<T, N - 1>();
}

class PointerCheck {
 public:
  PointerCheck(const Simulator& s, int device) : s_(s), device_(device) {}

  template <class T>
  void visit(const T& v, const std::string& name) {
    if constexpr (std::is_pointer_v<T>) {
      if constexpr (!std::is_function_v<std::remove_pointer_t<T>>) check(static_cast<const void*>(v), name);
    } else if constexpr (std::is_class_v<T> && std::is_aggregate_v<T> && !std::is_empty_v<T>) {
      visit_fields(v, name);
    }
  }

  const std::string& problem() const { return problem_; }

 private:
  void check(const void* p, const std::string& name) {
    if (p == nullptr || !problem_.empty()) return;
    const Allocation* a = s_.find(p);
    if (a && a->device == device_) return;
    problem_ = name + " is " + s_.describe(p) + ", not memory of device " + std::to_string(device_);
  }

#define MIXLE_SIM_FIELDS(N, ...)                                                         \
  if constexpr (n == N) {                                                                \
    const auto& [__VA_ARGS__] = v;                                                       \
    std::size_t i = 0;                                                                   \
    auto each = [&](const auto& f) { visit(f, name + ".field" + std::to_string(i++)); }; \
    apply_each(each, __VA_ARGS__);                                                       \
  }
  template <class F, class... A>
  static void apply_each(F& f, const A&... a) {
    (f(a), ...);
  }
  template <class T>
  void visit_fields(const T& v, const std::string& name) {
    constexpr std::size_t n = field_count<T>();
    MIXLE_SIM_FIELDS(1, a1)
    MIXLE_SIM_FIELDS(2, a1, a2)
    MIXLE_SIM_FIELDS(3, a1, a2, a3)
    MIXLE_SIM_FIELDS(4, a1, a2, a3, a4)
    MIXLE_SIM_FIELDS(5, a1, a2, a3, a4, a5)
    MIXLE_SIM_FIELDS(6, a1, a2, a3, a4, a5, a6)
    MIXLE_SIM_FIELDS(7, a1, a2, a3, a4, a5, a6, a7)
    MIXLE_SIM_FIELDS(8, a1, a2, a3, a4, a5, a6, a7, a8)
    MIXLE_SIM_FIELDS(9, a1, a2, a3, a4, a5, a6, a7, a8, a9)
    MIXLE_SIM_FIELDS(10, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10)
    MIXLE_SIM_FIELDS(11, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11)
    MIXLE_SIM_FIELDS(12, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12)
  }
#undef MIXLE_SIM_FIELDS

  const Simulator& s_;
  int device_;
  std::string problem_;
};

// ---- AddressSanitizer reports name the kernel ---------------------------------------------
/// Printed when AddressSanitizer stops the process: which kernel, block and thread was running.
/// (GCC's UBSan runtime is a separate library with its own callback: its stack trace names the
/// kernel instead.)
inline void report_running_kernel() {
  if (g_block && g_block->grid) {
    std::fprintf(stderr, "mixle CUDA simulator: the report above was raised in %s\n",
                 where(*g_block, g_block->current).c_str());
    std::fflush(stderr);
  }
}

inline void install_death_callback() {
  static const bool installed = [] {
    if (__sanitizer_set_death_callback) __sanitizer_set_death_callback(report_running_kernel);
    return true;
  }();
  (void)installed;
}

inline std::string dims(dim3 d) {
  return "(" + std::to_string(d.x) + "," + std::to_string(d.y) + "," + std::to_string(d.z) + ")";
}

/// Checks a launch configuration as CUDA does; empty when valid.
inline std::string bad_configuration(dim3 grid, dim3 block, std::size_t dynamic_shared) {
  const unsigned long long threads = 1ull * block.x * block.y * block.z;
  if (grid.x == 0 || grid.y == 0 || grid.z == 0) return "grid " + dims(grid) + " has an empty dimension";
  if (grid.x > 2147483647u || grid.y > 65535u || grid.z > 65535u)
    return "grid " + dims(grid) + " exceeds (2147483647, 65535, 65535)";
  if (block.x == 0 || block.y == 0 || block.z == 0) return "block " + dims(block) + " has an empty dimension";
  if (block.x > 1024u || block.y > 1024u || block.z > 64u || threads > 1024u)
    return "block " + dims(block) + " exceeds 1024 threads (or 1024, 1024, 64 per dimension)";
  if (dynamic_shared > 48u * 1024u)
    return std::to_string(dynamic_shared) + " bytes of dynamic shared memory exceed the default 48 KiB";
  return {};
}

inline std::uint64_t next_launch_id() {
  static std::uint64_t id = 0;
  return ++id;
}

/// The simulator's `Kernel<<<grid, block, shared, stream>>>(args…)`.
template <auto Kernel, class... Args>
void launch(dim3 grid, dim3 block, std::size_t dynamic_shared, cudaStream_t stream, Args&&... args) {
  using Params = typename kernel_traits<decltype(Kernel)>::params;
  static_assert(std::tuple_size_v<Params> == sizeof...(Args), "a kernel launch needs one argument per parameter");
  install_death_callback();
  Simulator& s = sim();
  std::lock_guard<std::recursive_mutex> lock(s.mutex);
  const std::string& name = kernel_name<Kernel>();
  auto st = s.stream(stream, t_current_device);
  if (!st) {
    note(cudaErrorInvalidResourceHandle);
    return;
  }
  DeviceState& dev = s.devices[static_cast<std::size_t>(st->device)];
  if (dev.sticky != cudaSuccess) {
    note(dev.sticky);
    return;
  }
  if (st->device != t_current_device) {
    std::fprintf(stderr, "mixle CUDA simulator: %s launched on a stream of device %d while device %d is current\n",
                 name.c_str(), st->device, t_current_device);
    note(cudaErrorInvalidResourceHandle);
    return;
  }
  if (const std::string bad = bad_configuration(grid, block, dynamic_shared); !bad.empty()) {
    std::fprintf(stderr, "mixle CUDA simulator: launch of %s: %s\n", name.c_str(), bad.c_str());
    note(cudaErrorInvalidConfiguration);
    return;
  }
  auto params = std::make_shared<Params>(std::forward<Args>(args)...);
  PointerCheck check(s, st->device);
  std::apply(
      [&](const auto&... p) {
        std::size_t i = 0;
        (check.visit(p, "argument " + std::to_string(i++)), ...);
      },
      *params);
  if (!check.problem().empty()) {
    s.fault(st->device, cudaErrorIllegalAddress, "launch of kernel " + name + ": " + check.problem());
    note(cudaErrorIllegalAddress);
    return;
  }
  ++s.counters.kernel_launches;
  auto g = std::make_shared<Grid>();
  g->kernel = name;
  g->grid = grid;
  g->block = block;
  g->dynamic_shared = dynamic_shared;
  g->launch_id = next_launch_id();
  g->body = [params] { std::apply([](auto... p) { Kernel(p...); }, *params); };
  const int device = st->device;
  const Schedule order = schedule();  // the schedule in force at the launch
  Op op;
  op.what = "kernel " + name;
  op.run = [g, device, order] {
    Simulator& sm = sim();
    const std::string fault = run_grid(*g, order);
    if (!fault.empty()) {
      sm.fault(device, cudaErrorLaunchFailure, fault);
    } else if (const std::string damage = sm.damaged_guard(device); !damage.empty()) {
      sm.repair_guards(device);
      sm.fault(device, cudaErrorIllegalAddress, "kernel " + g->kernel + " " + damage);
    }
    return OpStatus::done;
  };
  s.enqueue(st, std::move(op));
}

}  // namespace mixle::cudasim
