// Softmax and log-softmax along one dim of a contiguous tensor viewed as (outer, n, inner), with
// their backward. Numerically stable: the row maximum m is subtracted before exponentiating,
//   softmax(x)_k = exp(x_k - m) / Σ_j exp(x_j - m),   log_softmax(x)_k = x_k - m - log Σ_j exp(x_j - m)
#pragma once

#include <cstdint>

namespace qkv::kernels {

//
// The fast kernels vectorize each row when the dim is the last one (inner == 1: attention weights,
// logits), with the branch-free exp of vecmath.h; along other dims they run the reference loops.
// Each row is computed by one thread in a fixed order, so results do not depend on the thread
// count; they differ from the reference by a few ulp (the order of the row sums, exp's rounding).

void softmax_forward(int64_t outer, int64_t n, int64_t inner, const float* x, float* y, bool log);

// Given y = softmax(x) (or log_softmax(x)) and dy = dL/dy, writes dx = dL/dx:
//   softmax:      dx_k = y_k · (dy_k - Σ_j dy_j y_j)
//   log_softmax:  dx_k = dy_k - exp(y_k) · Σ_j dy_j
void softmax_backward(int64_t outer, int64_t n, int64_t inner, const float* y, const float* dy,
                      float* dx, bool log);

// The same with plain loops and libm's exp, one element at a time: the specification the fast
// kernels are tested against.
void softmax_forward_reference(int64_t outer, int64_t n, int64_t inner, const float* x, float* y, bool log);
void softmax_backward_reference(int64_t outer, int64_t n, int64_t inner, const float* y, const float* dy,
                                float* dx, bool log);

}  // namespace qkv::kernels
