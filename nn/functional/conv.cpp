#include "nn/functional/conv.h"

#include <string>

#include "autograd/ops/unfold.h"
#include "nn/functional/basic.h"
#include "tensor/error.h"

namespace qkv::nn::functional {

Tensor conv1d(const Tensor& x, const Tensor& weight, const Tensor& bias, int64_t padding, int64_t dilation) {
  if (weight.dim() != 3)
    throw ShapeError("conv1d: weight must be 3-d (C_out, C_in, K), got shape " + shape_str(weight.shape()));
  if (x.dim() != 3 || x.size(2) != weight.size(1))
    throw ShapeError("conv1d: input of shape " + shape_str(x.shape()) + " does not fit weight of shape " +
                     shape_str(weight.shape()) + ": expected (N, L, " + std::to_string(weight.size(1)) +
                     "), channels last");
  if (bias.defined() && bias.shape() != Shape{weight.size(0)})
    throw ShapeError("conv1d: bias must be (C_out) = " + shape_str({weight.size(0)}) + ", got " +
                     shape_str(bias.shape()));
  return linear(qkv::unfold1d(x, weight.size(2), padding, dilation), conv1d_weight_matrix(weight), bias);
}

Tensor conv1d_weight_matrix(const Tensor& weight) {
  // unfold1d orders a window's values tap by tap, (K, C_in); the weight is (C_out, C_in, K), so it
  // is permuted to (C_out, K, C_in) to match (a copy of C_out·C_in·K values, small).
  return weight.permute({0, 2, 1}).reshape({weight.size(0), weight.size(1) * weight.size(2)});
}

}  // namespace qkv::nn::functional
