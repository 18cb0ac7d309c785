// ParallelPlan: an explicit N-D process mesh (reference training_contracts.ParallelPlan).
#pragma once

#include <concepts>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

namespace mixle::plan {

/// Named mesh dimensions. The first five are physical (they multiply into the world size); ep
/// and etp are overlapping groups carved out of existing ranks.
enum class ParallelAxis { dp_replicate, dp_shard, tp, pp, cp, ep, etp };

/// All axes in their fixed order.
inline constexpr ParallelAxis kParallelAxes[] = {ParallelAxis::dp_replicate, ParallelAxis::dp_shard, ParallelAxis::tp,
                                                 ParallelAxis::pp,           ParallelAxis::cp,       ParallelAxis::ep,
                                                 ParallelAxis::etp};
/// The physical axes, slowest-varying first (rank = mixed radix over these, cp fastest).
inline constexpr ParallelAxis kPhysicalAxes[] = {ParallelAxis::dp_replicate, ParallelAxis::dp_shard, ParallelAxis::tp,
                                                 ParallelAxis::pp, ParallelAxis::cp};

/// "dp_replicate", …
const char* axis_name(ParallelAxis axis) noexcept;
/// Inverse of axis_name; InvalidInput listing the accepted names.
ParallelAxis axis_from_name(std::string_view name);

/// A plan dimension size: an exact integer. Booleans and floating-point values do not convert,
/// so `.tp = 1.9` or `.tp = true` fail to compile instead of truncating (the reference rejects
/// them at run time). Range (≥ 1) is checked by ParallelPlan.
class PlanSize {
 public:
  template <std::integral T>
  requires(!std::same_as<T, bool>) constexpr PlanSize(
      T value) noexcept  // NOLINT(google-explicit-constructor): designated init
      : value_(clamp(value)) {}
  template <class T>
  requires(std::same_as<T, bool> || std::floating_point<T>) PlanSize(T)
  = delete;

  constexpr std::int64_t value() const noexcept { return value_; }

 private:
  template <class T>
  static constexpr std::int64_t clamp(T value) noexcept {
    // Unsigned values beyond int64 saturate; the world-size product then reports the overflow.
    if constexpr (std::unsigned_integral<T>) {
      if (value > static_cast<std::make_unsigned_t<std::int64_t>>(std::numeric_limits<std::int64_t>::max())) {
        return std::numeric_limits<std::int64_t>::max();
      }
    }
    return static_cast<std::int64_t>(value);
  }
  std::int64_t value_;
};

/// The sizes of a ParallelPlan; every field defaults to 1.
struct ParallelPlanSizes {
  PlanSize dp_replicate = 1;
  PlanSize dp_shard = 1;
  PlanSize tp = 1;
  PlanSize pp = 1;
  PlanSize cp = 1;
  PlanSize ep = 1;
  PlanSize etp = 1;
  PlanSize microbatches = 1;
  PlanSize gradient_accumulation_steps = 1;
};

/// An immutable, validated process mesh and batch schedule.
class ParallelPlan {
 public:
  /// Throws InvalidInput: "<name>=<v> must be an exact positive integer" for sizes < 1;
  /// "expert parallelism must divide the data-parallel domain" when (dp_replicate·dp_shard) mod
  /// ep ≠ 0; a world size that overflows 63 bits.
  explicit ParallelPlan(const ParallelPlanSizes& sizes = {});

  std::int64_t size(ParallelAxis axis) const noexcept;
  /// Size by axis name; InvalidInput for unknown names.
  std::int64_t size(std::string_view axis) const;
  std::int64_t microbatches() const noexcept { return microbatches_; }
  std::int64_t gradient_accumulation_steps() const noexcept { return accumulation_; }
  /// dp_replicate · dp_shard · tp · pp · cp (ep/etp overlap existing ranks).
  std::int64_t world_size() const noexcept { return world_size_; }
  /// dp_replicate · dp_shard.
  std::int64_t data_parallel_size() const noexcept;
  /// Axes with size > 1, in the fixed order.
  std::vector<ParallelAxis> active_axes() const;
  /// Names and sizes of the active physical axes, or ({"dp_replicate"}, {1}) when none is.
  std::pair<std::vector<std::string>, std::vector<std::int64_t>> mesh() const;

  /// Throws InvalidInput when `actual` differs from world_size() ("parallel plan requires
  /// world_size=…, but the process group has world_size=…") or is < 1. Only exact integers are
  /// accepted: validate_world_size(1.9) and validate_world_size(true) do not compile.
  template <std::integral T>
  requires(!std::same_as<T, bool>) void validate_world_size(T actual) const {
    if constexpr (std::unsigned_integral<T>) {
      if (actual > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
        check_world_size(std::numeric_limits<std::int64_t>::max());
        return;
      }
    }
    check_world_size(static_cast<std::int64_t>(actual));
  }

  /// The reference `as_dict`: 7 axis sizes, microbatches, gradient_accumulation_steps,
  /// world_size, data_parallel_size.
  std::string to_json(int indent = -1) const;
  /// Reads the 9 sizes (missing → 1); values must be exact integers (1.9, true, "2" rejected);
  /// world_size / data_parallel_size, when present, must match.
  static ParallelPlan from_json(std::string_view text);

  bool operator==(const ParallelPlan&) const = default;

 private:
  void check_world_size(std::int64_t actual) const;

  std::int64_t sizes_[7];
  std::int64_t microbatches_;
  std::int64_t accumulation_;
  std::int64_t world_size_;
};

}  // namespace mixle::plan
