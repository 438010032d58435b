// A small JSON value with its own parser and writer: enough for safetensors headers and config
// files, with the checks hostile input needs. It follows RFC 8259 with three deliberate choices:
//  - a duplicate key in an object is an error (RFC 8259 §4 leaves the meaning open; safetensors
//    forbids duplicates, and a checkpoint must not mean two things);
//  - a number without fraction or exponent is an integer, kept exactly as int64; one that does
//    not fit is an error rather than a silently rounded double (offsets and shapes must be exact);
//  - nesting, text length and value count are bounded (JsonLimits), so deep input cannot
//    overflow the stack and a small file cannot ask for gigabytes.
// Objects keep their members in order, so writing is deterministic.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace qkv::io {

class Json {
 public:
  using Array = std::vector<Json>;
  using Object = std::vector<std::pair<std::string, Json>>;  // members in order

  Json() = default;  // null
  Json(std::nullptr_t) {}
  Json(bool b) : value_(b) {}
  Json(int i) : value_(int64_t{i}) {}
  Json(int64_t i) : value_(i) {}
  Json(double d) : value_(d) {}
  Json(const char* s) : value_(std::string(s)) {}
  Json(std::string s) : value_(std::move(s)) {}
  Json(Array a) : value_(std::move(a)) {}
  Json(Object o) : value_(std::move(o)) {}

  bool is_null() const { return std::holds_alternative<std::nullptr_t>(value_); }
  bool is_bool() const { return std::holds_alternative<bool>(value_); }
  bool is_int() const { return std::holds_alternative<int64_t>(value_); }
  bool is_double() const { return std::holds_alternative<double>(value_); }
  bool is_string() const { return std::holds_alternative<std::string>(value_); }
  bool is_array() const { return std::holds_alternative<Array>(value_); }
  bool is_object() const { return std::holds_alternative<Object>(value_); }

  // Accessors throw ValueError naming both kinds when the value is of another kind.
  // as_double() also accepts an integer.
  bool as_bool() const;
  int64_t as_int() const;
  double as_double() const;
  const std::string& as_string() const;
  const Array& as_array() const;
  Array& as_array();
  const Object& as_object() const;
  Object& as_object();

  // The value of the member named `key`, or nullptr when absent. Throws unless an object.
  const Json* find(std::string_view key) const;

  // "null", "bool", "integer", "number", "string", "array" or "object": for error messages.
  std::string_view kind_name() const;

  friend bool operator==(const Json&, const Json&) = default;

 private:
  std::variant<std::nullptr_t, bool, int64_t, double, std::string, Array, Object> value_;
};

struct JsonLimits {
  std::size_t max_bytes = 100'000'000;  // the safetensors header limit
  std::size_t max_depth = 128;          // arrays and objects nested inside each other
  std::size_t max_values = 1'000'000;   // each costs ~40 bytes in memory: bounds it at ~40 MB
};

// "expected an integer, found a string": what the accessors say, without their "Json: " prefix,
// for a reader that names the file and the key itself. `wanted` is a kind_name().
std::string kind_mismatch(std::string_view wanted, const Json& found);

// Parses one JSON value (surrounded by optional whitespace). Throws FormatError naming the byte
// offset, what was expected and what was found: for {"key"} that is "JSON: at byte 6: expected
// ':' after an object key, found '}'". Strings must be valid UTF-8; \uXXXX escapes (surrogate pairs
// included) are decoded to UTF-8.
Json parse_json(std::string_view text, const JsonLimits& limits = {});

// True if `s` is well-formed UTF-8 (RFC 3629), as every JSON text and string must be.
bool is_valid_utf8(std::string_view s);

// Appends the UTF-8 bytes of the code point cp (at most U+10FFFF) to out.
void append_utf8(std::string& out, uint32_t cp);

// Compact text, no spaces, members in order: {"a":[1,2.5,"x"]}. Non-ASCII characters are written
// as UTF-8; '"', '\\' and control characters are escaped. Throws ValueError for a NaN or infinite
// number or a string that is not valid UTF-8, which JSON cannot carry.
std::string to_json(const Json& value);

}  // namespace qkv::io
