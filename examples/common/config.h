// A program's settings as one list of fields, so that config.json, the checkpoints and the command
// line are all made from the same list and cannot disagree. A config struct lists its fields once:
//
//   struct Config {
//     int64_t steps = 13000;
//     std::string text;
//     template <class F> void fields(F&& f) {
//       f({"steps", "training steps"}, steps);                  // option --steps
//       f({"warmup_steps", "warmup steps", "warmup"}, warmup);   // option --warmup
//       f({"chars"}, chars);                                     // config.json only: no option
//     }
//   };
//
// and these give the rest:
//   to_json(c)                         the fields in order, as config.json holds them
//   from_json<C>(json, source, what)   strict: every key once, of its kind, no other; then c.validate()
//   options_of(c)                      the command-line options, c's values as their defaults
//   read_options(args, c)              the fields the command line gives, parsed by their type
//   differences(a, b, ...)             "seed: 7 in A, 0 in B; ..." for every key whose values differ
// A field is a std::string, a bool (a flag), a floating-point number or an integer.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "examples/common/args.h"
#include "io/json.h"
#include "tensor/error.h"

namespace qkv::examples {

struct Field {
  Field(std::string k, std::string h = "", std::string o = "", bool later = false, io::Json before = io::Json())
      : key(std::move(k)), help(std::move(h)), option(std::move(o)), added_later(later), before(std::move(before)) {}
  std::string key;     // its key in config.json: "d_model"
  std::string help;    // the option's help; empty: a field of config.json alone, with no option
  std::string option;  // the option's name, when it is not the key with '-' for '_'
  // A key added after runs were saved: a config.json without it keeps the field's default, even
  // where from_json refuses missing keys; or `before`, when set: what the runs saved before the key
  // did (when the default has since changed).
  bool added_later = false;
  io::Json before;
  std::string option_name() const;
};

// "d_model (--d-model)": a key and the option that sets it, for messages about either.
std::string option_of(const std::string& key);
// ValueError "d_model (--d-model) is 0; expected 1 .. 4096" outside [lo, hi].
void check_int(const std::string& key, int64_t value, int64_t lo, int64_t hi);
void check_number(const std::string& key, double value, double lo, double hi, bool open_lo = false);
void check_name(const std::string& key, const std::string& value, const std::vector<std::string>& known);

// How from_json treats a key the JSON lacks: refused (the default), or left at the field's default,
// for a program whose older runs were saved before some keys existed.
enum class MissingKeys { refuse, keep_defaults };

template <class C>
io::Json to_json(const C& config) {
  C c = config;
  io::Json::Object members;
  c.fields([&](const Field& field, auto& value) {
    using V = std::decay_t<decltype(value)>;
    if constexpr (std::is_same_v<V, std::string> || std::is_same_v<V, bool>)
      members.emplace_back(field.key, io::Json(value));
    else if constexpr (std::is_floating_point_v<V>)
      members.emplace_back(field.key, io::Json(static_cast<double>(value)));
    else
      members.emplace_back(field.key, io::Json(static_cast<int64_t>(value)));
  });
  return io::Json(std::move(members));
}

namespace detail {

// Sets `field` from `value`, or throws through fail() naming the key and what was expected.
template <class V, class Fail>
void assign(V& field, const io::Json& value, const std::string& key, Fail&& fail) {
  auto wrong_kind = [&](const char* wanted) {
    fail("key '" + key + "': " + io::kind_mismatch(wanted, value));
  };
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
    if (std::is_unsigned_v<V> && value.as_int() < 0)
      fail("key '" + key + "': expected an integer of at least 0, found " + std::to_string(value.as_int()));
    field = static_cast<V>(value.as_int());
  }
}

}  // namespace detail

// The config `json` holds, validated; ValueError "SOURCE: ..." naming the key. `what` names whose
// config it is, with its article ("an lm"), for a key no field has: "is this an lm run?".
template <class C>
C from_json(const io::Json& json, const std::string& source, const std::string& what,
            MissingKeys missing = MissingKeys::refuse) {
  auto fail = [&](const std::string& message) { throw ValueError(source + ": " + message); };
  if (!json.is_object()) fail("expected an object of settings, found " + std::string(json.kind_name()));
  C c;
  std::vector<std::string> seen;
  for (const auto& [key, value] : json.as_object()) {
    if (std::find(seen.begin(), seen.end(), key) != seen.end()) fail("key '" + key + "' appears twice");
    seen.push_back(key);
    bool known = false;
    c.fields([&](const Field& field, auto& member) {
      if (field.key != key) return;
      known = true;
      detail::assign(member, value, key, fail);
    });
    if (!known) fail("unknown key '" + key + "' (is this " + what + " run?)");
  }
  int64_t count = 0;
  bool lacks = false;
  c.fields([&](const Field& field, auto& member) {
    ++count;
    const bool missing_key = std::find(seen.begin(), seen.end(), field.key) == seen.end();
    lacks = lacks || (!field.added_later && missing_key);
    if (missing_key && field.added_later && !field.before.is_null()) detail::assign(member, field.before, field.key, fail);
  });
  if (missing == MissingKeys::refuse && lacks)
    fail("it lacks keys; expected all " + std::to_string(count) + " of " + what + " config");
  try {
    c.validate();
  } catch (const ValueError& e) {
    fail(e.what());
  }
  return c;
}

