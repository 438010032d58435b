// Rotary position embedding (RoPE, Su et al. 2021) as one op: the op behind nn::RotaryEmbedding
// and the rotary position scheme (nn/rotary.h has the rotation and why), and beside it its
// composed reference, which the reference mode runs.
#pragma once

#include <cstdint>

#include "tensor/tensor.h"

namespace qkv {

// x (..., T, d) → (..., T, d), contiguous: every vector at index t of dim -2 turned by R(t), its pairs
// (x_{2i}, x_{2i+1}) rotated by the angle whose cosine and sine are cos[t, i] and sin[t, i];
// cos and sin (T, d/2), constants (no gradient reaches them). One kernel pass forward and one
// backward (dx = R(t)ᵀ·dy), reading a (B, H, T, d) view of a projection's heads through its
// strides; the same bits as rotary_reference.
Tensor rotary(const Tensor& x, const Tensor& cos, const Tensor& sin);

// rotary's composed reference: the pairs sliced apart, turned with products and differences, and
// stacked back together (interleaved again).
Tensor rotary_reference(const Tensor& x, const Tensor& cos, const Tensor& sin);

// The queries and keys of a packed self-attention projection turned, as fused_attention_packed
// reads it (autograd/ops/attention.h): qkv (B, T, 3·H·d), its column blocks Q, K and V, each
// (B, T, H·d) with head h in columns [h·d, (h+1)·d) → (B, T, 3·H·d) with Q and K turned as rotary
// turns each head (position t = the row within its sequence) and V as it was. Self-attention with
// rotary positions then keeps the packed route: one projection, one gradient for it.
Tensor rotary_packed(const Tensor& qkv, int64_t heads, const Tensor& cos, const Tensor& sin);

// rotary_packed's composed reference: the three blocks cut out, Q and K made heads and turned by
// rotary_reference, and the three put back side by side.
Tensor rotary_packed_reference(const Tensor& qkv, int64_t heads, const Tensor& cos, const Tensor& sin);

}  // namespace qkv
