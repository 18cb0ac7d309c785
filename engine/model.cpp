// Model structure: column coverage, parameter counts, layout parsing and validation.
#include "engine/families/checks.hpp"
#include "engine/families/family_ops.hpp"

#include <mixle/error.hpp>
#include <mixle/model.hpp>

#include <algorithm>
#include <charconv>
#include <cmath>

namespace mixle {

std::size_t Model::columns() const noexcept {
  std::size_t c = 0;
  for (const auto& p : parts) c = std::max(c, p.col_end);
  return c;
}

std::size_t Model::free_parameters() const noexcept {
  std::size_t n = weights.empty() ? 0 : weights.size() - 1;
  for (const auto& p : parts) {
    const engine::FamilyOps& ops = engine::family_ops(p.family);
    n += weights.size() * ops.free_parameters(p) + ops.shared_free_parameters(p);
  }
  return n;
}

namespace {

std::size_t parse_index(std::string_view text, std::string_view item) {
  std::size_t v = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || ptr != text.data() + text.size())
    throw InvalidInput("layout item \"" + std::string(item) + "\": \"" + std::string(text) +
                       "\" is not a non-negative integer");
  return v;
}

}  // namespace

std::vector<PartSpec> parse_layout(std::string_view text, std::size_t columns) {
  std::vector<PartSpec> specs;
  if (text.find(':') == std::string_view::npos && text.find(',') == std::string_view::npos) {
    specs.push_back(PartSpec{family_from_name(text), 0, columns, 0});
    return specs;
  }
  std::size_t start = 0;
  while (start <= text.size()) {
    std::size_t end = text.find(',', start);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view item = text.substr(start, end - start);
    const std::size_t c1 = item.find(':');
    if (c1 == std::string_view::npos)
      throw InvalidInput("layout item \"" + std::string(item) +
                         "\" must be family:begin-end[:V], e.g. gaussian_diag:0-4 or categorical:4-5:3");
    PartSpec spec;
    spec.family = family_from_name(item.substr(0, c1));
    std::string_view rest = item.substr(c1 + 1);
    const std::size_t c2 = rest.find(':');
    const std::string_view range = rest.substr(0, c2);
    const std::size_t dash = range.find('-');
    if (dash == std::string_view::npos)
      throw InvalidInput("layout item \"" + std::string(item) + "\": column range must be begin-end (half-open)");
    spec.col_begin = parse_index(range.substr(0, dash), item);
    spec.col_end = parse_index(range.substr(dash + 1), item);
    if (c2 != std::string_view::npos) spec.categories = parse_index(rest.substr(c2 + 1), item);
    if (spec.col_end <= spec.col_begin)
      throw InvalidInput("layout item \"" + std::string(item) + "\": empty column range");
    if (columns && spec.col_end > columns)
      throw InvalidInput("layout item \"" + std::string(item) + "\": column " + std::to_string(spec.col_end - 1) +
                         " is past the data's " + std::to_string(columns) + " columns");
    specs.push_back(spec);
    start = end + 1;
  }
  return specs;
}

void validate_model(const Model& model) {
  const std::size_t K = model.weights.size();
  if (K == 0) throw InvalidInput("model: \"weights\" is empty; a mixture needs K ≥ 1 components");
  double sum = 0.0;
  for (std::size_t k = 0; k < K; ++k) {
    const double w = model.weights[k];
    if (!std::isfinite(w) || w < 0.0 || w > 1.0)
      throw InvalidInput("model: weights[" + std::to_string(k) + "] = " + engine::format_number(w) +
                         " must be in [0, 1]");
    sum += w;
  }
  if (std::abs(sum - 1.0) > 1e-6)
    throw InvalidInput("model: weights sum to " + engine::format_number(sum) +
                       "; mixture weights must sum to 1 (within 1e-6)");
  if (model.parts.empty()) throw InvalidInput("model: \"parts\" is empty; give at least one part");
  std::vector<std::pair<std::size_t, std::size_t>> ranges;
  for (std::size_t i = 0; i < model.parts.size(); ++i) {
    const Part& p = model.parts[i];
    const std::string where = "model: parts[" + std::to_string(i) + "] (" + family_name(p.family) + ")";
    if (p.col_end <= p.col_begin)
      throw InvalidInput(where + ": \"columns\" [" + std::to_string(p.col_begin) + ", " + std::to_string(p.col_end) +
                         ") is empty; give [start, stop) with stop > start");
    for (const auto& [b, e] : ranges)
      if (p.col_begin < e && b < p.col_end)
        throw InvalidInput(where + ": columns [" + std::to_string(p.col_begin) + ", " + std::to_string(p.col_end) +
                           ") overlap another part's [" + std::to_string(b) + ", " + std::to_string(e) + ")");
    ranges.emplace_back(p.col_begin, p.col_end);
    engine::family_ops(p.family).validate(p, K, where);
  }
}

}  // namespace mixle
