#include "nn/gru.h"

#include <cmath>
#include <limits>

#include "autograd/ops/gru.h"
#include "nn/functional/basic.h"
#include "nn/init.h"
#include "tensor/error.h"
#include "tensor/factories.h"

namespace qkv::nn {
namespace {

// U(-1/√H, 1/√H), PyTorch's initialization of every RNN parameter.
Tensor rnn_parameter(const char* layer, const Shape& shape, int64_t hidden_size) {
  Tensor t = Tensor::empty(shape, layer);
  const float bound = 1.0f / std::sqrt(static_cast<float>(hidden_size));
  init::uniform_(t, -bound, bound);
  return t;
}

void check_sizes(const char* layer, int64_t input_size, int64_t hidden_size) {
  if (input_size <= 0 || hidden_size <= 0)
    throw ValueError(std::string(layer) + ": input_size and hidden_size must be positive, got " +
                     std::to_string(input_size) + " and " + std::to_string(hidden_size));
  // The three gates stack 3·H rows, which must not overflow before any allocation is asked.
  if (hidden_size > std::numeric_limits<int64_t>::max() / 3)
    throw ValueError(std::string(layer) + ": hidden_size " + std::to_string(hidden_size) +
                     " is too large: its three gates' 3 * hidden_size rows overflow 64 bits");
}

}  // namespace

// ---- GRUCell ---------------------------------------------------------------------------------

GRUCell::GRUCell(int64_t in, int64_t H, bool bias) : input_size(in), hidden_size(H) {
  check_sizes("GRUCell", in, H);
  weight_ih = register_parameter("weight_ih", rnn_parameter("GRUCell", {3 * H, in}, H));
  weight_hh = register_parameter("weight_hh", rnn_parameter("GRUCell", {3 * H, H}, H));
  if (bias) {
    bias_ih = register_parameter("bias_ih", rnn_parameter("GRUCell", {3 * H}, H));
    bias_hh = register_parameter("bias_hh", rnn_parameter("GRUCell", {3 * H}, H));
  }
}

Tensor GRUCell::forward(const Tensor& x, const Tensor& h) const {
  if (x.dim() != 2 || x.size(1) != input_size)
    throw ShapeError(where() + ": x has shape " + shape_str(x.shape()) + ", expected (B, " + std::to_string(input_size) + ")");
  const int64_t B = x.size(0);
  if (h.defined() && h.shape() != Shape{B, hidden_size})
    throw ShapeError(where() + ": h has shape " + shape_str(h.shape()) + ", expected " + shape_str({B, hidden_size}));
  const Tensor state = h.defined() ? h : zeros({B, hidden_size});
  // The two products, then the gate math in one fused node (autograd/ops/gru.h; its composed
  // reference is a dozen small ops).
  return gru_cell(functional::linear(x, weight_ih, bias_ih), functional::linear(state, weight_hh, bias_hh), state);
}

std::string GRUCell::extra_repr() const {
  return std::to_string(input_size) + ", " + std::to_string(hidden_size) + (bias_ih.defined() ? "" : ", bias=false");
}

// ---- GRU -------------------------------------------------------------------------------------

GRU::GRU(int64_t in, int64_t H, GRUOptions opts) : input_size(in), hidden_size(H), options(opts) {
  check_sizes("GRU", in, H);
  if (options.num_layers <= 0)
    throw ValueError("GRU: num_layers must be positive, got " + std::to_string(options.num_layers));
  if (!(options.dropout >= 0.0f && options.dropout < 1.0f))
    throw ValueError("GRU: dropout must be in [0, 1), got " + std::to_string(options.dropout));
  // Registered in PyTorch's order: layer by layer, forward before reverse, w_ih, w_hh, b_ih, b_hh.
  for (int64_t k = 0; k < options.num_layers; ++k) {
    const int64_t layer_in = k == 0 ? in : H * directions();
    for (int64_t d = 0; d < directions(); ++d) {
      const std::string suffix = "_l" + std::to_string(k) + (d == 1 ? "_reverse" : "");
      LayerWeights w;
      w.weight_ih = register_parameter("weight_ih" + suffix, rnn_parameter("GRU", {3 * H, layer_in}, H));
      w.weight_hh = register_parameter("weight_hh" + suffix, rnn_parameter("GRU", {3 * H, H}, H));
      if (options.bias) {
        w.bias_ih = register_parameter("bias_ih" + suffix, rnn_parameter("GRU", {3 * H}, H));
        w.bias_hh = register_parameter("bias_hh" + suffix, rnn_parameter("GRU", {3 * H}, H));
      }
      weights.push_back(w);
    }
  }
}

GRUOutput GRU::forward(const Tensor& x_in, const Tensor& h0) const {
  if (x_in.dim() != 3 || x_in.size(2) != input_size)
    throw ShapeError(where() + ": x has shape " + shape_str(x_in.shape()) + ", expected " +
                     (options.batch_first ? "(B, T, " : "(T, B, ") + std::to_string(input_size) + ")");
  // Work time-major: x is (T, B, in).
  const Tensor x = options.batch_first ? x_in.transpose(0, 1) : x_in;
  const int64_t T = x.size(0), B = x.size(1), H = hidden_size, L = options.num_layers, dirs = directions();
  if (T == 0) throw ShapeError(where() + ": the sequence is empty (x has shape " + shape_str(x_in.shape()) + ")");
  if (h0.defined() && h0.shape() != Shape{L * dirs, B, H})
    throw ShapeError(where() + ": h0 has shape " + shape_str(h0.shape()) + ", expected (num_layers·directions, B, H) = " +
                     shape_str({L * dirs, B, H}));

  Tensor layer_in = x;
  std::vector<Tensor> finals;  // h_n rows, layer-major
  for (int64_t k = 0; k < L; ++k) {
    std::vector<Tensor> outputs;
    for (int64_t d = 0; d < dirs; ++d) {
      const LayerWeights& w = weights[k * dirs + d];
      // The input projections of all T steps in one product: (T, B, in) → (T, B, 3H).
      const Tensor gi = functional::linear(layer_in, w.weight_ih, w.bias_ih);
      const Tensor start = h0.defined() ? h0.select(0, k * dirs + d) : zeros({B, H});
      const Tensor hs = gru_sequence(gi, start, w.weight_hh, w.bias_hh, /*reverse=*/d == 1);
      outputs.push_back(hs);
      finals.push_back(hs.select(0, d == 1 ? 0 : T - 1));
    }
    layer_in = dirs == 1 ? outputs[0] : cat(outputs, 2);
    if (k + 1 < L) layer_in = functional::dropout(layer_in, options.dropout, is_training());
  }
  Tensor output = options.batch_first ? layer_in.transpose(0, 1).contiguous() : layer_in;
  return {output, stack(finals, 0)};
}

std::string GRU::extra_repr() const {
  std::string s = std::to_string(input_size) + ", " + std::to_string(hidden_size);
  if (options.num_layers != 1) s += ", num_layers=" + std::to_string(options.num_layers);
  if (!options.bias) s += ", bias=false";
  if (options.batch_first) s += ", batch_first=true";
  if (options.dropout != 0.0f) s += ", dropout=" + std::to_string(options.dropout);
  if (options.bidirectional) s += ", bidirectional=true";
  return s;
}

}  // namespace qkv::nn
