// LayerNorm over the last dim (Ba, Kiros & Hinton 2016):
//   y = (x - mean) / sqrt(var + eps) · weight + bias,  mean and (biased) var over the last D values
//   x: (..., D) → y: (..., D);  weight (D) initialized to ones, bias (D) to zeros.
// Only a single normalized dim is supported (PyTorch also accepts several trailing dims).
#pragma once

#include "nn/module.h"

namespace qkv::nn {

class LayerNorm : public Module {
 public:
  explicit LayerNorm(int64_t normalized_shape, float eps = 1e-5f, bool elementwise_affine = true);
  Tensor forward(const Tensor& x) const;
  std::string extra_repr() const override;

  int64_t normalized_shape;
  float eps;
  Tensor weight, bias;  // undefined without elementwise_affine
};

}  // namespace qkv::nn
