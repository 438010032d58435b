// GRU recurrences as fused ops (nn/gru.h has the equations; tensor/kernels/gru.h the gate math and
// its derivatives): the ops behind nn::GRUCell and nn::GRU. Gates are stacked r, z, n along the
// 3H dim, as in PyTorch.
#pragma once

#include "tensor/tensor.h"

namespace qkv {

// One step: gi = x·W_ihᵀ + b_ih (B, 3H), gh = h·W_hhᵀ + b_hh (B, 3H), h (B, H) → h' (B, H). The gate
// math in one node, where the reference takes about fifteen small ops.
Tensor gru_cell(const Tensor& gi, const Tensor& gh, const Tensor& h);

// gru_cell's composed reference: the gates cut out of gi and gh (narrow), their sums through
// sigmoid and tanh, and h' = (1 − z)·n + z·h, op by op.
Tensor gru_cell_reference(const Tensor& gi, const Tensor& gh, const Tensor& h);

// A whole sequence in one direction: gi (T, B, 3H) holds x_t·W_ihᵀ + b_ih for every step, h0 is
// (B, H), w_hh (3H, H), b_hh (3H) or undefined. Returns every hidden state (T, B, H): h_t at t.
// With reverse, steps run from t = T-1 down to 0 (the backward direction of a bidirectional GRU).
// The time loop is one node, with backpropagation through time written out in its backward.
Tensor gru_sequence(const Tensor& gi, const Tensor& h0, const Tensor& w_hh, const Tensor& b_hh, bool reverse = false);

// gru_sequence's composed reference: the unrolled loop, h_t = gru_cell_reference(gi[t],
// h_{t-1}·W_hhᵀ + b_hh, h_{t-1}), each step's ops recorded, and the states stacked. The engine's
// walk over the unrolled graph is backpropagation through time.
Tensor gru_sequence_reference(const Tensor& gi, const Tensor& h0, const Tensor& w_hh, const Tensor& b_hh,
                              bool reverse = false);

}  // namespace qkv
