// AddNorm: the residual connection followed by layer normalization that wraps every sublayer of a
// (post-norm) Transformer block (d2l 11.7.2; Vaswani et al. 2017, section 5.4):
//
//   out = ln(dropout(Y) + X)
//   X: (..., D) the sublayer's input,  Y: (..., D) the sublayer's output  →  out: (..., D)
//
// normalized_shape is D; ln is a LayerNorm(D) (parameters ln.weight, ln.bias, as in d2l) and
// dropout a Dropout(p), active only in training. X and Y must have the same shape.
//
// Y is taken by value: the sublayer's output is needed only for the sum (neither dropout nor the
// addition saves it for backward), so when the caller hands it over, as a Transformer block does,
// Y and its dropout are freed before the norm allocates its output, two (..., D) tensors fewer at
// that moment of the forward pass.
#pragma once

#include <memory>

#include "nn/dropout.h"
#include "nn/layer_norm.h"
#include "nn/module.h"

namespace qkv::nn {

class AddNorm : public Module {
 public:
  AddNorm(int64_t normalized_shape, float dropout);
  Tensor forward(const Tensor& X, Tensor Y) const;

  std::shared_ptr<Dropout> dropout;
  std::shared_ptr<LayerNorm> ln;
};

}  // namespace qkv::nn
