// Softmax and log-softmax along one dim of a contiguous tensor viewed as (outer, n, inner), with
// their backward. Numerically stable: the row maximum m is subtracted before exponentiating,
//   softmax(x)_k = exp(x_k - m) / Σ_j exp(x_j - m),   log_softmax(x)_k = x_k - m - log Σ_j exp(x_j - m)
#pragma once

#include <cstdint>

namespace qkv::kernels {

void softmax_forward(int64_t outer, int64_t n, int64_t inner, const float* x, float* y, bool log);

// Given y = softmax(x) (or log_softmax(x)) and dy = dL/dy, writes dx = dL/dx:
//   softmax:      dx_k = y_k · (dy_k - Σ_j dy_j y_j)
//   log_softmax:  dx_k = dy_k - exp(y_k) · Σ_j dy_j
void softmax_backward(int64_t outer, int64_t n, int64_t inner, const float* y, const float* dy,
                      float* dx, bool log);

}  // namespace qkv::kernels
