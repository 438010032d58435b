// Conv1d: a one-dimensional convolution (d2l §7.2, cross-correlation) over channels-last sequences.
//
//   x: (N, L, in_channels)  →  y: (N, L_out, out_channels),  L_out = L + 2·padding − dilation·(K − 1)
//   weight: (out_channels, in_channels, K), PyTorch's layout; bias: (out_channels), optional. The
//   state_dict is torch.nn.Conv1d's, names and shapes, so its weights load as they are; the input
//   layout is not (below).
//
// The semantics are torch.nn.Conv1d's with stride 1 and zero padding; the layout of the input is
// not. PyTorch's Conv1d takes (N, C, L); sequence models in qkv hold (N, L, C) (tokens in rows,
// features in columns, as Linear and attention take them), and so does this layer: a PyTorch
// model's x.transpose(1, 2) before and after the convolution is not needed here.
// nn::functional::conv1d (nn/functional/conv.h) is the stateless form and says how it is computed.
// Initialization as PyTorch: weight kaiming_uniform(a = √5), i.e. U(-1/√fan_in, 1/√fan_in) with
// fan_in = in_channels·K, and bias U(-1/√fan_in, 1/√fan_in).
#pragma once

#include "nn/module.h"

namespace qkv::nn {

class Conv1d : public Module {
 public:
  Conv1d(int64_t in_channels, int64_t out_channels, int64_t kernel_size, int64_t padding = 0,
         bool bias = true, int64_t dilation = 1);
  Tensor forward(const Tensor& x) const;
  std::string extra_repr() const override;

  int64_t in_channels, out_channels, kernel_size, padding, dilation;
  Tensor weight;
  Tensor bias;  // undefined when bias = false
};

}  // namespace qkv::nn
