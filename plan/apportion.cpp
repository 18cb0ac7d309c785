#include "plan/apportion.hpp"

#include <algorithm>
#include <functional>
#include <ranges>

namespace mixle::plan::detail {

std::size_t largest_deficit(const std::vector<double>& w, const std::vector<std::uint64_t>& counts,
                            std::uint64_t total) {
  const double n = static_cast<double>(total);
  const auto deficit = [&](std::size_t i) { return w[i] - static_cast<double>(counts[i]) / n; };
  // max_element keeps the first of equal deficits.
  return *std::ranges::max_element(std::views::iota(std::size_t{0}, w.size()), std::less<>{}, deficit);
}

}  // namespace mixle::plan::detail
