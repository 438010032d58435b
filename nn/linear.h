// Linear: y = x·Wᵀ + b.
//
//   x: (..., in_features)  →  y: (..., out_features)
//   weight: (out_features, in_features), PyTorch's layout; bias: (out_features), optional. The
//   state_dict is torch.nn.Linear's, names and shapes (docs/pytorch.md): its weights load as they are.
// Initialization as PyTorch: weight kaiming_uniform(a = √5), i.e. U(-1/√in, 1/√in), and bias
// U(-1/√in, 1/√in).
#pragma once

#include "nn/module.h"

namespace qkv::nn {

class Linear : public Module {
 public:
  Linear(int64_t in_features, int64_t out_features, bool bias = true);
  Tensor forward(const Tensor& x) const;
  std::string extra_repr() const override;

  int64_t in_features, out_features;
  Tensor weight;
  Tensor bias;  // undefined when bias = false
};

}  // namespace qkv::nn
