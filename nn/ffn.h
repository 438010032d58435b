// PositionWiseFFN: the feed-forward sublayer of a Transformer block (d2l 11.7.2; Vaswani et al.
// 2017, eq. 2), the same two-layer MLP applied to every position independently:
//
//   y = dense2(relu(dense1(x)))
//   x: (..., d_in)  →  y: (..., d_out);  dense1: Linear(d_in, hidden), dense2: Linear(hidden, d_out)
//
// d2l's PositionWiseFFN(ffn_num_hiddens, ffn_num_outputs) uses LazyLinear, which infers d_in from
// the first input; here d_in is given up front, so the parameters exist (and can be loaded or
// counted) before the first forward. Parameter names match d2l's: dense1.weight, dense1.bias,
// dense2.weight, dense2.bias.
#pragma once

#include <memory>

#include "nn/linear.h"
#include "nn/module.h"

namespace qkv::nn {

class PositionWiseFFN : public Module {
 public:
  PositionWiseFFN(int64_t d_in, int64_t hidden, int64_t d_out);
  Tensor forward(const Tensor& x) const;

  std::shared_ptr<Linear> dense1, dense2;
};

}  // namespace qkv::nn
