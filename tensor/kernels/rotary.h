// Rotary position embedding (RoPE, Su et al. 2021, "RoFormer", section 3.4) on rows of head
// vectors, in one pass: nn/rotary.h has the rotation and why; qkv::rotary_reference
// (autograd/ops/rotary.h), composed of slices, products and a stack, is the plain form this kernel
// is tested against. Nothing here knows about Tensor or autograd.
#pragma once

#include <cstdint>

namespace qkv::kernels {

// (B, H, T) rows of d floats: element i of row (b, h, t) at data[b·batch + h·head + t·row + i].
struct RotaryRows {
  int64_t batch, head, row;
};

// y(b, h, t) = R(t)·x(b, h, t) for every row: for each pair i < d/2, with c = cos[t·d/2 + i] and
// s = sin[t·d/2 + i],
//   y_{2i}   = x_{2i}·c − x_{2i+1}·s
//   y_{2i+1} = x_{2i}·s + x_{2i+1}·c
// and with `inverse` R(t)ᵀ = R(t)⁻¹ (s negated): backward's dx = R(t)ᵀ·dy. Each product is rounded
// before the sum, as the composed form computes it, so the two agree to the bit. x and y may be
// the same memory with the same layout (in place).
void rotary(int64_t B, int64_t H, int64_t T, int64_t d, const float* x, RotaryRows x_at, const float* cos,
            const float* sin, bool inverse, float* y, RotaryRows y_at);

}  // namespace qkv::kernels
