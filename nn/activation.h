// Activation layers, for use in Sequential. x: any shape → same shape.
#pragma once

#include "nn/module.h"

namespace qkv::nn {

class ReLU : public Module {
 public:
  ReLU() {}
  Tensor forward(const Tensor& x) const { return x.relu(); }
};

// Exact GELU x·Φ(x) by default, as torch.nn.GELU(); the tanh approximation on request.
class GELU : public Module {
 public:
  explicit GELU(bool tanh_approximation = false) : tanh_approximation(tanh_approximation) {}
  Tensor forward(const Tensor& x) const { return x.gelu(tanh_approximation); }
  std::string extra_repr() const override { return tanh_approximation ? "approximate=tanh" : ""; }
  bool tanh_approximation;
};

class Tanh : public Module {
 public:
  Tanh() {}
  Tensor forward(const Tensor& x) const { return x.tanh(); }
};

}  // namespace qkv::nn