// An option's text for a value: the shortest decimal that reads back as the same number, so that
// a default shows as written in the struct's initializer ("0.003", "0.1").
template <class V>
std::string value_text(const V& value) {
  if constexpr (std::is_same_v<V, std::string>)
    return value;
  else if constexpr (std::is_same_v<V, bool>)
    return value ? "true" : "false";
  else if constexpr (std::is_same_v<V, float>)
    return option_text(static_cast<float>(value));
  else if constexpr (std::is_floating_point_v<V>)
    return option_text(static_cast<double>(value));
  else
    return std::to_string(value);
}

template <class C>
std::vector<Args::Option> options_of(const C& defaults) {
  C c = defaults;
  std::vector<Args::Option> options;
  c.fields([&](const Field& field, auto& value) {
    if (!field.help.empty()) options.push_back({field.option_name(), value_text(value), field.help});
  });
  return options;
}

// Sets each field whose option the command line gives (a flag sets a bool to true); the others keep
// their values. An unsigned field (a seed) is refused below 0.
template <class C>
void read_options(const Args& args, C& c) {  // the fields whose options the command has and were given
  c.fields([&](const Field& field, auto& value) {
    const std::string name = field.option_name();
    if (field.help.empty() || !args.has(name) || !args.given(name)) return;  // a command may take a part
    using V = std::decay_t<decltype(value)>;
    if constexpr (std::is_same_v<V, std::string>)
      value = args.str(name);
    else if constexpr (std::is_same_v<V, bool>)
      value = args.flag(name);
    else if constexpr (std::is_floating_point_v<V>)
      value = static_cast<V>(args.number(name));
    else if constexpr (std::is_unsigned_v<V>)
      value = static_cast<V>(args.integer_in(name, 0, std::numeric_limits<int64_t>::max()));
    else
      value = static_cast<V>(args.integer(name));
  });
}

// "warmup": the option that sets key `key` of C; empty for a field of config.json alone.
template <class C>
std::string option_for(const std::string& key) {
  C c;
  std::string option;
  c.fields([&](const Field& field, auto&) {
    if (field.key == key && !(field.help.empty() && field.option.empty())) option = field.option_name();
  });
  return option;
}

// "warmup_steps (--warmup)": a key of C and the option that sets it (how C's fields name it), for
// messages about either; the key alone for a field of config.json alone.
template <class C>
std::string key_and_option(const std::string& key) {
  const std::string option = option_for<C>(key);
  return option.empty() ? key : key + " (--" + option + ")";
}

// The fields of a Transformer encoder's shape and of its optimizer (AdamW after a linear warmup,
// then cosine decay; the gradient clipped), under the keys and options the programs share.
template <class F, class M>
void encoder_fields(F&& f, M& model) {
  f({"d_model", "model width"}, model.d_model);
  f({"heads", "attention heads"}, model.heads);
  f({"layers", "Transformer blocks"}, model.layers);
  f({"ffn_hidden", "hidden width of the feed-forward sublayer"}, model.ffn_hidden);
  f({"dropout", "dropout"}, model.dropout);
}
template <class F>
void adamw_fields(F&& f, int64_t& warmup, double& lr, double& weight_decay, double& clip) {
  f({"warmup", "linear warmup steps, then cosine decay to 0"}, warmup);
  f({"lr", "peak learning rate (AdamW)"}, lr);
  f({"weight_decay", "AdamW weight decay on the matrices"}, weight_decay);
  f({"clip", "gradient norm clipping (0: none)"}, clip);
}

// "seed: 7 in the checkpoint, 0 in config.json; ..." for every key whose values differ; empty when
// none does. `a_name` and `b_name` say where each config is from.
std::string differences(const io::Json& a, const io::Json& b, const std::string& a_name,
                        const std::string& b_name);

}  // namespace qkv::examples
