#include "nn/container.h"

#include "tensor/error.h"

namespace qkv::nn {

Tensor Sequential::forward(const Tensor& x) const {
  Tensor h = x;
  for (const auto& step : steps_) h = step(h);
  return h;
}

std::shared_ptr<Module> ModuleList::child(size_t i) const {
  if (i >= size())
    throw IndexError("ModuleList: index " + std::to_string(i) + " is out of range for " + std::to_string(size()) +
                     " modules");
  return named_children()[i].second;
}

void ModuleList::throw_wrong_type(size_t i) const {
  throw ValueError("ModuleList: module " + std::to_string(i) + " is a " + child(i)->type_name() +
                   ", not the type asked for");
}

}  // namespace qkv::nn
