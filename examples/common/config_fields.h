// A program's settings kept as one list of fields, so that config.json is written and read from the
// same list: `for_each_field(c, f)` calls f("key", c.field) for every field, and
//   fields_to_json(c, for_each_field)                       writes them in that order;
//   fields_from_json(json, source, program, c, for_each_field)  reads strictly: every key once, of
//                                                           its kind (string, number, integer), no other.
// The checks name the key and its option (key d_model is --d-model): "d_model (--d-model) is 0;
// expected 1 .. 4096".
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "io/json.h"
#include "tensor/error.h"

namespace qkv::examples {

// "d_model (--d-model)"
std::string option_of(const std::string& key);
void check_int(const std::string& key, int64_t value, int64_t lo, int64_t hi);
void check_number(const std::string& key, double value, double lo, double hi, bool open_lo = false);
void check_name(const std::string& key, const std::string& value, const std::vector<std::string>& known);

template <class C, class ForEach>
io::Json fields_to_json(C c, ForEach&& for_each_field) {
  io::Json::Object members;
  for_each_field(c, [&](const char* name, auto& value) {
    using V = std::decay_t<decltype(value)>;
    if constexpr (std::is_same_v<V, std::string>) members.emplace_back(name, io::Json(value));
    else if constexpr (std::is_same_v<V, bool>) members.emplace_back(name, io::Json(value));
    else if constexpr (std::is_floating_point_v<V>) members.emplace_back(name, io::Json(static_cast<double>(value)));
    else members.emplace_back(name, io::Json(static_cast<int64_t>(value)));
  });
  return io::Json(std::move(members));
}

// Fills c from json; ValueError "SOURCE: ..." naming the key. `program` names whose config it is,
// with its article ("an lm": "is this an lm run?").
template <class C, class ForEach>
void fields_from_json(const io::Json& json, const std::string& source, const std::string& program, C& c,
                      ForEach&& for_each_field) {
  auto fail = [&](const std::string& what) { throw ValueError(source + ": " + what); };
  if (!json.is_object()) fail("expected an object of settings, found " + std::string(json.kind_name()));
  std::vector<std::string> seen;
  for (const auto& [key, value] : json.as_object()) {
    if (std::find(seen.begin(), seen.end(), key) != seen.end()) fail("key '" + key + "' appears twice");
    seen.push_back(key);
    bool known = false;
    for_each_field(c, [&](const char* name, auto& field) {
      if (key != name) return;
      known = true;
      using V = std::decay_t<decltype(field)>;
      auto wrong_kind = [&](const char* wanted) { fail("key '" + key + "': " + io::kind_mismatch(wanted, value)); };
      if constexpr (std::is_same_v<V, std::string>) {
        if (!value.is_string()) wrong_kind("string");
        field = value.as_string();
      } else if constexpr (std::is_same_v<V, bool>) {
        if (!value.is_bool()) wrong_kind("boolean");
        field = value.as_bool();
      } else if constexpr (std::is_floating_point_v<V>) {
        if (!value.is_int() && !value.is_double()) wrong_kind("number");
        field = static_cast<V>(value.as_double());
      } else {
        if (!value.is_int()) wrong_kind("integer");
        field = value.as_int();
      }
    });
    if (!known) fail("unknown key '" + key + "' (is this " + program + " run?)");
  }
  int64_t count = 0;
  for_each_field(c, [&](const char*, auto&) { ++count; });
  if (static_cast<int64_t>(seen.size()) != count)
    fail("it lacks keys; expected all " + std::to_string(count) + " of " + program + " config");
}

}  // namespace qkv::examples
