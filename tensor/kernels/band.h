// The two products of windowed attention, computed on the band only (nn/functional/banded_attention.h
// has the layer's equations). Letters: N = B·H rows of heads, T positions, d the width of a query
// or key, dv of a value, w the window and W = 2w + 1 the offsets o, each standing for the key
// j = i + o − w of query i. Every array is contiguous, row-major.
//
// Each output element is written by one thread, which computes it in a fixed order: results do not
// depend on the thread count. In the backward, the gradient of key j gathers the contributions of
// the queries i = j − o + w that see it, instead of scattering into it from each query, so no two
// threads ever add to the same float (llm.c's rule for backward kernels).
#pragma once

#include <cstdint>

namespace qkv::kernels {

// q (N, T, d), k (N, T, d) → s (N, T, W):
//   s[n, i, o] = scale · q[n, i]·k[n, i + o − w]   where 0 <= i + o − w < T, else 0
void band_scores_forward(int64_t N, int64_t T, int64_t d, int64_t w, float scale, const float* q,
                         const float* k, float* s);
// In the forward this was s[n, i, o] = scale · q_i·k_j, so with g = dL/ds:
//   dq[n, i] = scale · Σ_o g[n, i, o] k_j,      dk[n, j] = scale · Σ_o g[n, j − o + w, o] q_{j − o + w}
// Either of dq and dk may be null (not needed).
void band_scores_backward(int64_t N, int64_t T, int64_t d, int64_t w, float scale, const float* q,
                          const float* k, const float* g, float* dq, float* dk);

// p (N, T, W), v (N, T, dv) → out (N, T, dv):
//   out[n, i] = Σ_o p[n, i, o] · v[n, i + o − w]      (terms with j outside [0, T) left out)
void band_sum_forward(int64_t N, int64_t T, int64_t dv, int64_t w, const float* p, const float* v,
                      float* out);
// In the forward this was out_i = Σ_o p[i, o] v_j, so with g = dL/dout:
//   dp[n, i, o] = g_i·v_j (0 outside the sequence),   dv[n, j] = Σ_o p[n, j − o + w, o] · g_{j − o + w}
// Either of dp and dv may be null.
void band_sum_backward(int64_t N, int64_t T, int64_t dv, int64_t w, const float* p, const float* v,
                       const float* g, float* dp, float* dvv);

}  // namespace qkv::kernels
