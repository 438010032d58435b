// im2col for a one-dimensional convolution of channels-last sequences: the op behind
// nn::functional::conv1d (nn/functional/conv.h), which turns the convolution into one matrix
// product.
#pragma once

#include <cstdint>

#include "tensor/tensor.h"

namespace qkv {

// x (N, L, C) → (N, L_out, K·C), row t holding the K taps x[t − padding + j·dilation] (zero outside
// the sequence) one after the other, L_out = L + 2·padding − dilation·(K − 1). A kernel forward and
// a kernel backward (tensor/kernels/unfold.h has the equation).
Tensor unfold1d(const Tensor& x, int64_t kernel_size, int64_t padding = 0, int64_t dilation = 1);

// unfold1d's composed reference: x padded with zeros along L (cat), and the K shifted windows of
// it (narrow) side by side (cat).
Tensor unfold1d_reference(const Tensor& x, int64_t kernel_size, int64_t padding = 0, int64_t dilation = 1);

}  // namespace qkv
