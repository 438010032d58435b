#include "io/json.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>

#include "io/tensor_record.h"
#include "tensor/error.h"

namespace qkv::io {

namespace {

// Kind names, indexed like Json's variant alternatives.
constexpr std::string_view kKindNames[] = {"null", "bool", "integer", "number", "string", "array", "object"};

// Length of the UTF-8 sequence starting at s[i], or 0 if it is malformed: truncated, a bad
// continuation byte, an overlong form, a UTF-16 surrogate or beyond U+10FFFF (RFC 3629 §4).
std::size_t utf8_sequence_length(std::string_view s, std::size_t i) {
  auto byte = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char b0 = byte(i);
  if (b0 < 0x80) return 1;
  std::size_t n;
  unsigned char lo = 0x80, hi = 0xBF;  // allowed range of the second byte
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    n = 2;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    n = 3;
    if (b0 == 0xE0) lo = 0xA0;  // overlong
    if (b0 == 0xED) hi = 0x9F;  // surrogates U+D800..U+DFFF
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    n = 4;
    if (b0 == 0xF0) lo = 0x90;  // overlong
    if (b0 == 0xF4) hi = 0x8F;  // beyond U+10FFFF
  } else {
    return 0;
  }
  if (i + n > s.size()) return 0;
  if (byte(i + 1) < lo || byte(i + 1) > hi) return 0;
  for (std::size_t k = 2; k < n; ++k)
    if ((byte(i + k) & 0xC0) != 0x80) return 0;
  return n;
}


class Parser {
 public:
  Parser(std::string_view text, const JsonLimits& limits) : text_(text), limits_(limits) {}

  Json parse_document() {
    if (text_.size() > limits_.max_bytes)
      throw FormatError("JSON: text is " + std::to_string(text_.size()) + " bytes, over the " +
                        std::to_string(limits_.max_bytes) + "-byte limit");
    Json value = parse_value(0);
    skip_whitespace();
    if (pos_ != text_.size()) fail("expected end of input after the value");
    return value;
  }

 private:
  [[noreturn]] void fail(std::string_view expected) const {
    fail_here(std::string(expected) + ", found " + describe_next());
  }

  [[noreturn]] void fail_here(const std::string& problem) const {
    throw FormatError("JSON: at byte " + std::to_string(pos_) + ": " + problem);
  }

  std::string describe_next() const {
    if (pos_ >= text_.size()) return "end of input";
    const unsigned char c = static_cast<unsigned char>(text_[pos_]);
    if (c >= 0x20 && c < 0x7F) return std::string("'") + static_cast<char>(c) + "'";
    char hex[8];
    std::snprintf(hex, sizeof hex, "0x%02X", c);
    return std::string("byte ") + hex;
  }

  bool at_end() const { return pos_ >= text_.size(); }
  char peek() const { return at_end() ? '\0' : text_[pos_]; }

  void skip_whitespace() {
    while (!at_end() && (peek() == ' ' || peek() == '\t' || peek() == '\n' || peek() == '\r')) ++pos_;
  }

  void expect(char c, std::string_view expected) {
    if (at_end() || peek() != c) fail(expected);
    ++pos_;
  }

  Json parse_value(std::size_t depth) {
    skip_whitespace();
    if (++values_ > limits_.max_values)
      fail_here("more than " + std::to_string(limits_.max_values) + " values (JsonLimits::max_values)");
    switch (peek()) {
      case '{':
        return parse_object(depth + 1);
      case '[':
        return parse_array(depth + 1);
      case '"':
        return Json(parse_string());
      case 't':
        return parse_literal("true", Json(true));
      case 'f':
        return parse_literal("false", Json(false));
      case 'n':
        return parse_literal("null", Json());
      default:
        if (peek() == '-' || (peek() >= '0' && peek() <= '9')) return parse_number();
        fail("expected a value");
    }
  }

