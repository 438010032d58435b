// AddNorm: the residual connection followed by layer normalization that wraps every sublayer of a
// (post-norm) Transformer block (d2l 11.7.2; Vaswani et al. 2017, section 5.4):
//
//   out = ln(dropout(Y) + X)
//   X: (..., D) the sublayer's input,  Y: (..., D) the sublayer's output  →  out: (..., D)
//
// normalized_shape is D; ln is a LayerNorm(D) (parameters ln.weight, ln.bias, as in d2l) and
// dropout a Dropout(p), active only in training. X and Y must have the same shape.
#pragma once

#include <memory>

#include "nn/dropout.h"
#include "nn/layer_norm.h"
#include "nn/module.h"

namespace qkv::nn {

class AddNorm : public Module {
 public:
  AddNorm(int64_t normalized_shape, float dropout);
  Tensor forward(const Tensor& X, const Tensor& Y) const;

  std::shared_ptr<Dropout> dropout;
  std::shared_ptr<LayerNorm> ln;
};

}  // namespace qkv::nn
