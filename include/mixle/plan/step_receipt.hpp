// StepReceipt: accounting for one committed (or skipped) update — one EM iteration or one
// optimizer step — written as one JSON line per step (`--receipts FILE`).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

namespace mixle::plan {

/// A scalar value of StepReceipt::extra (JSON null, bool, integer, number or string).
using ReceiptValue = std::variant<std::nullptr_t, bool, std::int64_t, double, std::string>;

struct StepReceipt {
  std::int64_t step = 0;                ///< ≥ 0: updates committed before this one
  double loss = 0;                      ///< finite ≥ 0 (EM: negative mean log-likelihood shifted ≥ 0 by the caller)
  std::int64_t local_examples = 0;      ///< ≥ 0, this rank's rows/examples
  std::int64_t local_tokens = 0;        ///< ≥ 0
  std::int64_t microbatches = 1;        ///< ≥ 1
  std::int64_t accumulation_steps = 1;  ///< ≥ 1
  std::int64_t data_parallel_size = 1;  ///< ≥ 1
  std::string optimizer;                ///< non-blank ("em" for EM iterations)
  std::string precision;                ///< non-blank
  std::int64_t collective_bytes = 0;    ///< ≥ 0, bytes this rank sent in collectives
  bool skipped = false;
  std::map<std::string, ReceiptValue> extra;
  std::optional<std::int64_t> global_examples_observed;  ///< ≥ 0 when set
  std::optional<std::int64_t> global_tokens_observed;    ///< ≥ 0 when set

  /// InvalidInput naming the field and value (negative counts, loss NaN or < 0, step < 0, …).
  void validate() const;
  /// Observed value if set, else local_examples · data_parallel_size.
  std::int64_t global_examples() const noexcept;
  std::int64_t global_tokens() const noexcept;
  /// One line of JSON (no newline inside); doubles round-trip exactly.
  std::string to_json_line() const;
  /// Exact integers only for the integer fields (1.5 and true are rejected); extra must hold
  /// scalars.
  static StepReceipt from_json(std::string_view text);
  bool operator==(const StepReceipt&) const = default;
};

}  // namespace mixle::plan