  Json parse_literal(std::string_view word, Json value) {
    if (text_.substr(pos_, word.size()) != word) fail("expected '" + std::string(word) + "'");
    pos_ += word.size();
    return value;
  }

  void check_depth(std::size_t depth) const {
    if (depth > limits_.max_depth)
      fail_here("arrays and objects nested more than " + std::to_string(limits_.max_depth) +
                " deep (JsonLimits::max_depth)");
  }

  Json parse_array(std::size_t depth) {
    check_depth(depth);
    ++pos_;  // '['
    Json::Array items;
    skip_whitespace();
    if (peek() == ']') {
      ++pos_;
      return Json(std::move(items));
    }
    while (true) {
      items.push_back(parse_value(depth));
      skip_whitespace();
      if (peek() == ']') {
        ++pos_;
        return Json(std::move(items));
      }
      expect(',', "expected ',' or ']' after an array element");
    }
  }

  Json parse_object(std::size_t depth) {
    check_depth(depth);
    ++pos_;  // '{'
    Json::Object members;
    std::vector<std::size_t> key_offsets;  // where each key starts, to report a duplicate
    skip_whitespace();
    if (peek() == '}') {
      ++pos_;
      return Json(std::move(members));
    }
    while (true) {
      skip_whitespace();
      if (peek() != '"') fail("expected '\"' to start an object key");
      key_offsets.push_back(pos_);
      std::string key = parse_string();
      skip_whitespace();
      expect(':', "expected ':' after an object key");
      Json value = parse_value(depth);
      members.emplace_back(std::move(key), std::move(value));
      skip_whitespace();
      if (peek() == '}') {
        ++pos_;
        break;
      }
      expect(',', "expected ',' or '}' after an object member");
    }
    reject_duplicate_keys(members, key_offsets);
    return Json(std::move(members));
  }

  // Sorting the keys finds a duplicate in O(n log n): a hostile header with a million keys must
  // not take a million squared comparisons.
  void reject_duplicate_keys(const Json::Object& members, const std::vector<std::size_t>& key_offsets) {
    std::vector<std::size_t> order(members.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(),
                     [&](std::size_t a, std::size_t b) { return members[a].first < members[b].first; });
    for (std::size_t i = 1; i < order.size(); ++i) {
      if (members[order[i]].first == members[order[i - 1]].first) {
        pos_ = key_offsets[order[i]];
        fail_here("duplicate key " + in_quotes(members[order[i]].first) + " in an object");
      }
    }
  }

  uint32_t parse_hex4() {
    uint32_t v = 0;
    for (int k = 0; k < 4; ++k) {
      const char c = peek();
      uint32_t digit;
      if (c >= '0' && c <= '9')
        digit = c - '0';
      else if (c >= 'a' && c <= 'f')
        digit = c - 'a' + 10;
      else if (c >= 'A' && c <= 'F')
        digit = c - 'A' + 10;
      else
        fail("expected 4 hex digits after \\u");
      v = v * 16 + digit;
      ++pos_;
    }
    return v;
  }

  // Called on the opening quote; returns the decoded string.
  std::string parse_string() {
    ++pos_;  // '"'
    std::string out;
    while (true) {
      if (at_end()) fail("expected '\"' to close the string");
      const unsigned char c = static_cast<unsigned char>(text_[pos_]);
      if (c == '"') {
        ++pos_;
        return out;
      }
      if (c < 0x20) fail("expected a control character inside a string to be escaped");
      if (c == '\\') {
        ++pos_;
        parse_escape(out);
      } else if (c < 0x80) {
        out += static_cast<char>(c);
        ++pos_;
      } else {
        const std::size_t n = utf8_sequence_length(text_, pos_);
        if (n == 0) fail("expected valid UTF-8 in a string");
        out.append(text_.substr(pos_, n));
        pos_ += n;
      }
    }
  }

