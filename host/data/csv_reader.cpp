// CSV / TSV / whitespace-separated text: optional header, '#' comments, nan/inf, row ranges.
// The file is memory-mapped and scanned line by line; only rows inside the requested range
// have their numbers parsed.
#include <charconv>
#include <cstring>
#include <string_view>
#include <system_error>
#include <vector>

#include "host/data/mapped_file.hpp"
#include "host/data/readers.hpp"
#include "mixle/error.hpp"

namespace mixle::host {

namespace {

enum class Delimiter { comma, tab, whitespace };

bool is_blank(char c) { return c == ' ' || c == '\t' || c == '\r'; }

std::string_view trim(std::string_view s) {
  while (!s.empty() && is_blank(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_blank(s.back())) s.remove_suffix(1);
  return s;
}

/// Yields the lines of a text buffer with 1-based line numbers, '\r\n' tolerated.
class LineScanner {
 public:
  LineScanner(const char* begin, const char* end) : p_(begin), end_(end) {
    if (end_ - p_ >= 3 && std::memcmp(p_, "\xEF\xBB\xBF", 3) == 0) p_ += 3;  // UTF-8 BOM
  }
  bool next(std::string_view& line, std::size_t& line_no) {
    if (p_ >= end_) return false;
    const auto* nl = static_cast<const char*>(std::memchr(p_, '\n', static_cast<std::size_t>(end_ - p_)));
    const char* stop = nl != nullptr ? nl : end_;
    line = std::string_view(p_, static_cast<std::size_t>(stop - p_));
    p_ = nl != nullptr ? nl + 1 : end_;
    line_no = ++line_no_;
    return true;
  }

 private:
  const char* p_;
  const char* end_;
  std::size_t line_no_ = 0;
};

/// Calls f(field) for each trimmed field of a trimmed, non-empty line; returns the count.
template <class F>
std::size_t for_each_field(std::string_view line, Delimiter delim, F&& f) {
  std::size_t count = 0;
  if (delim == Delimiter::whitespace) {
    std::size_t i = 0;
    while (i < line.size()) {
      while (i < line.size() && is_blank(line[i])) ++i;
      std::size_t j = i;
      while (j < line.size() && !is_blank(line[j])) ++j;
      if (j > i) {
        f(line.substr(i, j - i));
        ++count;
      }
      i = j;
    }
    return count;
  }
  const char sep = delim == Delimiter::comma ? ',' : '\t';
  for (;;) {
    const std::size_t pos = line.find(sep);
    f(trim(line.substr(0, pos)));
    ++count;
    if (pos == std::string_view::npos) return count;
    line.remove_prefix(pos + 1);
  }
}

/// Parses a whole field as a number (from_chars: locale-free; accepts nan, inf, -inf in any
/// case); a leading '+' is allowed too. Returns errc{} on success, result_out_of_range for a
/// number the type cannot hold, invalid_argument otherwise.
template <class T>
std::errc parse_number(std::string_view field, T& out) {
  const char* b = field.data();
  const char* e = b + field.size();
  if (b != e && *b == '+') ++b;
  if (b == e || (*b == '-' && field.front() == '+')) return std::errc::invalid_argument;  // "+-1"
  const auto [p, ec] = std::from_chars(b, e, out);
  if (p != e) return std::errc::invalid_argument;  // trailing text, or nothing parsed
  return ec;
}

bool is_numeric_row(std::string_view line, Delimiter delim) {
  bool numeric = true;
  for_each_field(line, delim, [&](std::string_view f) {
    double v;
    numeric = numeric && parse_number(f, v) != std::errc::invalid_argument;
  });
  return numeric;
}

Delimiter choose_delimiter(const std::string& path, std::string_view first_line) {
  if (is_tsv(path)) return Delimiter::tab;
  if (first_line.find(',') != std::string_view::npos) return Delimiter::comma;
  if (first_line.find('\t') != std::string_view::npos) return Delimiter::tab;
  return Delimiter::whitespace;  // np.savetxt's default; also a single column
}

std::string quoted(std::string_view text) {
  constexpr std::size_t kMaxShown = 40;  // keep messages readable for runaway fields
  std::string out = "\"";
  out.append(text.substr(0, kMaxShown));
  if (text.size() > kMaxShown) out += "...";
  return out + "\"";
}

struct CsvShape {
  std::size_t rows = 0;  // data rows seen (all of them when probing or reading to the end)
  std::size_t cols = 0;
};

/// One pass over the text. probe: counts the fields of every row and parses nothing but the
/// first line (header detection). Otherwise parses the rows in [row_begin, row_end) into
/// `values` and stops at row_end; rows before row_begin are only recognised as data lines.
template <class T>
CsvShape scan_csv(const std::string& path, const char* begin, const char* end, const ReadOptions& options, bool probe,
                  std::vector<T>* values) {
  LineScanner lines(begin, end);
  std::string_view raw;
  std::size_t line_no = 0;
  bool have_delimiter = false;
  Delimiter delim = Delimiter::comma;
  CsvShape shape;
  std::size_t cols_line = 0;
  bool cols_from_header = false;
  while (lines.next(raw, line_no)) {
    const std::string_view line = trim(raw);
    if (line.empty() || line.front() == '#') continue;
    if (!have_delimiter) {
      delim = choose_delimiter(path, line);
      have_delimiter = true;
      if (!is_numeric_row(line, delim)) {  // a field that is not a number: a header line
        shape.cols = for_each_field(line, delim, [](std::string_view) {});
        cols_line = line_no;
        cols_from_header = true;
        continue;
      }
    }
    if (!probe && options.row_end && shape.rows >= *options.row_end) break;
    const bool parse = !probe && shape.rows >= options.row_begin;
    if (!probe && !parse && shape.cols != 0) {
      ++shape.rows;  // outside the range: no parsing, no field checks
      continue;
    }
    std::size_t n = 0;
    if (parse) {
      for_each_field(line, delim, [&](std::string_view field) {  // counts into n as it parses
        T v;
        const std::errc ec = parse_number(field, v);
        if (ec != std::errc()) {
          throw InvalidInput(path + ":" + std::to_string(line_no) + ": column " + std::to_string(n + 1) + ": " +
                             quoted(field) +
                             (ec == std::errc::result_out_of_range
                                  ? std::string(" is out of range for ") + (sizeof(T) == 4 ? "f32" : "f64")
                                  : std::string(" is not a number")));
        }
        values->push_back(v);
        ++n;
      });
    } else {
      n = for_each_field(line, delim, [](std::string_view) {});
    }
    if (shape.cols == 0) {
      shape.cols = n;
      cols_line = line_no;
    } else if (n != shape.cols) {
      throw InvalidInput(path + ":" + std::to_string(line_no) + ": row has " + std::to_string(n) + " fields, but the " +
                         (cols_from_header ? "header" : "first data row") + " (line " + std::to_string(cols_line) +
                         ") has " + std::to_string(shape.cols));
    }
    ++shape.rows;
  }
  return shape;
}

/// The whole file mapped (empty files have nothing to map).
struct CsvText {
  std::shared_ptr<const void> mapping;
  const char* begin = nullptr;
  const char* end = nullptr;
};

CsvText map_text(const ReadOnlyFile& file) {
  CsvText text;
  if (file.size() == 0) return text;
  text.mapping = file.map(0, file.size());
  text.begin = static_cast<const char*>(text.mapping.get());
  text.end = text.begin + file.size();
  return text;
}

template <class T>
Dataset read_typed(const std::string& path, const ReadOptions& options) {
  ReadOnlyFile file(path);
  const CsvText text = map_text(file);
  auto values = std::make_shared<std::vector<T>>();
  const CsvShape shape = scan_csv(path, text.begin, text.end, options, false, values.get());
  const RowRange range = resolve_row_range(path, options, shape.rows);
  const std::size_t rows = range.end - range.begin;
  const void* data = values->data();
  return Dataset::from_storage(std::move(values), data, sizeof(T) == 4 ? DType::f32 : DType::f64, rows, shape.cols,
                               path, range.begin);
}

}  // namespace

DataInfo probe_csv(const std::string& path, const ReadOptions& options) {
  ReadOnlyFile file(path);
  const CsvText text = map_text(file);
  const CsvShape shape = scan_csv<double>(path, text.begin, text.end, options, true, nullptr);
  if (shape.rows == 0) throw InvalidInput(path + ": no data rows");
  return DataInfo{path, DataFormat::csv, options.csv_dtype, shape.rows, shape.cols};
}

Dataset read_csv(const std::string& path, const ReadOptions& options) {
  if (options.csv_dtype == DType::f32) return read_typed<float>(path, options);
  return read_typed<double>(path, options);
}

}  // namespace mixle::host
