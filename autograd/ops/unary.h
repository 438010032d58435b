// The composed reference of the one elementwise op that has a fast form of its own: the exact GELU
// (Tensor::gelu, autograd/ops/unary.cpp), whose fast form computes Φ with vecmath.h's vnormal_cdf.
#pragma once

#include "tensor/tensor.h"

namespace qkv {

// Tensor::gelu()'s composed reference, the definition GELU(x) = x·Φ(x) (Hendrycks & Gimpel 2016):
// Φ, the standard normal distribution function, as an op of its own with libm's erfc (its
// derivative φ with libm's exp), times x; the product's backward gives Φ(x) + x·φ(x).
// x: any shape → same shape.
Tensor gelu_reference(const Tensor& x);

}  // namespace qkv
