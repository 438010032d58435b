// Layer normalization over the last dim (Ba, Kiros & Hinton 2016), as one fused op: the op behind
// nn::LayerNorm and nn::functional::layer_norm.
#pragma once

#include "tensor/tensor.h"

namespace qkv {

//   y = (x - mean) / sqrt(var + eps) · weight + bias,   mean and biased var over the last D values
// x: (..., D) → y: (..., D); weight and bias are (D), or undefined to leave them out. One kernel
// forward and one backward (tensor/kernels/layernorm.h has the formulas), where the reference runs
// nine ops and nine backward steps, each a pass over the whole (..., D) tensor.
Tensor layer_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, float eps = 1e-5f);

// layer_norm's composed reference: the formula above, op by op (mean, sub, mul, mean, add, rsqrt,
// mul, and the affine mul and add).
Tensor layer_norm_reference(const Tensor& x, const Tensor& weight, const Tensor& bias, float eps = 1e-5f);

}  // namespace qkv
