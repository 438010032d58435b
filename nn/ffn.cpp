#include "nn/ffn.h"

#include "nn/registry.h"
#include "nn/swiglu.h"
#include "tensor/error.h"

namespace qkv::nn {

PositionWiseFFN::PositionWiseFFN(int64_t d_in, int64_t hidden, int64_t d_out, Activation act)
    : activation(act) {
  dense1 = register_module("dense1", std::make_shared<Linear>(d_in, hidden));
  dense2 = register_module("dense2", std::make_shared<Linear>(hidden, d_out));
}

Tensor PositionWiseFFN::forward(const Tensor& x) const {
  const Tensor h = dense1->forward(x);
  return dense2->forward(activation == Activation::GELU ? h.gelu() : h.relu());
}

std::string PositionWiseFFN::extra_repr() const { return activation == Activation::GELU ? "gelu" : "relu"; }

namespace {

Registry<FeedForwardFactory> builtin_ffns() {
  return Registry<FeedForwardFactory>("feed_forward", "FFN", {
      {"relu",
       [](int64_t d, int64_t f) { return std::make_shared<PositionWiseFFN>(d, f, d, Activation::ReLU); }},
      {"gelu",
       [](int64_t d, int64_t f) { return std::make_shared<PositionWiseFFN>(d, f, d, Activation::GELU); }},
      {"swiglu", [](int64_t d, int64_t f) { return std::make_shared<SwiGLU>(d, f); }},
  });
}

}  // namespace

Registry<FeedForwardFactory>& feed_forwards() {
  static Registry<FeedForwardFactory> ffns = builtin_ffns();
  return ffns;
}

bool register_feed_forward(const std::string& name, FeedForwardFactory factory) {
  return feed_forwards().add(name, std::move(factory));
}

FeedForwardFactory feed_forward(const std::string& name) { return feed_forwards().at(name); }

std::vector<std::string> feed_forward_names() { return feed_forwards().names(); }

}  // namespace qkv::nn
