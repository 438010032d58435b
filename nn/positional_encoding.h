// Sinusoidal positional encoding (Vaswani et al. 2017, section 3.5; d2l 10.6.3 / 11.6.3,
// `PositionalEncoding`). Self-attention alone is blind to order: permuting its input permutes its
// output. Adding a fixed, position-dependent vector to each token's representation breaks that:
//
//   P[i, 2j]   = sin(i / 10000^(2j/D))
//   P[i, 2j+1] = cos(i / 10000^(2j/D))        i a position in [0, max_len), j in [0, D/2)
//
// Column pair (2j, 2j+1) turns at frequency ω_j = 1/10000^(2j/D): high frequencies in the first
// columns, low ones in the last, like the bits of a binary counter. For any offset δ, P[i+δ] is a
// fixed rotation of P[i] (one 2×2 rotation by δ·ω_j per pair), independent of i: the table encodes
// relative positions too (d2l 10.6.3.2; tested in tests/nn/test_positional_encoding.cpp).
//
// PositionalEncoding(num_hiddens, dropout, max_len = 1000):
//   X: (B, T, D) with D = num_hiddens, T <= max_len  →  dropout(X + P[:T]): (B, T, D)
// P is a non-persistent buffer of shape (max_len, D), not in state_dict: it is recomputed, not
// trained (d2l keeps P as a plain attribute; its batch dim of 1 is left out here and broadcast).
// D must be even: d2l's code would fail on an odd width too (sin and cos columns differ in number).
#pragma once

#include <memory>

#include "nn/dropout.h"
#include "nn/module.h"

namespace qkv::nn {

// The table P above, (max_len, d), computed in float32 exactly as d2l does:
// X = arange(max_len)[:, None] / pow(base, arange(0, d, 2) / d), P[:, 0::2] = sin X, P[:, 1::2] = cos X.
// base = 10000 is the Transformer's; RotaryEmbedding (nn/rotary.h) takes its angles from the same
// table with a base of its own.
Tensor sinusoidal_table(int64_t max_len, int64_t d, float base = 10000.0f);

class PositionalEncoding : public Module {
 public:
  PositionalEncoding(int64_t num_hiddens, float dropout, int64_t max_len = 1000);
  // offset: X holds positions offset .. offset + T − 1 (decoding with a key/value cache).
  Tensor forward(const Tensor& X, int64_t offset = 0) const;
  std::string extra_repr() const override;

  int64_t num_hiddens, max_len;
  Tensor P;  // (max_len, num_hiddens)
  std::shared_ptr<Dropout> dropout;
};

}  // namespace qkv::nn
