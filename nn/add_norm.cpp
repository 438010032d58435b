#include "nn/add_norm.h"

#include "tensor/error.h"

namespace qkv::nn {

AddNorm::AddNorm(int64_t normalized_shape, float p) {
  dropout = register_module("dropout", std::make_shared<Dropout>(p));
  ln = register_module("ln", std::make_shared<LayerNorm>(normalized_shape));
}

Tensor AddNorm::forward(const Tensor& X, Tensor Y) const {
  if (X.shape() != Y.shape())
    throw ShapeError(where() + ": X of shape " + shape_str(X.shape()) + " and Y of shape " + shape_str(Y.shape()) +
                     " must have the same shape");
  const Tensor sum = dropout->forward(Y) + X;
  Y = Tensor();  // freed here if the caller handed over its last handle, before ln allocates
  return ln->forward(sum);
}

}  // namespace qkv::nn
