#include "nn/functional/basic.h"

#include <string>

#include "autograd/ops/dropout.h"
#include "autograd/ops/layer_norm.h"
#include "autograd/ops/linear.h"
#include "tensor/error.h"
#include "tensor/factories.h"

namespace qkv::nn::functional {

Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias) {
  if (x.dim() == 0 || x.size(-1) != weight.size(1))
    throw ShapeError("linear: input of shape " + shape_str(x.shape()) + " does not fit weight of shape " +
                     shape_str(weight.shape()) + ": expected the last dim to be " +
                     std::to_string(weight.size(1)));
  // With a bias, one op that adds it inside the product (autograd/ops/linear.cpp). Without,
  // weight.t() is a transposed view: the matmul reads it with a transpose flag, without a copy.
  if (bias.defined()) return qkv::linear_with_bias(x, weight, bias);
  return x.matmul(weight.t());
}

Tensor dropout(const Tensor& x, float p, bool training, Generator* gen) {
  if (!(p >= 0.0f && p < 1.0f)) throw ValueError("dropout: p must be in [0, 1), got " + std::to_string(p));
  if (!training || p == 0.0f) return x;
  return qkv::dropout(x, p, gen ? *gen : default_generator());  // the fused op of autograd/ops/dropout.cpp
}

Tensor layer_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, float eps) {
  return qkv::layer_norm(x, weight, bias, eps);  // the fused op of autograd/ops/layer_norm.cpp
}

}  // namespace qkv::nn::functional
