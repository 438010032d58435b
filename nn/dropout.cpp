#include "nn/dropout.h"

#include "nn/functional/basic.h"
#include "tensor/error.h"

namespace qkv::nn {

Dropout::Dropout(float p_) : p(p_) {
  if (!(p >= 0.0f && p < 1.0f)) throw ValueError("Dropout: p must be in [0, 1), got " + std::to_string(p));
}

Tensor Dropout::forward(const Tensor& x) const { return functional::dropout(x, p, is_training()); }

std::string Dropout::extra_repr() const { return "p=" + std::to_string(p); }

}  // namespace qkv::nn
