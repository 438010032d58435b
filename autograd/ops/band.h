// The two products of windowed attention on the band, W = 2·window + 1 offsets per query: the ops
// behind nn::functional::banded_attention (use that; tensor/kernels/band.h has the equations).
#pragma once

#include <cstdint>

#include "tensor/tensor.h"

namespace qkv {

//   band_scores: q (B, H, T, d), k (B, H, T, d) → (B, H, T, W), scale · q_i·k_{i+o−window}
//   band_sum:    p (B, H, T, W), v (B, H, T, dv) → (B, H, T, dv), Σ_o p[i, o] · v_{i+o−window}
// Keys outside [0, T) contribute 0. Each is a kernel forward and a kernel backward, in which each
// query reads its W keys while they are in cache.
Tensor band_scores(const Tensor& q, const Tensor& k, int64_t window, float scale);
Tensor band_sum(const Tensor& p, const Tensor& v, int64_t window);

// Their composed references: the keys (values) padded with `window` zeros at both ends of T (cat),
// and for each offset o the slice starting at o (narrow), so that row i holds key i + o − window:
// band_scores stacks scale · Σ_d q·k_o over o, band_sum adds up p[..., o] · v_o. Each offset is a
// pass over all of q and k.
Tensor band_scores_reference(const Tensor& q, const Tensor& k, int64_t window, float scale);
Tensor band_sum_reference(const Tensor& p, const Tensor& v, int64_t window);

}  // namespace qkv
