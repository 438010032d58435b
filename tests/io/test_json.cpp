// io/json: the parser and writer behind safetensors headers. Golden texts are written by hand
// from RFC 8259; UTF-8 byte sequences from the Unicode code charts.
#include <doctest/doctest.h>

#include <cstdint>
#include <limits>
#include <string>

#include "io/json.h"
#include "tensor/error.h"

using qkv::io::Json;
using qkv::io::parse_json;
using qkv::io::to_json;

namespace {

// The message of the FormatError that parsing `text` throws (fails the test if none is thrown).
std::string parse_error(std::string_view text, const qkv::io::JsonLimits& limits = {}) {
  try {
    parse_json(text, limits);
  } catch (const qkv::FormatError& e) {
    return e.what();
  }
  FAIL("no FormatError for: " << std::string(text));
  return "";
}

}  // namespace

TEST_CASE("json parses literals integers doubles and strings") {
  CHECK(parse_json("null").is_null());
  CHECK(parse_json("true").as_bool() == true);
  CHECK(parse_json(" false ").as_bool() == false);
  CHECK(parse_json("0").as_int() == 0);
  CHECK(parse_json("-0").as_int() == 0);
  CHECK(parse_json("42").as_int() == 42);
  CHECK(parse_json("1.5").as_double() == 1.5);
  CHECK(parse_json("-2.5e3").as_double() == -2500.0);
  CHECK(parse_json("1E2").is_double());
  CHECK(parse_json("1E2").as_double() == 100.0);
  CHECK(parse_json("\"abc\"").as_string() == "abc");
  CHECK(parse_json("[]").as_array().empty());
  CHECK(parse_json("{}").as_object().empty());
  CHECK(parse_json(" \t\r\n[1 , \"x\" ]\n").as_array().size() == 2);
}

TEST_CASE("json integers are exact over the whole int64 range") {
  // 2^63 - 1 and -2^63: a double would round both (it has 53 bits of mantissa).
  CHECK(parse_json("9223372036854775807").as_int() == INT64_MAX);
  CHECK(parse_json("-9223372036854775808").as_int() == INT64_MIN);
  CHECK(parse_json("9007199254740993").as_int() == 9007199254740993);  // 2^53 + 1
}

TEST_CASE("json integer beyond int64 is rejected rather than rounded") {
  CHECK(parse_error("9223372036854775808").find("int64") != std::string::npos);
  CHECK(parse_error("-9223372036854775809").find("int64") != std::string::npos);
  const std::string e = parse_error("[1, 99999999999999999999]");
  CHECK(e.find("at byte 4") != std::string::npos);
  CHECK(e.find("int64") != std::string::npos);
}

TEST_CASE("json double out of range is rejected") {
  CHECK(parse_error("1e400").find("double range") != std::string::npos);
}

TEST_CASE("json decodes escapes into UTF-8") {
  CHECK(parse_json(R"("\"\\\/\b\f\n\r\t")").as_string() == "\"\\/\b\f\n\r\t");
  CHECK(parse_json(R"("\u0041\u00e9\u20AC")").as_string() == "A\xC3\xA9\xE2\x82\xAC");  // A é €
  CHECK(parse_json(R"("\u0000")").as_string() == std::string(1, '\0'));
  // U+1F600 is the surrogate pair D83D DE00 in UTF-16 and F0 9F 98 80 in UTF-8.
  CHECK(parse_json(R"("\uD83D\uDE00")").as_string() == "\xF0\x9F\x98\x80");
}

TEST_CASE("json rejects lone and mismatched surrogates") {
  CHECK(parse_error(R"("\uD83D")").find("low surrogate") != std::string::npos);
  CHECK(parse_error(R"("\uD83Dx")").find("low surrogate") != std::string::npos);
  CHECK(parse_error(R"("\uD83D\u0041")").find("low surrogate") != std::string::npos);
  CHECK(parse_error(R"("\uDE00")").find("high surrogate") != std::string::npos);
  CHECK(parse_error(R"("\u12G4")").find("4 hex digits") != std::string::npos);
  CHECK(parse_error(R"("\x")").find("expected an escape") != std::string::npos);
}

TEST_CASE("json strings must be valid UTF-8 without raw control characters") {
  CHECK(parse_json("\"caf\xC3\xA9\"").as_string() == "caf\xC3\xA9");
  CHECK(parse_error("\"\xC3\x28\"").find("valid UTF-8") != std::string::npos);  // bad continuation
  CHECK(parse_error("\"\xC0\xAF\"").find("valid UTF-8") != std::string::npos);  // overlong '/'
  CHECK(parse_error("\"\xED\xA0\x80\"").find("valid UTF-8") != std::string::npos);  // U+D800
  CHECK(parse_error("\"\xF4\x90\x80\x80\"").find("valid UTF-8") !=
        std::string::npos);                                                     // > U+10FFFF
  CHECK(parse_error("\"\xE2\x82\"").find("valid UTF-8") != std::string::npos);  // truncated
  CHECK(parse_error("\"a\nb\"").find("control character") != std::string::npos);
  CHECK(qkv::io::is_valid_utf8("\xE2\x82\xAC"));
  CHECK_FALSE(qkv::io::is_valid_utf8("\xFF"));
}

