// The stateless forms of the basic layers.
#pragma once

#include "tensor/random.h"
#include "tensor/tensor.h"

namespace qkv::nn::functional {

// y = x·Wᵀ + b: x is (..., in), weight (out, in) as in PyTorch, bias (out) or undefined.
Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias = Tensor());

// Inverted dropout: in training, each element is zeroed with probability p and the survivors are
// scaled by 1/(1-p), so the expected value is unchanged and evaluation needs no rescaling.
// Identity when !training or p == 0.
Tensor dropout(const Tensor& x, float p, bool training, Generator* gen = nullptr);

// Normalizes over the last dim: (x - mean) / sqrt(var + eps), var biased (÷ D), then · weight + bias
// when they are given. x is (..., D); weight and bias are (D) or undefined. This is the fused op
// qkv::layer_norm (one node in the graph).
Tensor layer_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, float eps = 1e-5f);

}  // namespace qkv::nn::functional
