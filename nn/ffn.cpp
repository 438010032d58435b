#include "nn/ffn.h"

namespace qkv::nn {

PositionWiseFFN::PositionWiseFFN(int64_t d_in, int64_t hidden, int64_t d_out) {
  dense1 = register_module("dense1", std::make_shared<Linear>(d_in, hidden));
  dense2 = register_module("dense2", std::make_shared<Linear>(hidden, d_out));
}

Tensor PositionWiseFFN::forward(const Tensor& x) const { return dense2->forward(dense1->forward(x).relu()); }

}  // namespace qkv::nn
