// Factories by name: how command lines and checkpoint configs name the replaceable parts of a
// Transformer encoder. There are three registries, one per kind of part, each with the same API:
//
//   nn::position_schemes()   Registry<PositionFactory>     nn/position_scheme.h
//   nn::feed_forwards()      Registry<FeedForwardFactory>  nn/ffn.h
//   nn::attentions()         Registry<AttentionFactory>    nn/attention_interface.h
//
// and a register_* shorthand for each (register_position_scheme, register_feed_forward,
// register_attention), which is registry().add(name, factory). The built-in parts are registered
// when a registry is first used; a user's part registers from its own file, with no edit of qkv,
// before anything looks a name up. Once registered, a name reaches every program that asks a
// registry: the tagger's --positions, --ffn and --attention, its help and its ablation, and a
// checkpoint's config.
//
//   // my_scheme.cpp, linked into the program
//   static const bool registered = qkv::nn::register_position_scheme(
//       "fourier", [](const qkv::nn::PositionSizes& s) { return std::make_shared<Fourier>(s); });
//
// A name is letters, digits, '_' and '-' (it goes on a command line and into JSON); adding a name
// the registry has, a malformed name or an empty factory throws a ValueError naming it. Looking up
// a name it lacks throws a ValueError that lists the names it has. A registry is not locked: add
// and remove before threads build models, as static registration does.
#pragma once

#include <cctype>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "tensor/error.h"

namespace qkv::nn {

template <class Factory>
class Registry {
 public:
  // `kind` names what the registry holds, for messages: "position scheme", "FFN", "attention".
  // `where` opens them: "position_scheme".
  Registry(std::string where, std::string kind, std::map<std::string, Factory> entries)
      : where_(std::move(where)), kind_(std::move(kind)), entries_(std::move(entries)) {}

  const Factory& at(const std::string& name) const {
    const auto it = entries_.find(name);
    if (it != entries_.end()) return it->second;
    throw ValueError(where_ + ": unknown " + kind_ + " '" + name + "'; expected one of " + joined());
  }

  bool contains(const std::string& name) const { return entries_.count(name) > 0; }

  // Returns true, so that a file can register at static initialization (see above).
  bool add(const std::string& name, Factory factory) {
    bool well_formed = !name.empty();
    for (const char c : name)
      well_formed = well_formed && (std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-');
    if (!well_formed)
      throw ValueError(where_ + ": cannot register " + kind_ + " '" + name +
                       "'; a name is letters, digits, '_' and '-'");
    if (!factory) throw ValueError(where_ + ": cannot register " + kind_ + " '" + name + "' with an empty factory");
    if (contains(name))
      throw ValueError(where_ + ": " + kind_ + " '" + name + "' is already registered; choose another name");
    entries_.emplace(name, std::move(factory));
    return true;
  }

  // Takes a name out again (a test's registration, undone when it ends).
  void remove(const std::string& name) {
    if (entries_.erase(name) == 0)
      throw ValueError(where_ + ": cannot remove " + kind_ + " '" + name + "'; it is not registered");
  }

  std::vector<std::string> names() const {
    std::vector<std::string> out;
    for (const auto& entry : entries_) out.push_back(entry.first);
    return out;
  }

 private:
  std::string joined() const {
    std::string known;
    for (const std::string& n : names()) known += (known.empty() ? "" : ", ") + n;
    return known;
  }

  std::string where_, kind_;
  std::map<std::string, Factory> entries_;
};

}  // namespace qkv::nn
