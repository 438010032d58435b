// A linear layer's y = x·Wᵀ + b as one op (torch.nn.functional.linear): the op behind
// nn::functional::linear (use that).
#pragma once

#include "tensor/tensor.h"

namespace qkv {

// x (..., in), weight (out, in), bias (out) → (..., out). The GEMM adds the bias to each output
// tile while the tile is in cache, instead of in a pass of its own over y. Backward is the
// reference's: the same products and the same sum, so the two agree to the bit.
Tensor linear_with_bias(const Tensor& x, const Tensor& weight, const Tensor& bias);

// linear_with_bias's composed reference: x.matmul(weight.t()) + bias, a product (the transpose a
// view the GEMM reads in place) and a broadcast add.
Tensor linear_with_bias_reference(const Tensor& x, const Tensor& weight, const Tensor& bias);

}  // namespace qkv
