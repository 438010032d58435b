#include "nn/layer_norm.h"

#include "nn/functional/basic.h"
#include "tensor/error.h"
#include "tensor/factories.h"

namespace qkv::nn {

LayerNorm::LayerNorm(int64_t d, float eps_, bool affine) : normalized_shape(d), eps(eps_) {
  if (d <= 0) throw ValueError("LayerNorm: normalized_shape must be positive, got " + std::to_string(d));
  if (affine) {
    weight = register_parameter("weight", ones({d}));
    bias = register_parameter("bias", zeros({d}));
  }
}

Tensor LayerNorm::forward(const Tensor& x) const {
  if (x.dim() == 0 || x.size(-1) != normalized_shape)
    throw ShapeError(where() + ": input of shape " + shape_str(x.shape()) + " does not end in the normalized size " +
                     std::to_string(normalized_shape));
  return functional::layer_norm(x, weight, bias, eps);
}

std::string LayerNorm::extra_repr() const {
  return std::to_string(normalized_shape) + ", eps=" + std::to_string(eps) +
         ", elementwise_affine=" + (weight.defined() ? "true" : "false");
}

}  // namespace qkv::nn
