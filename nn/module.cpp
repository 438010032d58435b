#include "nn/module.h"

#include <cxxabi.h>

#include <cstdlib>
#include <functional>
#include <sstream>
#include <typeinfo>

#include "autograd/grad_mode.h"
#include "tensor/error.h"

namespace qkv::nn {
namespace {

std::string join(const std::string& prefix, const std::string& name) {
  return prefix.empty() ? name : prefix + "." + name;
}

// 1234567 → "1,234,567"
std::string with_commas(int64_t n) {
  std::string digits = std::to_string(n), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

// "qkv::nn::Linear" → "Linear": the demangled name after its last "::" outside template arguments
// and parameter lists (a class local to a function is "f()::Local").
std::string unqualified_name(const std::type_info& type) {
  int status = 0;
  char* demangled = abi::__cxa_demangle(type.name(), nullptr, nullptr, &status);
  const std::string name = status == 0 && demangled ? demangled : type.name();
  std::free(demangled);
  size_t start = 0;
  int depth = 0;
  for (size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    if (c == '<' || c == '(') ++depth;
    if (c == '>' || c == ')') --depth;
    if (depth == 0 && c == ':' && i + 1 < name.size() && name[i + 1] == ':') start = i + 2;
  }
  return name.substr(start);
}

}  // namespace

const std::string& Module::type_name() const {
  std::call_once(type_name_once_, [this] { type_name_ = unqualified_name(typeid(*this)); });
  return type_name_;
}

void Module::check_new_name(const std::string& name) const {
  if (name.empty() || name.find('.') != std::string::npos)
    throw ValueError(type_name() + ": invalid name '" + name + "' (must be non-empty, without '.')");
  auto taken = [&name](const auto& list, auto key) {
    for (const auto& item : list)
      if (key(item) == name) return true;
    return false;
  };
  if (taken(parameters_, [](const auto& p) { return p.first; }) ||
      taken(buffers_, [](const Buffer& b) { return b.name; }) ||
      taken(children_, [](const auto& c) { return c.first; }))
    throw ValueError(type_name() + ": the name '" + name + "' is already registered");
}

Tensor Module::register_parameter(const std::string& name, Tensor param) {
  check_new_name(name);
  if (!param.defined()) throw ValueError(type_name() + ": parameter '" + name + "' is undefined");
  if (!param.is_leaf()) param = param.detach();
  param.requires_grad_(true);
  param.set_name(join(path_, name));
  parameters_.emplace_back(name, param);
  return param;
}

Tensor Module::register_buffer(const std::string& name, Tensor buffer, bool persistent) {
  check_new_name(name);
  buffers_.push_back({name, buffer.detach(), persistent});
  return buffers_.back().tensor;
}

void Module::add_child(const std::string& name, std::shared_ptr<Module> module) {
  check_new_name(name);
  if (!module) throw ValueError(type_name() + ": child module '" + name + "' is null");
  module->set_path(join(path_, name));
  children_.emplace_back(name, std::move(module));
}

std::string Module::where() const { return path_.empty() ? type_name() : path_ + " (" + type_name() + ")"; }

void Module::set_path(const std::string& path) {
  path_ = path;
  for (auto& [name, p] : parameters_) p.set_name(join(path, name));
  for (auto& [name, child] : children_) child->set_path(join(path, name));
}

std::vector<std::pair<std::string, Tensor>> Module::named_parameters(bool recurse) const {
  std::vector<std::pair<std::string, Tensor>> out;
  std::function<void(const Module&, const std::string&)> visit = [&](const Module& m,
                                                                     const std::string& prefix) {
    for (const auto& [name, p] : m.parameters_) out.emplace_back(join(prefix, name), p);
    if (recurse)
      for (const auto& [name, child] : m.children_) visit(*child, join(prefix, name));
  };
  visit(*this, "");
  return out;
}

std::vector<Tensor> Module::parameters(bool recurse) const {
  std::vector<Tensor> out;
  for (auto& [name, p] : named_parameters(recurse)) out.push_back(p);
  return out;
}

std::vector<std::pair<std::string, Tensor>> Module::named_buffers(bool recurse) const {
  std::vector<std::pair<std::string, Tensor>> out;
  std::function<void(const Module&, const std::string&)> visit = [&](const Module& m,
                                                                     const std::string& prefix) {
    for (const Buffer& b : m.buffers_) out.emplace_back(join(prefix, b.name), b.tensor);
    if (recurse)
      for (const auto& [name, child] : m.children_) visit(*child, join(prefix, name));
  };
  visit(*this, "");
  return out;
}

std::vector<Tensor> Module::buffers(bool recurse) const {
  std::vector<Tensor> out;
  for (auto& [name, b] : named_buffers(recurse)) out.push_back(b);
  return out;
}

std::vector<std::shared_ptr<Module>> Module::children() const {
  std::vector<std::shared_ptr<Module>> out;
  for (const auto& [name, child] : children_) out.push_back(child);
  return out;
}

int64_t Module::num_parameters() const {
  int64_t n = 0;
  for (const Tensor& p : parameters()) n += p.numel();
  return n;
}

void Module::train(bool on) {
  training_ = on;
  for (const auto& [name, child] : children_) child->train(on);
}

void Module::zero_grad(bool set_to_none) {
  for (Tensor& p : parameters()) p.zero_grad(set_to_none);
}

StateDict Module::state_dict() const {
  StateDict state;
  for (auto& [name, p] : named_parameters()) state[name] = p;
  std::function<void(const Module&, const std::string&)> visit = [&](const Module& m,
                                                                     const std::string& prefix) {
    for (const Buffer& b : m.buffers_)
      if (b.persistent) state[join(prefix, b.name)] = b.tensor;
    for (const auto& [name, child] : m.children_) visit(*child, join(prefix, name));
  };
  visit(*this, "");
  return state;
}

std::vector<std::string> Module::check_state_dict(const StateDict& state, bool strict) const {
  const StateDict own = state_dict();
  std::vector<std::string> missing, unexpected, mismatched;
  for (const auto& [name, t] : own) {
    auto it = state.find(name);
    if (it == state.end())
      missing.push_back(name);
    else if (!it->second.defined() || it->second.shape() != t.shape())
      mismatched.push_back(name + " (expected " + shape_str(t.shape()) + ", got " +
                           (it->second.defined() ? shape_str(it->second.shape()) : "undefined") + ")");
  }
  for (const auto& [name, t] : state)
    if (!own.count(name)) unexpected.push_back(name);

  std::vector<std::string> problems;
  auto report = [&problems](const char* what, const std::vector<std::string>& names) {
    if (names.empty()) return;
    std::string line = what + std::string(":");
    for (const std::string& n : names) line += " " + n + ";";
    problems.push_back(line);
  };
  if (strict) {
    report("missing keys", missing);
    report("unexpected keys", unexpected);
  }
  report("shape mismatches", mismatched);
  return problems;
}

LoadResult Module::load_state_dict(const StateDict& state, bool strict) {
  std::string problems;
  for (const std::string& line : check_state_dict(state, strict)) problems += "\n  " + line;
  if (!problems.empty())
    throw ShapeError("load_state_dict: cannot load into " + type_name() +
                     " (nothing was changed):" + problems);

  const StateDict own = state_dict();
  LoadResult result;
  NoGradGuard no_grad;
  for (auto& [name, t] : own) {
    auto it = state.find(name);
    if (it == state.end()) {
      result.missing.push_back(name);
      continue;
    }
    if (!it->second.is_same(t)) Tensor(t).copy_(it->second);
    result.loaded.push_back(name);
  }
  for (const auto& [name, t] : state)
    if (!own.count(name)) result.unexpected.push_back(name);
  return result;
}

void Module::summarize(std::string& out, const std::string& name, int depth) const {
  std::ostringstream line;
  line << std::string(static_cast<size_t>(depth) * 2, ' ');
  if (!name.empty()) line << name << ": ";
  line << type_name() << "(" << extra_repr() << ")";
  const int64_t count = num_parameters();
  if (count) line << "  " << with_commas(count) << " parameters";
  out += line.str() + "\n";
  for (const auto& [child_name, child] : children_) child->summarize(out, child_name, depth + 1);
}

std::string Module::summary() const {
  std::string out;
  summarize(out, "", 0);
  return out;
}

}  // namespace qkv::nn
