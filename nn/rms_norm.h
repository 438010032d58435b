// RMSNorm (Zhang & Sennrich 2019; torch.nn.RMSNorm): LayerNorm without centering and without bias.
//   y = x / sqrt(mean(x²) + eps) · weight,   mean over the last dim
//   x: (..., D) → y: (..., D);  weight (D) initialized to ones.
// eps defaults to float32's machine epsilon, as PyTorch's eps=None does. Differences from PyTorch:
// one normalized dim only, and the weight is always there (no elementwise_affine=False).
#pragma once

#include <limits>

#include "nn/module.h"

namespace qkv::nn {

class RMSNorm : public Module {
 public:
  explicit RMSNorm(int64_t normalized_shape, float eps = std::numeric_limits<float>::epsilon());
  Tensor forward(const Tensor& x) const;
  std::string extra_repr() const override;

  int64_t normalized_shape;
  float eps;
  Tensor weight;
};

}  // namespace qkv::nn
