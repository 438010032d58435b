// Factories by name: how command lines and checkpoint configs name the replaceable parts of a
// model (position schemes in nn/position_scheme.cpp, FFNs in nn/ffn.cpp). A registry is a sorted
// table; looking up a name it lacks throws a ValueError that lists the names it has.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "tensor/error.h"

namespace qkv::nn {

template <class Factory>
class Registry {
 public:
  // `unknown` opens the message for a missing name: "position_scheme: unknown scheme".
  Registry(std::string unknown, std::map<std::string, Factory> entries)
      : unknown_(std::move(unknown)), entries_(std::move(entries)) {}

  const Factory& at(const std::string& name) const {
    const auto it = entries_.find(name);
    if (it != entries_.end()) return it->second;
    std::string known;
    for (const std::string& n : names()) known += (known.empty() ? "" : ", ") + n;
    throw ValueError(unknown_ + " '" + name + "'; expected one of " + known);
  }

  std::vector<std::string> names() const {
    std::vector<std::string> out;
    for (const auto& entry : entries_) out.push_back(entry.first);
    return out;
  }

 private:
  std::string unknown_;
  std::map<std::string, Factory> entries_;
};

}  // namespace qkv::nn
