#include "nn/add_norm.h"

#include "tensor/error.h"

namespace qkv::nn {

AddNorm::AddNorm(int64_t normalized_shape, float p) {
  dropout = register_module("dropout", std::make_shared<Dropout>(p));
  ln = register_module("ln", std::make_shared<LayerNorm>(normalized_shape));
}

Tensor AddNorm::forward(const Tensor& X, const Tensor& Y) const {
  if (X.shape() != Y.shape())
    throw ShapeError("AddNorm: X of shape " + shape_str(X.shape()) + " and Y of shape " + shape_str(Y.shape()) +
                     " must have the same shape");
  return ln->forward(dropout->forward(Y) + X);
}

}  // namespace qkv::nn
