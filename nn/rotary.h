// Rotary position embedding, RoPE (Su et al. 2021, "RoFormer", section 3.4). Instead of adding a
// position vector to the tokens, it rotates each query and key by an angle proportional to its
// position, after their projections, so that the attention score of a query at m and a key at n
// depends on the offset m − n only:
//
//   for each pair (x_{2i}, x_{2i+1}) of a head's vector x at position m, i in [0, d/2):
//     y_{2i}   = x_{2i} cos(mθ_i) − x_{2i+1} sin(mθ_i)
//     y_{2i+1} = x_{2i} sin(mθ_i) + x_{2i+1} cos(mθ_i)        θ_i = base^(−2i/d)
//
// y = R(m)·x with R(m) block-diagonal, one 2×2 rotation per pair; so R(m)ᵀR(n) = R(n − m) and
//   ⟨R(m)q, R(n)k⟩ = ⟨q, R(n − m)k⟩,
// a function of n − m. Rotations keep norms, and position 0 is the identity. The angles mθ_i are
// those of the sinusoidal encoding (nn/positional_encoding.h, which computes them):
// sinusoidal_table(max_len, d, base) holds sin(mθ_i) in column 2i and cos(mθ_i) in column 2i+1.
//
// Pairing. This is the paper's convention: pairs of adjacent features (2i, 2i+1), the same as the
// complex-number form of Meta's LLaMA reference code. GPT-NeoX and Hugging Face's LLaMA pair
// feature i with i + d/2 instead ("rotate_half"): the same rotations of a permuted vector, so a
// checkpoint trained one way needs its W_q and W_k rows permuted to work the other way.
//
// RotaryEmbedding(head_dim, max_len = 2048, base = 10000):
//   forward(x, offset = 0):  x (..., T, d) with d = head_dim → (..., T, d), the vector at index t of
//                            dim -2 rotated for position offset + t; needs offset + T <= max_len.
//   forward(x, positions):   positions (T) in [0, max_len): the vector at t rotated for positions[t].
// Apply it to the per-head queries and keys, (B, H, T, d) or d2l's (B·H, T, d), before their dot
// products; never to the values. The offset serves decoding with a key cache: the new query and key
// of step s sit at position s, and a key is cached already rotated.
//   forward_packed(qkv, heads): self-attention's packed projection (B, T, 3·H·d), Q, K and V its
//                            column blocks, with Q and K turned for positions 0 .. T − 1 and V as it
//                            was (qkv::rotary_packed): the layer then stays on its packed route.
// The tables cos and sin, (max_len, d/2), are non-persistent buffers: recomputed, not trained.
// The rotation is one op, qkv::rotary (autograd/ops/rotary.h): one kernel pass forward and one
// backward. Its composed reference, slices, products and a stack (whose gradient needs no code of
// its own), is what the reference mode runs; composed, with the separate projections it needed, it
// took a seventh of a character GPT's training step.
#pragma once

#include "nn/module.h"

namespace qkv::nn {

class RotaryEmbedding : public Module {
 public:
  explicit RotaryEmbedding(int64_t head_dim, int64_t max_len = 2048, float base = 10000.0f);
  Tensor forward(const Tensor& x, int64_t offset = 0) const;
  Tensor forward(const Tensor& x, const IndexTensor& positions) const;
  Tensor forward_packed(const Tensor& qkv, int64_t heads) const;
  std::string extra_repr() const override;

  int64_t head_dim, max_len;
  float base;
  Tensor cos, sin;  // (max_len, head_dim/2): cos(mθ_i) and sin(mθ_i) at row m, column i
};

}  // namespace qkv::nn
