// SwiGLU, a gated feed-forward sublayer (Shazeer 2020, "GLU Variants Improve Transformer", eq. 6;
// the FFN of PaLM and LLaMA):
//
//   y = down(silu(gate(x)) ⊙ up(x)),     silu(a) = a·σ(a)
//   x: (..., D) → y: (..., D);  gate, up: Linear(D, hidden), down: Linear(hidden, D), no biases
//
// One branch decides, per hidden unit and position, how much of the other passes. With three
// matrices instead of two, a SwiGLU of hidden width 2/3·f has the parameters of a ReLU FFN of
// width f; Shazeer compares them at equal parameters that way. Names follow Hugging Face's LLaMA
// (gate_proj, up_proj, down_proj) without the suffix.
#pragma once

#include <cstdint>
#include <memory>

#include "nn/ffn.h"
#include "nn/linear.h"

namespace qkv::nn {

class SwiGLU : public FeedForward {
 public:
  SwiGLU(int64_t num_hiddens, int64_t ffn_num_hiddens) {
    gate = register_module("gate", std::make_shared<Linear>(num_hiddens, ffn_num_hiddens, /*bias=*/false));
    up = register_module("up", std::make_shared<Linear>(num_hiddens, ffn_num_hiddens, /*bias=*/false));
    down = register_module("down", std::make_shared<Linear>(ffn_num_hiddens, num_hiddens, /*bias=*/false));
  }

  Tensor forward(const Tensor& x) const override {
    const Tensor a = gate->forward(x);
    return down->forward(a * a.sigmoid() * up->forward(x));
  }

  std::shared_ptr<Linear> gate, up, down;
};

}  // namespace qkv::nn
