// Dropout (inverted): in training, zeroes each element with probability p and scales the rest by
// 1/(1-p); in evaluation (after eval()), the identity.   x: any shape → same shape
#pragma once

#include "nn/module.h"

namespace qkv::nn {

class Dropout : public Module {
 public:
  explicit Dropout(float p = 0.5f);
  Tensor forward(const Tensor& x) const;
  std::string extra_repr() const override;

  float p;
};

}  // namespace qkv::nn
