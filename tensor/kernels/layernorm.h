// Layer normalization over the last dim, on plain float arrays (Ba, Kiros & Hinton 2016).
//
//   x, y, dy, dx are (N, D), contiguous: N rows (the product of the leading dims, e.g. B·T) of D
//   values; weight, bias, dweight, dbias are (D); mean and rstd are (N).
//
// Forward, for each row:
//   mean = Σ x / D,   var = Σ (x - mean)² / D   (biased, as PyTorch),   rstd = 1 / sqrt(var + eps)
//   x̂ = (x - mean) · rstd,   y = x̂ · weight + bias
// mean and rstd are written out for backward.
//
// Backward, with g = dL/dy and ĝ = g · weight (the gradient that reaches x̂):
//   dweight = Σ_rows g · x̂,    dbias = Σ_rows g
//   dx = rstd · (ĝ - mean(ĝ) - x̂ · mean(ĝ · x̂))           means over the D values of the row
// (x̂ depends on x directly, through mean and through rstd; the two subtracted terms are the last
// two paths: ∂mean/∂x = 1/D and ∂rstd/∂x = -rstd³ (x - mean) / D.)
//
// Rows are split across threads for y and dx. Backward makes dx and dweight, dbias in one pass
// over the rows: fixed chunks of rows sum their part of dweight and dbias, and the chunks' sums
// are added in chunk order, so results do not depend on the thread count.
// The reference these kernels are tested against is the same formula composed of tensor ops
// (tests/autograd/test_layer_norm.cpp).
#pragma once

#include <cstdint>

namespace qkv::kernels {

// weight and bias may be null (no affine transform).
void layernorm_forward(int64_t N, int64_t D, const float* x, const float* weight, const float* bias,
                       float eps, float* y, float* mean, float* rstd);

// weight may be null (taken as ones). Each of dx, dweight, dbias may be null: that gradient is
// not computed.
void layernorm_backward(int64_t N, int64_t D, const float* x, const float* weight, const float* mean,
                        const float* rstd, const float* dy, float* dx, float* dweight, float* dbias);

}  // namespace qkv::kernels
