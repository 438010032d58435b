// Softmax and log-softmax along one dim of a contiguous tensor viewed as (outer, n, inner), with
// their backward. Numerically stable: the row maximum m is subtracted before exponentiating,
//   softmax(x)_k = exp(x_k - m) / Σ_j exp(x_j - m),   log_softmax(x)_k = x_k - m - log Σ_j exp(x_j - m)
#pragma once

#include <cstdint>

namespace qkv::kernels {

// The fast kernels vectorize each row when the dim is the last one (inner == 1: attention weights,
// logits), with the branch-free exp of vecmath.h; along other dims, and along every dim in the
// reference mode (tensor/reference_mode.h), they run the reference loops below.
// Each row is computed by one thread in a fixed order, so results do not depend on the thread
// count; they differ from the reference by a few ulp (the order of the row sums, exp's rounding).

void softmax_forward(int64_t outer, int64_t n, int64_t inner, const float* x, float* y, bool log);

// Given y = softmax(x) (or log_softmax(x)) and dy = dL/dy, writes dx = dL/dx:
//   softmax:      dx_k = y_k · (dy_k - Σ_j dy_j y_j)
//   log_softmax:  dx_k = dy_k - exp(y_k) · Σ_j dy_j
void softmax_backward(int64_t outer, int64_t n, int64_t inner, const float* y, const float* dy,
                      float* dx, bool log);

// The same with plain loops and libm's exp, one element at a time: the specification the fast
// kernels are tested against, and what softmax_forward and softmax_backward run in the reference
// mode.
void softmax_forward_reference(int64_t outer, int64_t n, int64_t inner, const float* x, float* y, bool log);
void softmax_backward_reference(int64_t outer, int64_t n, int64_t inner, const float* y, const float* dy,
                                float* dx, bool log);

// The forward of masked_softmax (d2l 11.3.2.1): softmax over each row of x (rows, n) restricted
// to the row's first lens[r] positions (all n when lens is null) and, among those, to the
// positions where x is not -inf:
//   y_k = exp(x_k - m) / Σ_j exp(x_j - m)   over those positions, m their maximum
//   y_k = 0                                 everywhere else
// A row with no such position is all zeros (PyTorch's _safe_softmax, behind its
// scaled_dot_product_attention since 2.5), where the plain softmax of -inf logits gives NaN.
// A row whose taking-part positions hold a NaN or +inf is NaN throughout, as the plain softmax
// gives: NaN in, NaN out (a fully hidden row is a rule; a NaN score is a fault to be seen).
// y is exactly 0 at hidden positions, so the backward is softmax_backward's formula as it is:
// dx_k = y_k · (dy_k - Σ_j dy_j y_j) is 0 wherever y_k is.
void masked_softmax_forward(int64_t rows, int64_t n, const float* x, const int64_t* lens, float* y);

}  // namespace qkv::kernels
