// One-dimensional convolution over channels-last sequences.
#pragma once

#include <cstdint>

#include "tensor/tensor.h"

namespace qkv::nn::functional {

// PyTorch's torch.nn.functional.conv1d (stride 1, zero padding, dilation; d2l §7.2 explains the
// cross-correlation) on sequences laid out channels-last, as qkv's sequence models hold them:
//   x: (N, L, C_in)  →  (N, L_out, C_out),  L_out = L + 2·padding − dilation·(K − 1)
//   weight: (C_out, C_in, K), PyTorch's layout; bias: (C_out) or undefined
//   out[n, t, o] = bias[o] + Σ_{c, j} weight[o, c, j] · x[n, t − padding + j·dilation, c]
// with x zero outside [0, L). PyTorch's conv1d takes (N, C_in, L) and gives (N, C_out, L_out): the
// same numbers, transposed.
//
// Computed as im2col: unfold1d lays each window out as a row of K·C_in values, and one product
// with the weight seen as (C_out, K·C_in) does the rest on the packed GEMM, forward and backward.
Tensor conv1d(const Tensor& x, const Tensor& weight, const Tensor& bias = Tensor(), int64_t padding = 0,
              int64_t dilation = 1);

// The weight (C_out, C_in, K) as the (C_out, K·C_in) matrix whose rows multiply unfold1d's rows (its
// columns ordered tap by tap, as unfold1d orders a window): conv1d is linear(unfold1d(x), this, bias).
Tensor conv1d_weight_matrix(const Tensor& weight);

}  // namespace qkv::nn::functional
