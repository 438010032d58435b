// The feed-forward sublayer of a Transformer block: the same MLP applied to every position
// independently. The block holds it through the FeedForward interface, so any MLP that maps
// (..., D) to (..., D) plugs in; a factory builds one for the block's sizes.
//
// PositionWiseFFN (d2l §11.7.2; Vaswani et al. 2017, eq. 2):
//
//   y = dense2(act(dense1(x)))          act = relu (the paper, d2l) or gelu (BERT, GPT-2)
//   x: (..., d_in)  →  y: (..., d_out);  dense1: Linear(d_in, hidden), dense2: Linear(hidden, d_out)
//
// d2l's PositionWiseFFN(ffn_num_hiddens, ffn_num_outputs) uses LazyLinear, which infers d_in from
// the first input; here d_in is given up front, so the parameters exist (and can be loaded or
// counted) before the first forward. Parameter names match d2l's: dense1.weight, dense1.bias,
// dense2.weight, dense2.bias. The gated variant SwiGLU is in nn/swiglu.h.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "nn/linear.h"
#include "nn/module.h"
#include "nn/registry.h"

namespace qkv::nn {

class FeedForward : public Module {
 public:
  virtual Tensor forward(const Tensor& x) const = 0;  // (..., D) → (..., D)
};

// Builds the FFN of a block of width num_hiddens with a hidden layer of ffn_num_hiddens.
using FeedForwardFactory =
    std::function<std::shared_ptr<FeedForward>(int64_t num_hiddens, int64_t ffn_num_hiddens)>;

enum class Activation { ReLU, GELU };

class PositionWiseFFN : public FeedForward {
 public:
  PositionWiseFFN(int64_t d_in, int64_t hidden, int64_t d_out, Activation activation = Activation::ReLU);
  Tensor forward(const Tensor& x) const override;
  std::string extra_repr() const override;

  Activation activation;
  std::shared_ptr<Linear> dense1, dense2;
};

// The factories of the built-in FFNs, by the names command lines and checkpoints use: relu, gelu
// (PositionWiseFFN) and swiglu (nn/swiglu.h). feed_forward(name) throws ValueError naming the known
// ones for any other name. An FFN of a user's own registers from the user's file (nn/registry.h).
Registry<FeedForwardFactory>& feed_forwards();
bool register_feed_forward(const std::string& name, FeedForwardFactory factory);
FeedForwardFactory feed_forward(const std::string& name);
std::vector<std::string> feed_forward_names();

}  // namespace qkv::nn
