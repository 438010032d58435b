// The fused losses behind nn::functional::cross_entropy and binary_cross_entropy_with_logits
// (nn/functional/loss.h documents their semantics; use those). Both are unreduced.
#pragma once

#include <cstdint>

#include "tensor/tensor.h"

namespace qkv {

// Per-row cross-entropy of logits (N, C) against targets (N), log-softmax and NLL in one node:
//   loss_n = (1-ε)·w[y_n]·(-log p_n[y_n]) + (ε/C)·Σ_c w[c]·(-log p_n[c]),  p_n = softmax(logits_n)
// and 0 where y_n == ignore_index; w = 1 when `weight` (C) is undefined; ε is label_smoothing.
// The weight is a constant: it receives no gradient (as in PyTorch). Backward needs only the
// logits and one log-sum-exp per row, and is the closed form "probabilities minus targets".
Tensor softmax_cross_entropy(const Tensor& logits, const IndexTensor& target, const Tensor& weight,
                             int64_t ignore_index, float label_smoothing);

// softmax_cross_entropy's composed reference: log_softmax, the target's log-probability picked by
// gather and weighted, the smoothing term summed over the classes, and ignored rows set to 0
// (masked_fill); the (N, C) log-probabilities are kept for backward.
Tensor softmax_cross_entropy_reference(const Tensor& logits, const IndexTensor& target, const Tensor& weight,
                                       int64_t ignore_index, float label_smoothing);

// Elementwise -[pw·y·log σ(x) + (1-y)·log(1-σ(x))] for x and y of one shape; pw (pos_weight)
// broadcasts to it, or is undefined (1). One elementwise pass each way.
Tensor sigmoid_cross_entropy(const Tensor& x, const Tensor& y, const Tensor& pos_weight);

// sigmoid_cross_entropy's composed reference: (1-y)·x + (1 + (pw-1)·y)·softplus(-x), op by op,
// with softplus(-x) = -log σ(x) taken as a log-softmax over (x, 0).
Tensor sigmoid_cross_entropy_reference(const Tensor& x, const Tensor& y, const Tensor& pos_weight);

}  // namespace qkv
