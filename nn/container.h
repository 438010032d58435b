// Containers: Sequential chains modules that map one tensor to one tensor; ModuleList holds a
// numbered list of modules (their names are "0", "1", ...), e.g. the blocks of an encoder.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "nn/module.h"

namespace qkv::nn {

class Sequential : public Module {
 public:
  Sequential() {}
  // Appends any module with a `Tensor forward(const Tensor&)`.
  template <class M>
  Sequential& push_back(std::shared_ptr<M> module) {
    register_module(std::to_string(steps_.size()), module);
    steps_.push_back([module](const Tensor& x) { return module->forward(x); });
    return *this;
  }
  Tensor forward(const Tensor& x) const;
  size_t size() const { return steps_.size(); }

 private:
  std::vector<std::function<Tensor(const Tensor&)>> steps_;
};

class ModuleList : public Module {
 public:
  ModuleList() {}
  template <class M>
  ModuleList& push_back(std::shared_ptr<M> module) {
    register_module(std::to_string(size()), module);
    return *this;
  }
  size_t size() const { return named_children().size(); }
  // The i-th module, as its concrete type (throws if it is another type or i is out of range).
  template <class M>
  std::shared_ptr<M> at(size_t i) const {
    auto m = std::dynamic_pointer_cast<M>(child(i));
    if (!m) throw_wrong_type(i);
    return m;
  }

 private:
  std::shared_ptr<Module> child(size_t i) const;
  [[noreturn]] void throw_wrong_type(size_t i) const;
};

}  // namespace qkv::nn
