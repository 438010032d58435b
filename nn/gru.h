// Gated recurrent units (Cho et al. 2014; d2l 10.2), with PyTorch's exact equations and weight
// layout (torch.nn.GRUCell, torch.nn.GRU): the state_dict has PyTorch's names and shapes, so a
// PyTorch GRU's weights load with load_state_dict as they are (docs/pytorch.md).
//
// One step, from input x_t and previous state h (σ the logistic sigmoid, ⊙ elementwise):
//   r = σ(W_ir x_t + b_ir + W_hr h + b_hr)           reset gate
//   z = σ(W_iz x_t + b_iz + W_hz h + b_hz)           update gate
//   n = tanh(W_in x_t + b_in + r ⊙ (W_hn h + b_hn))  candidate state
//   h' = (1 - z) ⊙ n + z ⊙ h
// d2l's from-scratch GRU differs in the candidate state: it applies r before the matrix
// product, tanh(W_xh x_t + W_hh (r ⊙ h) + b_h), with one bias per gate. Its concise version uses
// nn.GRU, whose equations (above, as in cuDNN) apply r after it. qkv follows PyTorch.
//
// Parameters, gates stacked in the order r, z, n along the first dim (PyTorch's layout):
//   weight_ih (3H, in), weight_hh (3H, H), bias_ih (3H), bias_hh (3H)
// For GRU they are named weight_ih_l{k}, weight_hh_l{k}, bias_ih_l{k}, bias_hh_l{k} for layer k,
// plus the same with the suffix _reverse for the backward direction of a bidirectional GRU.
// Every parameter is initialized U(-1/√H, 1/√H), as in PyTorch.
//
// Differences from PyTorch: inputs must be batched (PyTorch also accepts unbatched x of shape
// (T, in) or (in)), and proj_size is not supported.
#pragma once

#include <vector>

#include "nn/module.h"

namespace qkv::nn {

// One step. x: (B, in), h: (B, H) (zeros if undefined)  →  h': (B, H)
class GRUCell : public Module {
 public:
  GRUCell(int64_t input_size, int64_t hidden_size, bool bias = true);
  Tensor forward(const Tensor& x, const Tensor& h = Tensor()) const;
  std::string extra_repr() const override;

  int64_t input_size, hidden_size;
  Tensor weight_ih, weight_hh, bias_ih, bias_hh;  // biases undefined when bias = false
};

struct GRUOptions {
  int64_t num_layers = 1;
  bool bias = true;
  bool batch_first = false;    // x and output are (B, T, ·) instead of (T, B, ·); h0 and h_n are not affected
  float dropout = 0.0f;        // on the output of every layer except the last, in training only
  bool bidirectional = false;  // a second GRU per layer reads the sequence from t = T-1 down to 0
};

struct GRUOutput {
  Tensor output;  // (T, B, dirs·H), or (B, T, dirs·H) with batch_first: the last layer's h_t for every t
  Tensor h_n;     // (L·dirs, B, H): each layer's and direction's final state
};

// A stack of L GRU layers over a whole sequence; dirs = 2 if bidirectional, else 1.
//   x: (T, B, in), or (B, T, in) with batch_first
//   h0: (L·dirs, B, H), the initial state of each layer and direction; zeros if undefined
// Layer k > 0 reads the output of layer k - 1 (with dropout between them in training). In a
// bidirectional layer, output concatenates the forward and backward states along the features,
// [h_t forward, h_t backward], and h_n orders its rows layer-major: l0 forward, l0 backward, l1
// forward, ... The backward direction's final state is its state at t = 0.
//
//   nn::GRU gru(32, 64, {.num_layers = 2, .dropout = 0.1f, .bidirectional = true});
//   auto [output, h_n] = gru.forward(x);   // x (T, B, 32): output (T, B, 128), h_n (4, B, 64)
//
// Each layer computes the input projections of all T steps with one matrix product, then runs its
// time loop as one fused node of the graph (gru_sequence, autograd/ops/gru.cpp).
class GRU : public Module {
 public:
  GRU(int64_t input_size, int64_t hidden_size, GRUOptions options = {});
  GRUOutput forward(const Tensor& x, const Tensor& h0 = Tensor()) const;
  std::string extra_repr() const override;
  int64_t directions() const { return options.bidirectional ? 2 : 1; }

  int64_t input_size, hidden_size;
  GRUOptions options;
  // The parameters of layer k in direction d (0 forward, 1 backward) are weights[k·dirs + d].
  struct LayerWeights {
    Tensor weight_ih, weight_hh, bias_ih, bias_hh;
  };
  std::vector<LayerWeights> weights;
};

}  // namespace qkv::nn
