// .npy header reading (a tiny parser for numpy's dict literal) and writing.
#include "host/data/npy_header.hpp"

#include <cctype>
#include <cstdint>
#include <cstring>
#include <limits>

#include "host/data/mapped_file.hpp"
#include "mixle/error.hpp"

namespace mixle::host {

namespace {

/// Recursive-descent parser over the header text; errors name the file.
class DictParser {
 public:
  DictParser(const std::string& path, const std::string& text) : path_(path), s_(text) {}

  void parse(NpyHeader& out) {
    bool have_descr = false, have_order = false, have_shape = false;
    skip_ws();
    expect('{');
    for (;;) {
      skip_ws();
      if (peek() == '}') break;
      const std::string key = parse_string();
      skip_ws();
      expect(':');
      skip_ws();
      if (key == "descr") {
        out.descr = peek() == '[' ? parse_bracketed() : parse_string();
        have_descr = true;
      } else if (key == "fortran_order") {
        out.fortran_order = parse_bool();
        have_order = true;
      } else if (key == "shape") {
        out.shape = parse_shape();
        have_shape = true;
      } else {
        fail("unexpected key '" + key + "'");
      }
      skip_ws();
      if (peek() == ',') ++pos_;
    }
    if (!have_descr || !have_order || !have_shape) {
      fail("the header lacks one of 'descr', 'fortran_order', 'shape'");
    }
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw InvalidInput(path_ + ": malformed .npy header (" + what + "): " + s_);
  }
  char peek() const { return pos_ < s_.size() ? s_[pos_] : '\0'; }
  void skip_ws() {
    while (pos_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[pos_]))) ++pos_;
  }
  void expect(char c) {
    if (peek() != c) fail(std::string("expected '") + c + "' at byte " + std::to_string(pos_));
    ++pos_;
  }
  std::string parse_string() {
    const char quote = peek();
    if (quote != '\'' && quote != '"') fail("expected a quoted string at byte " + std::to_string(pos_));
    const std::size_t end = s_.find(quote, pos_ + 1);
    if (end == std::string::npos) fail("unterminated string");
    std::string value = s_.substr(pos_ + 1, end - pos_ - 1);
    pos_ = end + 1;
    return value;
  }
  // A structured dtype such as [('a', '<f4'), ('b', '<i8')]: kept verbatim for the message.
  std::string parse_bracketed() {
    int depth = 0;
    const std::size_t start = pos_;
    do {
      if (pos_ >= s_.size()) fail("unterminated structured descr");
      if (s_[pos_] == '[') ++depth;
      if (s_[pos_] == ']') --depth;
      ++pos_;
    } while (depth > 0);
    return s_.substr(start, pos_ - start);
  }
  bool parse_bool() {
    if (s_.compare(pos_, 4, "True") == 0) {
      pos_ += 4;
      return true;
    }
    if (s_.compare(pos_, 5, "False") == 0) {
      pos_ += 5;
      return false;
    }
    fail("fortran_order is neither True nor False");
  }
  std::vector<std::size_t> parse_shape() {
    std::vector<std::size_t> shape;
    expect('(');
    for (;;) {
      skip_ws();
      if (peek() == ')') {
        ++pos_;
        return shape;
      }
      if (!std::isdigit(static_cast<unsigned char>(peek()))) fail("shape entries must be integers");
      const std::size_t start = pos_;
      std::size_t value = 0;
      bool overflow = false;
      while (std::isdigit(static_cast<unsigned char>(peek()))) {
        overflow |= __builtin_mul_overflow(value, std::size_t{10}, &value);
        overflow |= __builtin_add_overflow(value, static_cast<std::size_t>(s_[pos_++] - '0'), &value);
      }
      if (overflow)
        fail("shape entry " + s_.substr(start, pos_ - start) + " is larger than " +
             std::to_string(std::numeric_limits<std::size_t>::max()));
      if (peek() == 'L') ++pos_;  // Python 2 long suffix
      shape.push_back(value);
      skip_ws();
      if (peek() == ',')
        ++pos_;
      else if (peek() != ')')
        fail("expected ',' or ')' in shape");
    }
  }

  const std::string& path_;
  const std::string& s_;
  std::size_t pos_ = 0;
};

std::uint32_t read_le(const unsigned char* p, int bytes) {
  std::uint32_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

}  // namespace

NpyHeader read_npy_header(const ReadOnlyFile& file) {
  const std::string& path = file.path();
  if (file.size() == 0) throw InvalidInput(path + ": empty file: no data rows");
  unsigned char prefix[12] = {};
  const std::size_t got = file.read_at(0, prefix, sizeof prefix);
  if (got >= 4 && std::memcmp(prefix, "PK\x03\x04", 4) == 0) {
    throw InvalidInput(path +
                       " is a .npz archive (zip), which mixle does not read: save each "
                       "array as .npy (np.save(name, np.load(path)[key]))");
  }
  if (got < kNpyMagicSize + 2 || std::memcmp(prefix, kNpyMagic, kNpyMagicSize) != 0) {
    throw InvalidInput(path + " is not a .npy file (no \\x93NUMPY magic" +
                       std::string(got < kNpyMagicSize + 2 ? "; file too short" : "") + ")");
  }
  NpyHeader h;
  h.major_version = prefix[6];
  const std::size_t length_bytes = h.major_version == 1 ? 2 : 4;
  if (h.major_version < 1 || h.major_version > 3) {
    throw InvalidInput(path + ": unsupported .npy format version " + std::to_string(h.major_version) + "." +
                       std::to_string(prefix[7]) + " (accepted: 1.0, 2.0, 3.0)");
  }
  const std::size_t fixed = kNpyMagicSize + 2 + length_bytes;
  if (got < fixed) {
    throw InvalidInput(path + ": truncated .npy header (the file has " + std::to_string(file.size()) + " bytes)");
  }
  const std::size_t header_length = read_le(prefix + 8, static_cast<int>(length_bytes));
  h.data_offset = fixed + header_length;
  if (h.data_offset > file.size()) {
    throw InvalidInput(path + ": truncated .npy header (it declares " + std::to_string(header_length) +
                       " header bytes but the file has only " + std::to_string(file.size()) + " bytes)");
  }
  std::string text(header_length, '\0');
  file.read_at(fixed, text.data(), header_length);
  DictParser(path, text).parse(h);
  return h;
}

std::string make_npy_header(const std::string& descr, std::size_t rows, std::size_t cols) {
  std::string dict = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': (" + std::to_string(rows) + ", " +
                     std::to_string(cols) + "), }";
  const std::size_t fixed = kNpyMagicSize + 2 + 2;  // magic, version, uint16 length
  // Pad with spaces so that the data after the final '\n' starts on a 64-byte boundary.
  const std::size_t unpadded = fixed + dict.size() + 1;
  const std::size_t total = (unpadded + kNpyAlignment - 1) / kNpyAlignment * kNpyAlignment;
  dict.append(total - unpadded, ' ');
  dict.push_back('\n');
  const std::size_t header_length = dict.size();
  std::string out(kNpyMagic, kNpyMagicSize);
  out.push_back('\x01');
  out.push_back('\x00');
  out.push_back(static_cast<char>(header_length & 0xff));
  out.push_back(static_cast<char>((header_length >> 8) & 0xff));
  out += dict;
  return out;
}

}  // namespace mixle::host