  void parse_escape(std::string& out) {
    const char c = peek();
    switch (c) {
      case '"':
        out += '"';
        break;
      case '\\':
        out += '\\';
        break;
      case '/':
        out += '/';
        break;
      case 'b':
        out += '\b';
        break;
      case 'f':
        out += '\f';
        break;
      case 'n':
        out += '\n';
        break;
      case 'r':
        out += '\r';
        break;
      case 't':
        out += '\t';
        break;
      case 'u': {
        ++pos_;
        const std::size_t start = pos_ - 2;
        uint32_t cp = parse_hex4();
        // Characters beyond U+FFFF are written as a UTF-16 surrogate pair (RFC 8259 §7).
        if (cp >= 0xDC00 && cp <= 0xDFFF) {
          pos_ = start;
          fail("expected a high surrogate (\\uD800-\\uDBFF) before a low one");
        }
        if (cp >= 0xD800 && cp <= 0xDBFF) {
          if (text_.substr(pos_, 2) != "\\u") fail("expected \\u and a low surrogate after a high one");
          pos_ += 2;
          const uint32_t low = parse_hex4();
          if (low < 0xDC00 || low > 0xDFFF) {
            pos_ -= 6;
            fail("expected a low surrogate (\\uDC00-\\uDFFF) after a high one");
          }
          cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
        }
        append_utf8(out, cp);
        return;
      }
      default:
        fail("expected an escape: one of \\\" \\\\ \\/ \\b \\f \\n \\r \\t \\uXXXX");
    }
    ++pos_;
  }

  // number = [ '-' ] int [ frac ] [ exp ]   (RFC 8259 §6)
  Json parse_number() {
    const std::size_t start = pos_;
    const bool negative = peek() == '-';
    if (negative) ++pos_;
    if (peek() == '0') {
      ++pos_;
      if (peek() >= '0' && peek() <= '9') fail("expected no leading zero in a number");
    } else if (peek() >= '1' && peek() <= '9') {
      while (peek() >= '0' && peek() <= '9') ++pos_;
    } else {
      fail("expected a digit");
    }
    bool integral = true;
    if (peek() == '.') {
      integral = false;
      ++pos_;
      if (!(peek() >= '0' && peek() <= '9')) fail("expected a digit after '.'");
      while (peek() >= '0' && peek() <= '9') ++pos_;
    }
    if (peek() == 'e' || peek() == 'E') {
      integral = false;
      ++pos_;
      if (peek() == '+' || peek() == '-') ++pos_;
      if (!(peek() >= '0' && peek() <= '9')) fail("expected a digit in the exponent");
      while (peek() >= '0' && peek() <= '9') ++pos_;
    }
    const std::string_view literal = text_.substr(start, pos_ - start);
    if (integral) {
      // Accumulate the magnitude in uint64 so that -9223372036854775808 is exact too.
      const uint64_t limit = negative ? uint64_t{1} << 63 : (uint64_t{1} << 63) - 1;
      uint64_t magnitude = 0;
      for (char c : literal.substr(negative ? 1 : 0)) {
        const uint64_t digit = static_cast<uint64_t>(c - '0');
        if (magnitude > (limit - digit) / 10) {
          pos_ = start;
          fail("expected an integer in int64 range");
        }
        magnitude = magnitude * 10 + digit;
      }
      return Json(negative ? static_cast<int64_t>(0 - magnitude) : static_cast<int64_t>(magnitude));
    }
    double value = 0;
    const auto [end, ec] = std::from_chars(literal.data(), literal.data() + literal.size(), value);
    if (ec != std::errc() || end != literal.data() + literal.size()) {
      pos_ = start;
      fail("expected a number in double range");
    }
    return Json(value);
  }