TEST_CASE("json parse errors name the byte offset what was expected and what was found") {
  CHECK(parse_error(R"({"key"})") ==
        "JSON: at byte 6: expected ':' after an object key, found '}'");
  CHECK(parse_error(R"({"a" 1})") ==
        "JSON: at byte 5: expected ':' after an object key, found '1'");
  CHECK(parse_error("[1,2") ==
        "JSON: at byte 4: expected ',' or ']' after an array element, found end of input");
  CHECK(parse_error("[1,]") == "JSON: at byte 3: expected a value, found ']'");
  CHECK(parse_error("{1:2}") == "JSON: at byte 1: expected '\"' to start an object key, found '1'");
  CHECK(parse_error("{} x") == "JSON: at byte 3: expected end of input after the value, found 'x'");
  CHECK(parse_error("\xFF") == "JSON: at byte 0: expected a value, found byte 0xFF");
  CHECK(parse_error("").find("expected a value, found end of input") != std::string::npos);
  CHECK(parse_error("tru").find("expected 'true'") != std::string::npos);
  CHECK(parse_error("01").find("leading zero") != std::string::npos);
  CHECK(parse_error("1.").find("digit after '.'") != std::string::npos);
  CHECK(parse_error("-").find("expected a digit") != std::string::npos);
  CHECK(parse_error("1e+").find("exponent") != std::string::npos);
  CHECK(parse_error("\"abc").find("close the string") != std::string::npos);
}

TEST_CASE("json rejects duplicate keys naming the key and its offset") {
  CHECK(parse_error(R"({"a":1,"b":2,"a":3})") ==
        "JSON: at byte 13: duplicate key 'a' in an object");
  CHECK_NOTHROW(parse_json(R"({"a":{"a":1},"b":{"a":2}})"));  // same key in different objects
}

TEST_CASE("json objects keep their member order") {
  const Json v = parse_json(R"({"b":1,"a":2,"c":3})");
  const Json::Object& members = v.as_object();
  REQUIRE(members.size() == 3);
  CHECK(members[0].first == "b");
  CHECK(members[1].first == "a");
  CHECK(members[2].first == "c");
  CHECK(v.find("a")->as_int() == 2);
  CHECK(v.find("z") == nullptr);
  CHECK(to_json(v) == R"({"b":1,"a":2,"c":3})");
}

TEST_CASE("json nesting depth is limited so hostile input cannot overflow the stack") {
  const std::string deep(1'000'000, '[');
  CHECK(parse_error(deep).find("nested more than 128 deep") != std::string::npos);
  std::string objects;
  for (int i = 0; i < 100'000; ++i) objects += R"({"a":)";
  CHECK(parse_error(objects).find("nested more than 128 deep") != std::string::npos);
  // Exactly at the limit is fine.
  const std::string ok = std::string(128, '[') + std::string(128, ']');
  CHECK_NOTHROW(parse_json(ok));
  CHECK(parse_error("[" + ok + "]").find("nested more than 128") != std::string::npos);
}

TEST_CASE("json size and value count limits are enforced") {
  qkv::io::JsonLimits limits;
  limits.max_bytes = 8;
  CHECK(parse_error("[1,2,3,4,5]", limits).find("over the 8-byte limit") != std::string::npos);
  limits = {};
  limits.max_values = 4;
  CHECK_NOTHROW(parse_json("[1,2,3]", limits));  // the array and its three elements
  CHECK(parse_error("[1,2,3,4]", limits).find("more than 4 values") != std::string::npos);
}

TEST_CASE("json writer produces compact text with escapes") {
  const Json v = Json::Object{
      {"name", "a\"b\\c\n\x01\xC3\xA9"},
      {"list", Json::Array{1, -2, 2.5, true, false, nullptr}},
      {"empty", Json::Object{}},
  };
  CHECK(to_json(v) == R"({"name":"a\"b\\c\n\u0001)"
                      "\xC3\xA9"
                      R"(","list":[1,-2,2.5,true,false,null],"empty":{}})");
}

TEST_CASE("json writer keeps doubles distinguishable from integers") {
  CHECK(to_json(Json(2.0)) == "2.0");
  CHECK(to_json(Json(0.1)) == "0.1");  // shortest text that reads back to the same double
  CHECK(to_json(Json(1e300)) == "1e+300");
  CHECK(to_json(Json(int64_t{2})) == "2");
  CHECK(parse_json(to_json(Json(2.0))).is_double());
}

TEST_CASE("json writer rejects what JSON cannot carry") {
  CHECK_THROWS_AS(to_json(Json(std::numeric_limits<double>::quiet_NaN())), qkv::ValueError);
  CHECK_THROWS_AS(to_json(Json(std::numeric_limits<double>::infinity())), qkv::ValueError);
  CHECK_THROWS_AS(to_json(Json("\xFF")), qkv::ValueError);
}

TEST_CASE("json round trips through text") {
  const Json v = Json::Object{
      {"ints", Json::Array{INT64_MIN, INT64_MAX, 0}},
      {"doubles", Json::Array{0.1, -1e-300, 123456.789}},
      {"text", "tab\t nul" + std::string(1, '\0') + " \xF0\x9F\x98\x80"},
      {"nested", Json::Object{{"x", Json::Array{Json::Array{}, Json::Object{}}}}},
  };
  CHECK(parse_json(to_json(v)) == v);
}

TEST_CASE("json accessors of the wrong kind throw ValueError naming both kinds") {
  try {
    parse_json("[1]").as_string();
    FAIL("no throw");
  } catch (const qkv::ValueError& e) {
    CHECK(std::string(e.what()) == "Json: expected a string, found an array");
  }
  CHECK_THROWS_AS(parse_json("1.5").as_int(), qkv::ValueError);
  CHECK(parse_json("3").as_double() == 3.0);
  CHECK_THROWS_AS(parse_json("3").find("a"), qkv::ValueError);
}
