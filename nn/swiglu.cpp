#include "nn/swiglu.h"

namespace qkv::nn {

SwiGLU::SwiGLU(int64_t d, int64_t hidden) : FeedForward("SwiGLU") {
  gate = register_module("gate", std::make_shared<Linear>(d, hidden, /*bias=*/false));
  up = register_module("up", std::make_shared<Linear>(d, hidden, /*bias=*/false));
  down = register_module("down", std::make_shared<Linear>(hidden, d, /*bias=*/false));
}

Tensor SwiGLU::forward(const Tensor& x) const {
  const Tensor a = gate->forward(x);
  return down->forward(a * a.sigmoid() * up->forward(x));
}

}  // namespace qkv::nn
