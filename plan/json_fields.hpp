// Strict readers for JSON fields (plan/ internal). Each names the field and the offending value
// and says what would be accepted, and none coerces: 1.9 and true are not integers.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace mixle::plan::detail {

using Json = nlohmann::json;

/// "<context>.<field>" (or just field when context is empty).
std::string field_path(std::string_view context, std::string_view field);
/// A short rendering of a JSON value for messages.
std::string describe(const Json& value);

/// A JSON text holds no NUL byte, yet the JSON reader stops at the first one as if the text
/// ended there: a file padded with zeros after a crash, or a valid document followed by
/// anything behind a NUL, would read as valid. InvalidInput naming `what` and the byte's offset.
void refuse_nul_bytes(std::string_view text, std::string_view what);
/// Parses text as one JSON object; InvalidInput naming `what` otherwise.
Json parse_object(std::string_view text, std::string_view what);
/// obj[field] must exist.
const Json& require(const Json& obj, std::string_view context, std::string_view field);

/// An exact integer ≥ min (bools and floats refused).
std::int64_t as_int(const Json& value, std::string_view path, std::int64_t min);
std::uint64_t as_uint(const Json& value, std::string_view path);
/// A finite number (integer or float; not bool).
double as_number(const Json& value, std::string_view path);
std::string as_string(const Json& value, std::string_view path, bool allow_blank = false);
bool as_bool(const Json& value, std::string_view path);

/// Field readers: missing or null → `fallback` / nullopt.
std::int64_t get_int(const Json& obj, std::string_view context, std::string_view field, std::int64_t min,
                     std::optional<std::int64_t> fallback = {});
std::uint64_t get_uint(const Json& obj, std::string_view context, std::string_view field,
                       std::optional<std::uint64_t> fallback = {});
std::optional<std::int64_t> get_opt_int(const Json& obj, std::string_view context, std::string_view field,
                                        std::int64_t min);
std::optional<std::uint64_t> get_opt_uint(const Json& obj, std::string_view context, std::string_view field);
double get_number(const Json& obj, std::string_view context, std::string_view field,
                  std::optional<double> fallback = {});
std::optional<double> get_opt_number(const Json& obj, std::string_view context, std::string_view field);
std::string get_string(const Json& obj, std::string_view context, std::string_view field,
                       std::optional<std::string> fallback = {});
std::optional<std::string> get_opt_string(const Json& obj, std::string_view context, std::string_view field);
bool get_bool(const Json& obj, std::string_view context, std::string_view field, std::optional<bool> fallback = {});

/// Writes text to path atomically: a temporary file in the same folder, then rename.
void write_text_atomic(const std::string& path, const std::string& text);
/// Reads a whole file; InvalidInput naming the path when it cannot be read.
std::string read_text(const std::string& path);

}  // namespace mixle::plan::detail
