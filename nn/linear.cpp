#include "nn/linear.h"

#include <cmath>

#include "nn/functional/basic.h"
#include "nn/init.h"
#include "tensor/error.h"

namespace qkv::nn {

Linear::Linear(int64_t in, int64_t out, bool with_bias)
    : in_features(in), out_features(out) {
  if (in <= 0 || out <= 0)
    throw ValueError("Linear: features must be positive, got in=" + std::to_string(in) +
                     ", out=" + std::to_string(out));
  weight = register_parameter("weight", Tensor::empty({out, in}, "Linear"));
  init::kaiming_uniform_(weight, std::sqrt(5.0f));
  if (with_bias) {
    bias = register_parameter("bias", Tensor::empty({out}, "Linear"));
    const float bound = 1.0f / std::sqrt(static_cast<float>(in));
    init::uniform_(bias, -bound, bound);
  }
}

Tensor Linear::forward(const Tensor& x) const { return functional::linear(x, weight, bias); }

std::string Linear::extra_repr() const {
  return "in_features=" + std::to_string(in_features) + ", out_features=" + std::to_string(out_features) +
         ", bias=" + (bias.defined() ? "true" : "false");
}

}  // namespace qkv::nn