  std::string_view text_;
  JsonLimits limits_;
  std::size_t pos_ = 0;
  std::size_t values_ = 0;
};

void write_string(std::string& out, const std::string& s) {
  out += '"';
  for (std::size_t i = 0; i < s.size();) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c >= 0x80) {
      const std::size_t n = utf8_sequence_length(s, i);
      if (n == 0)
        throw ValueError("to_json: string has invalid UTF-8 at byte " + std::to_string(i) +
                         "; JSON text must be UTF-8");
      out.append(s, i, n);
      i += n;
      continue;
    }
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\f':
        out += "\\f";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (c < 0x20) {
          char escape[8];
          std::snprintf(escape, sizeof escape, "\\u%04x", c);
          out += escape;
        } else {
          out += static_cast<char>(c);
        }
    }
    ++i;
  }
  out += '"';
}

void write_value(std::string& out, const Json& value) {
  if (value.is_null()) {
    out += "null";
  } else if (value.is_bool()) {
    out += value.as_bool() ? "true" : "false";
  } else if (value.is_int()) {
    out += std::to_string(value.as_int());
  } else if (value.is_double()) {
    const double d = value.as_double();
    if (!std::isfinite(d)) throw ValueError("to_json: JSON has no NaN or infinity");
    char buf[32];
    const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, d);  // shortest round trip
    std::string_view text(buf, end - buf);
    out += text;
    // Keep the value a double when read back: "2" would parse as an integer.
    if (text.find_first_of(".e") == std::string_view::npos) out += ".0";
  } else if (value.is_string()) {
    write_string(out, value.as_string());
  } else if (value.is_array()) {
    out += '[';
    bool first = true;
    for (const Json& item : value.as_array()) {
      if (!first) out += ',';
      first = false;
      write_value(out, item);
    }
    out += ']';
  } else {
    out += '{';
    bool first = true;
    for (const auto& [key, item] : value.as_object()) {
      if (!first) out += ',';
      first = false;
      write_string(out, key);
      out += ':';
      write_value(out, item);
    }
    out += '}';
  }
}

}  // namespace

void append_utf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

bool is_valid_utf8(std::string_view s) {
  for (std::size_t i = 0; i < s.size();) {
    const std::size_t n = utf8_sequence_length(s, i);
    if (n == 0) return false;
    i += n;
  }
  return true;
}

std::string_view Json::kind_name() const { return kKindNames[value_.index()]; }

namespace {
template <typename T>
const T& get_as(const auto& v, std::string_view wanted, const Json& value) {
  if (const T* p = std::get_if<T>(&v)) return *p;
  throw ValueError("Json: " + kind_mismatch(wanted, value));
}
}  // namespace

std::string kind_mismatch(std::string_view wanted, const Json& found) {
  auto with_article = [](std::string_view kind) {
    if (kind == "null") return std::string(kind);
    return std::string(kind == "integer" || kind == "array" || kind == "object" ? "an " : "a ") +
           std::string(kind);
  };
  return "expected " + with_article(wanted) + ", found " + with_article(found.kind_name());
}

bool Json::as_bool() const { return get_as<bool>(value_, "bool", *this); }
int64_t Json::as_int() const { return get_as<int64_t>(value_, "integer", *this); }
double Json::as_double() const {
  if (is_int()) return static_cast<double>(std::get<int64_t>(value_));
  return get_as<double>(value_, "number", *this);
}
const std::string& Json::as_string() const { return get_as<std::string>(value_, "string", *this); }
const Json::Array& Json::as_array() const { return get_as<Array>(value_, "array", *this); }
Json::Array& Json::as_array() { return const_cast<Array&>(std::as_const(*this).as_array()); }
const Json::Object& Json::as_object() const { return get_as<Object>(value_, "object", *this); }
Json::Object& Json::as_object() { return const_cast<Object&>(std::as_const(*this).as_object()); }

const Json* Json::find(std::string_view key) const {
  for (const auto& [k, v] : as_object())
    if (k == key) return &v;
  return nullptr;
}

Json parse_json(std::string_view text, const JsonLimits& limits) {
  return Parser(text, limits).parse_document();
}

std::string to_json(const Json& value) {
  std::string out;
  write_value(out, value);
  return out;
}

}  // namespace qkv::io
