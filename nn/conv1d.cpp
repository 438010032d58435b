#include "nn/conv1d.h"

#include <cmath>

#include "nn/functional/conv.h"
#include "nn/init.h"
#include "tensor/error.h"

namespace qkv::nn {

Conv1d::Conv1d(int64_t in, int64_t out, int64_t k, int64_t pad, bool with_bias, int64_t dil)
    : in_channels(in), out_channels(out), kernel_size(k), padding(pad), dilation(dil) {
  if (in <= 0 || out <= 0 || k <= 0)
    throw ValueError("Conv1d: in_channels, out_channels and kernel_size must be positive, got " +
                     std::to_string(in) + ", " + std::to_string(out) + " and " + std::to_string(k));
  if (pad < 0 || dil <= 0)
    throw ValueError("Conv1d: padding must be >= 0 and dilation >= 1, got " + std::to_string(pad) + " and " +
                     std::to_string(dil));
  weight = register_parameter("weight", Tensor::empty({out, in, k}, "Conv1d"));
  init::kaiming_uniform_(weight, std::sqrt(5.0f));
  if (with_bias) {
    bias = register_parameter("bias", Tensor::empty({out}, "Conv1d"));
    const float bound = 1.0f / std::sqrt(static_cast<float>(in * k));
    init::uniform_(bias, -bound, bound);
  }
}

Tensor Conv1d::forward(const Tensor& x) const {
  return functional::conv1d(x, weight, bias, padding, dilation);
}

std::string Conv1d::extra_repr() const {
  std::string s = std::to_string(in_channels) + ", " + std::to_string(out_channels) +
                  ", kernel_size=" + std::to_string(kernel_size);
  if (padding) s += ", padding=" + std::to_string(padding);
  if (dilation != 1) s += ", dilation=" + std::to_string(dilation);
  return s + ", bias=" + (bias.defined() ? "true" : "false");
}

}  // namespace qkv::nn
