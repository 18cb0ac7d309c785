#include "plan/json_fields.hpp"

#include <mixle/error.hpp>

#include <atomic>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>
#include <sstream>

namespace mixle::plan::detail {

std::string field_path(std::string_view context, std::string_view field) {
  if (context.empty()) return std::string(field);
  return std::string(context) + "." + std::string(field);
}

std::string describe(const Json& value) {
  std::string text = value.dump();
  constexpr std::size_t kMaxShown = 80;  // keep messages readable for large values
  if (text.size() > kMaxShown) text = text.substr(0, kMaxShown) + "…";
  return text;
}

void refuse_nul_bytes(std::string_view text, std::string_view what) {
  const std::size_t at = text.find('\0');
  if (at == std::string_view::npos) return;
  throw InvalidInput(std::string(what) + ": a NUL byte at byte offset " + std::to_string(at) + " (of " +
                     std::to_string(text.size()) +
                     "); a JSON text has none — the file may be padded or torn by a crash");
}

Json parse_object(std::string_view text, std::string_view what) {
  refuse_nul_bytes(text, what);
  Json doc;
  try {
    doc = Json::parse(text.begin(), text.end());
  } catch (const Json::exception& e) {  // syntax, or a number beyond double's range (out_of_range)
    throw InvalidInput(std::string(what) + " is not valid JSON (" + e.what() + "); expected a JSON object");
  }
  if (!doc.is_object()) {
    throw InvalidInput(std::string(what) + " must be a JSON object, got " + describe(doc));
  }
  return doc;
}

const Json& require(const Json& obj, std::string_view context, std::string_view field) {
  auto it = obj.find(field);
  if (it == obj.end()) {
    throw InvalidInput("missing field " + field_path(context, field) + "; it is required");
  }
  return *it;
}

std::int64_t as_int(const Json& value, std::string_view path, std::int64_t min) {
  std::int64_t out = 0;
  if (value.is_number_integer()) {
    if (value.is_number_unsigned() &&
        value.get<std::uint64_t>() > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
      throw InvalidInput(std::string(path) + "=" + describe(value) + " is too large; accepted: an integer below 2^63");
    }
    out = value.get<std::int64_t>();
  } else {
    throw InvalidInput(std::string(path) + "=" + describe(value) + " is not an exact integer; accepted: an integer ≥ " +
                       std::to_string(min) + " (no fractions, no booleans)");
  }
  if (out < min) {
    throw InvalidInput(
        std::string(path) + "=" + std::to_string(out) + " is out of range; " +
        (min == 0 ? "accepted: a non-negative integer" : "accepted: an integer ≥ " + std::to_string(min)));
  }
  return out;
}

std::uint64_t as_uint(const Json& value, std::string_view path) {
  if (value.is_number_unsigned()) return value.get<std::uint64_t>();
  if (value.is_number_integer()) {
    throw InvalidInput(std::string(path) + "=" + describe(value) + " is negative; accepted: a non-negative integer");
  }
  throw InvalidInput(std::string(path) + "=" + describe(value) +
                     " is not an exact integer; accepted: a non-negative integer (no fractions, "
                     "no booleans)");
}

double as_number(const Json& value, std::string_view path) {
  if (!value.is_number()) {
    throw InvalidInput(std::string(path) + "=" + describe(value) + " is not a number; accepted: a finite number");
  }
  double out = value.get<double>();
  if (!std::isfinite(out)) {
    throw InvalidInput(std::string(path) + "=" + describe(value) + " is not finite; accepted: a finite number");
  }
  return out;
}

std::string as_string(const Json& value, std::string_view path, bool allow_blank) {
  if (!value.is_string()) {
    throw InvalidInput(std::string(path) + "=" + describe(value) + " is not a string; accepted: a non-blank string");
  }
  std::string out = value.get<std::string>();
  if (!allow_blank && out.find_first_not_of(" \t\r\n") == std::string::npos) {
    throw InvalidInput(std::string(path) + "=" + describe(value) + " is blank; accepted: a non-blank string");
  }
  return out;
}

bool as_bool(const Json& value, std::string_view path) {
  if (!value.is_boolean()) {
    throw InvalidInput(std::string(path) + "=" + describe(value) + " is not a boolean; accepted: true or false");
  }
  return value.get<bool>();
}

namespace {
const Json* find_set(const Json& obj, std::string_view field) {
  auto it = obj.find(field);
  if (it == obj.end() || it->is_null()) return nullptr;
  return &*it;
}
[[noreturn]] void missing(std::string_view context, std::string_view field) {
  throw InvalidInput("missing field " + field_path(context, field) + "; it is required");
}
}  // namespace

std::int64_t get_int(const Json& obj, std::string_view context, std::string_view field, std::int64_t min,
                     std::optional<std::int64_t> fallback) {
  if (const Json* v = find_set(obj, field)) return as_int(*v, field_path(context, field), min);
  if (fallback) return *fallback;
  missing(context, field);
}

std::uint64_t get_uint(const Json& obj, std::string_view context, std::string_view field,
                       std::optional<std::uint64_t> fallback) {
  if (const Json* v = find_set(obj, field)) return as_uint(*v, field_path(context, field));
  if (fallback) return *fallback;
  missing(context, field);
}

std::optional<std::int64_t> get_opt_int(const Json& obj, std::string_view context, std::string_view field,
                                        std::int64_t min) {
  if (const Json* v = find_set(obj, field)) return as_int(*v, field_path(context, field), min);
  return std::nullopt;
}

std::optional<std::uint64_t> get_opt_uint(const Json& obj, std::string_view context, std::string_view field) {
  if (const Json* v = find_set(obj, field)) return as_uint(*v, field_path(context, field));
  return std::nullopt;
}

double get_number(const Json& obj, std::string_view context, std::string_view field, std::optional<double> fallback) {
  if (const Json* v = find_set(obj, field)) return as_number(*v, field_path(context, field));
  if (fallback) return *fallback;
  missing(context, field);
}

std::optional<double> get_opt_number(const Json& obj, std::string_view context, std::string_view field) {
  if (const Json* v = find_set(obj, field)) return as_number(*v, field_path(context, field));
  return std::nullopt;
}

std::string get_string(const Json& obj, std::string_view context, std::string_view field,
                       std::optional<std::string> fallback) {
  if (const Json* v = find_set(obj, field)) return as_string(*v, field_path(context, field));
  if (fallback) return *fallback;
  missing(context, field);
}

std::optional<std::string> get_opt_string(const Json& obj, std::string_view context, std::string_view field) {
  if (const Json* v = find_set(obj, field)) return as_string(*v, field_path(context, field));
  return std::nullopt;
}

bool get_bool(const Json& obj, std::string_view context, std::string_view field, std::optional<bool> fallback) {
  if (const Json* v = find_set(obj, field)) return as_bool(*v, field_path(context, field));
  if (fallback) return *fallback;
  missing(context, field);
}

void write_text_atomic(const std::string& path, const std::string& text) {
  namespace fs = std::filesystem;
  const fs::path target(path);
  if (target.filename().empty()) {
    throw InvalidInput("cannot write '" + path + "': it names a folder; accepted: a file path");
  }
  // The temporary file sits next to the target so that the rename stays on one filesystem
  // (and so is atomic); a random suffix keeps concurrent writers apart.
  static std::atomic<unsigned> counter{0};
  std::random_device entropy;
  std::ostringstream suffix;
  suffix << ".tmp-" << std::hex << entropy() << "-" << counter.fetch_add(1);
  fs::path temporary = target;
  temporary += suffix.str();
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    if (!out) throw Error("cannot create '" + temporary.string() + "' to write '" + path + "'");
    out << text;
    out.flush();
    if (!out) {
      std::error_code ignored;
      fs::remove(temporary, ignored);
      throw Error("writing '" + path + "' failed (disk full?)");
    }
  }
  std::error_code ec;
  fs::rename(temporary, target, ec);
  if (ec) {
    std::error_code ignored;
    fs::remove(temporary, ignored);
    throw Error("cannot replace '" + path + "': " + ec.message());
  }
}

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InvalidInput("cannot open '" + path + "' for reading; check that the file exists");
  std::ostringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

}  // namespace mixle::plan::detail
